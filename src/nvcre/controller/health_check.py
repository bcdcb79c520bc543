"""Node health while a workload runs, through the detectors of ``nvcre.health``.

A compiled monitor is kept per detector set (they are few: the defaults plus each
distinct user expression), in the controller context's bounded memo, so its per-Node
verdict cache carries across passes and an unchanged Node is not evaluated again.
Each monitor has a lock of its own: Jobs with different detector sets never wait on
one another.
"""

from __future__ import annotations

import threading

from nvcre.health.detectors import NodeHealthMonitor, describe_errors, detectors_for_job, failed_node_entries
from nvcre.objpath import dig

_lock = threading.Lock()  # only guards creating a monitor in a memo


class _Guarded:
    def __init__(self, monitor: NodeHealthMonitor) -> None:
        self.monitor = monitor
        self.lock = threading.Lock()  # the monitor's cache is not thread-safe


class _Memo:
    """The default memo (no controller context): unbounded is fine for a handful of keys."""

    def __init__(self) -> None:
        self.items: dict = {}

    def get(self, key, default=None):
        return self.items.get(key, default)

    def put(self, key, value) -> None:
        self.items[key] = value


_DEFAULT = _Memo()


def monitor_for(job_spec: dict, *, include_cordoned: bool = False, memo=None) -> _Guarded:
    expression = dig(job_spec, "nodeHealthMonitor", "cel", "expression")
    key = (expression, include_cordoned)
    memo = memo if memo is not None else _DEFAULT
    with _lock:
        found = memo.get(key)
        if found is None:
            found = _Guarded(NodeHealthMonitor(detectors_for_job(expression, include_unschedulable=include_cordoned)))
            memo.put(key, found)
        return found


def check_nodes(job_spec: dict, nodes: list[dict], *, include_cordoned: bool = False,
                memo=None) -> tuple[dict[str, str], str | None]:
    """(node name -> message for every node a detector fired on, a line describing the
    detectors that could not be evaluated on some node or None)."""
    guarded = monitor_for(job_spec, include_cordoned=include_cordoned, memo=memo)
    with guarded.lock:
        findings = guarded.monitor.evaluate(nodes)
        errors = list(guarded.monitor.errors)
    return {e["name"]: e["message"] for e in failed_node_entries(findings)}, describe_errors(errors)


def unhealthy_nodes(job_spec: dict, nodes: list[dict], *, include_cordoned: bool = False, memo=None) -> dict[str, str]:
    """node name -> message for every node a detector fired on."""
    return check_nodes(job_spec, nodes, include_cordoned=include_cordoned, memo=memo)[0]
