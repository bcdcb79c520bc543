"""Node health while a workload runs, through the detectors of ``nvcre.health``.

A compiled monitor is kept per detector set (they are few: the defaults plus each
distinct user expression), so its per-Node verdict cache carries across passes and
an unchanged Node is not evaluated again.
"""

from __future__ import annotations

import threading

from nvcre.health.detectors import NodeHealthMonitor, detectors_for_job, failed_node_entries

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


def unhealthy_nodes(job_spec: dict, nodes: list[dict], *, include_cordoned: bool = False) -> dict[str, str]:
    """node name -> message for every node a detector fired on."""
    monitor = monitor_for(job_spec, include_cordoned=include_cordoned)
    findings = monitor.evaluate(nodes)  # no lock: the monitor's caches are safe to share
    return {e["name"]: e["message"] for e in failed_node_entries(findings)}
