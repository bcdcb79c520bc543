"""Evidence beside each failed node: the measured number with its unit against the bar
and where the bar was set, the median of the node's peers, the Job and pod the number
came from, a log tail from the node's own pod, and a next step for the kind of fault.

Pure: it reads only the category already projected from the statuses. Advice, never a
verdict: the verdict is the controller's ``failedNodes``.
"""

from __future__ import annotations

import re
import statistics

from nvcre.report.model import CategoryReport, FailedNode, FailureLog, GroupResult, NodeEvidence
from nvcre.objpath import dig

# A captured tail that long was cut by characters (the Workflow keeps 512), so its
# first line is likely a fragment: it is dropped, the rest are whole lines.
CUT_TAIL_CHARS = 500
TAIL_LINES = 8

UNITS = {"busBandwidthGBps": "GB/s", "algBandwidthGBps": "GB/s", "goodputRatio": "", "avgTFLOPsPerGPU": "TFLOPs",
         "avgStepTimeSec": "s"}
_MEASURED = re.compile(r'Threshold "(?P<key>[^"]+)" violated: measured (?P<value>-?[0-9.]+)(?:, expression: (?P<expr>.+))?')


def with_units(text: str) -> str:
    """A threshold message with the measured number in its unit ("measured 412.30 GB/s"):
    the condition keeps the reference's words ("measured 412.3000"), a reader needs the unit."""
    def unit(m: re.Match) -> str:
        key, value = m.group("key"), float(m.group("value"))
        if key not in UNITS:
            return m.group(0)
        shown = fmt_number(value, UNITS[key]) if UNITS[key] else f"{value:g}"
        return m.group(0).replace(f"measured {m.group('value')}", f"measured {shown}", 1)

    return _MEASURED.sub(unit, text)


def threshold_sources(category_options: dict, spec: dict, thresholds: dict) -> dict[str, str]:
    """Where each threshold was set: the category's options, the spec, or the catalog."""
    own = dig(category_options, "thresholds") or {}
    top = dig(spec, "thresholds") or {}
    out = {}
    for key in thresholds:
        if key in own:
            out[key] = "the category's options.thresholds"
        elif key in top:
            out[key] = "spec.thresholds"
        else:
            out[key] = "the catalog's default"
    return out


def log_lines(tail: str | None, keep: int = TAIL_LINES) -> list[str]:
    """The informative end of a log, whole lines only: a fragment the capture cut is
    dropped, as are separator rules and blank lines."""
    if not tail:
        return []
    lines = tail.splitlines()
    if len(tail) >= CUT_TAIL_CHARS and len(lines) > 1 and not tail.startswith("\n"):
        lines = lines[1:]
    lines = [line.rstrip() for line in lines if line.strip() and line.strip().strip("-=*#_~ ")]
    return lines[-keep:]


def fmt_number(value: float, unit: str) -> str:
    """Sensible precision: bandwidth in hundredths, ratios as percent, the rest 3 digits."""
    if unit == "GB/s":
        return f"{value:.2f} GB/s"
    if unit == "":
        return f"{value * 100:.1f}%" if 0 <= value <= 1 else f"{value:.3g}"
    return f"{value:.3g} {unit}".strip()


def _groups_of(node: str, category: CategoryReport) -> list[GroupResult]:
    return [g for g in category.groups if node in g.nodes]


def _peers(node: str, category: CategoryReport) -> list[float]:
    """Peak bus bandwidth of the groups the node was not in, complete measurements only:
    a group that crashed (a node failed it for a reason other than the bar) measured
    only part of its sweep."""
    crashed = {g.name for g in category.groups
               if any(n.reason != "ThresholdViolation" and n.name in g.nodes for n in category.failed_nodes)}
    return [g.bus_bw_gbps for g in category.groups
            if node not in g.nodes and g.bus_bw_gbps is not None and not g.provisional and g.name not in crashed]


def _log_of(category: CategoryReport, node: str, group: str | None) -> FailureLog | None:
    for fg in category.failed_groups:
        if fg.failure_log and (fg.name == group or node in fg.nodes):
            return fg.failure_log
    return None


def _own_pod_log(node: str, groups: list[GroupResult], pod_logs: dict[str, list[FailureLog]]) -> FailureLog | None:
    """The node's own pod among those its group's Job recorded (``podLogs``), a rank pod
    before the launcher: the launcher's log is already the group's failure log."""
    mine = [log for g in groups for log in pod_logs.get(g.job_name or "", []) if log.node_name == node]
    mine.sort(key=lambda log: "launcher" in log.pod_name)
    return mine[0] if mine else None


def node_evidence(n: FailedNode, category: CategoryReport, namespace: str,
                  pod_logs: dict[str, list[FailureLog]] | None = None) -> NodeEvidence:
    ev = NodeEvidence()
    groups = _groups_of(n.name, category)
    group = next((g for g in groups if g.name == n.group), None) or (groups[0] if groups else None)
    if group is not None:
        ev.group, ev.job = group.name, group.job_name
        groups = [group] + [g for g in groups if g is not group]
    key = "busBandwidthGBps" if category.bus_bw_minimum_gbps is not None else None
    m = _MEASURED.search(n.message or "") or _MEASURED.search(category.failure_reason or "")
    if n.reason == "ThresholdViolation":
        if m:
            key = m.group("key")
        unit = UNITS.get(key or "", "")
        value = None
        if key == "busBandwidthGBps" and group is not None and group.bus_bw_gbps is not None:
            value = min((g.bus_bw_gbps for g in groups if g.bus_bw_gbps is not None), default=group.bus_bw_gbps)
        elif m:
            value = float(m.group("value"))
        if value is not None:
            ev.metric, ev.unit, ev.measured_value, ev.measured = key, unit, value, fmt_number(value, unit)
        if key and key in category.thresholds:
            ev.bar = category.thresholds[key]
            ev.bar_source = category.threshold_sources.get(key)
        if key == "busBandwidthGBps":
            peers = _peers(n.name, category)
            if peers:
                med = statistics.median(peers)
                ev.peer_median_value, ev.peer_median, ev.peers = med, fmt_number(med, "GB/s"), len(peers)
    own = _own_pod_log(n.name, groups, pod_logs or {})
    log = _log_of(category, n.name, ev.group)
    if own is not None and (log is None or log.node_name != n.name or not log.tail):
        ev.pod, ev.node = own.pod_name, own.node_name
        ev.log_tail = log_lines(own.tail)
    elif log is not None:
        if log.node_name == n.name:
            ev.pod, ev.node = log.pod_name, log.node_name
            ev.log_tail = log_lines(log.tail)
        else:
            ev.log_note = (f"the captured log is from pod {log.pod_name} on {log.node_name or 'another node'}, "
                           f"not from this node: kubectl logs -n {namespace} -l nvcre.nvidia.com/job={ev.job or ''} "
                           f"--field-selector spec.nodeName={n.name}" if ev.job else
                           f"the captured log is from pod {log.pod_name} on {log.node_name or 'another node'}")
    ev.kind, ev.next_step = next_step(n, category, namespace)
    return ev


def next_step(n: FailedNode, category: CategoryReport, namespace: str) -> tuple[str, str]:
    """(kind, what to do) for one failed node, by its reason and what the run found."""
    d = category.diagnose
    msg = (n.message or "").lower()
    if d and d.suspect_domains and category.isolation is None and n.name not in d.suspect_nodes:
        racks = ", ".join(d.suspect_domains)
        return "rack", f"the whole rack {racks} is slow: check its leaf switch and uplinks before single nodes"
    if "link " in msg and "<->" in msg or (d and any(n.name in pair for pair in d.suspect_links)):
        return "link", (f"the path between two nodes is at fault, not either node alone: check the cable and switch "
                        f"ports of {n.name} toward its partner named above (ibstat, port error counters)")
    if n.reason == "HardwareFailureDetected":
        return "gpu", (f"cordon it (kubectl cordon {n.name}), then kubectl describe node {n.name} for the failing "
                       "condition; check nvidia-smi -q and the kernel log for XID errors; reseat or replace the GPU")
    if n.reason == "ThresholdViolation":
        if category.bus_bw_minimum_gbps is not None or category.domain == "communication":
            return "nic", (f"check {n.name}'s NICs: link rate and errors (ibstat, ethtool -S), the cable and switch "
                           "port; then rerun the category on it with testScale: diagnose to confirm")
        return "gpu", (f"check {n.name}'s GPU clocks, power and thermals (nvidia-smi -q -d CLOCK,POWER,TEMPERATURE); "
                       "a slow rank slows the whole job")
    if category.status_detail:
        return "scheduling", (f"pods cannot be scheduled: kubectl get pods -n {namespace} -o wide and the nodes' "
                              "free nvidia.com/gpu")
    job = next((g.job_name for g in category.groups if g.name == n.group and g.job_name), None) or next(
        (g.job_name for g in _groups_of(n.name, category) if g.job_name), None)
    if not job:
        return "workload", (f"find the workload's pod on the node (kubectl get pods -n {namespace} -o wide "
                            f"--field-selector spec.nodeName={n.name}) and read its log: kubectl logs --all-containers")
    return "workload", (f"read the workload's own log on the node: kubectl logs -n {namespace} -l nvcre.nvidia.com/job={job} "
                        f"--field-selector spec.nodeName={n.name} --all-containers --tail 200")


def attach_evidence(category: CategoryReport, namespace: str, pod_logs: dict[str, list[FailureLog]] | None = None) -> None:
    """Evidence beside each failed node; ``pod_logs``: the pods each Job recorded, by Job name."""
    for n in category.failed_nodes:
        n.evidence = node_evidence(n, category, namespace, pod_logs)
