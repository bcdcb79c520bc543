"""Node health while a workload runs, through the detectors of ``nvcre.health``.

A compiled monitor is kept per detector set (they are few: the defaults plus each
distinct user expression), so its per-Node verdict cache carries across passes and
an unchanged Node is not evaluated again.
"""

from __future__ import annotations

import threading

from nvcre.health.detectors import NodeHealthMonitor, describe_errors, detectors_for_job, failed_node_entries

_lock = threading.Lock()
_monitors: dict[tuple[str | None, bool], NodeHealthMonitor] = {}


def monitor_for(job_spec: dict, *, include_cordoned: bool = False) -> NodeHealthMonitor:
    expression = ((job_spec.get("nodeHealthMonitor") or {}).get("cel") or {}).get("expression")
    key = (expression, include_cordoned)
    with _lock:
        found = _monitors.get(key)
        if found is None:
            found = NodeHealthMonitor(detectors_for_job(expression, include_unschedulable=include_cordoned))
            _monitors[key] = found
        return found


def check_nodes(job_spec: dict, nodes: list[dict], *, include_cordoned: bool = False) -> tuple[dict[str, str], str | None]:
    """(node name -> message for every node a detector fired on, a line describing the
    detectors that could not be evaluated on some node or None)."""
    monitor = monitor_for(job_spec, include_cordoned=include_cordoned)
    with _lock:  # the monitor's cache is not thread-safe
        findings = monitor.evaluate(nodes)
        errors = list(monitor.errors)
    return {e["name"]: e["message"] for e in failed_node_entries(findings)}, describe_errors(errors)


def unhealthy_nodes(job_spec: dict, nodes: list[dict], *, include_cordoned: bool = False) -> dict[str, str]:
    """node name -> message for every node a detector fired on."""
    return check_nodes(job_spec, nodes, include_cordoned=include_cordoned)[0]
