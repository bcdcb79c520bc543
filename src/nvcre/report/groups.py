"""The node groups of a category and their bandwidth: per message size and per group,
with transport and LOW flags, and the category's table across groups.
"""

from __future__ import annotations

from nvcre.report.format import gbps_text, human_size, to_float
from nvcre.report.model import BandwidthRow, GroupResult
from nvcre.report.sources import (
    LABEL_GROUP,
    ANNOTATION_GROUP_NODES,
    true_condition,
    job_phase,
    first_key,
    transport_list,
)
from nvcre.objpath import dig


def group_result(
    g: dict, jobs_by_name: dict, jobs: list[dict], bms: list[dict], node_domains: dict, bus_min: float | None
) -> GroupResult:
    job_name = dig(g.get("jobRef"), "name")
    job = jobs_by_name.get(job_name) if job_name else None
    if job is None:
        job = next((j for j in jobs if dig(j.get("metadata"), "labels", LABEL_GROUP) == g.get("name")), None)
        job_name = (dig(job, "metadata", "name") or job_name)
    # Unpinned groups name no nodes up front; the Job records where its pods ran
    nodes = list(g.get("nodes") or []) or list(dig(job, "status", "nodesRan") or [])
    domains = g.get("domains") or []
    group = GroupResult(
        name=g.get("name", ""),
        nodes=nodes,
        domain=(domains[0] if len(domains) == 1 else None) or common_domain(nodes, node_domains),
        phase=g.get("phase") or job_phase(job) or "Pending",
        job_name=job_name,
    )
    attach_bandwidth(group, job, bms, bus_min, recorded=g)
    return group


def group_jobs_without_status(
    groups: list[GroupResult], jobs: list[dict], bms: list[dict], node_domains: dict, bus_min: float | None
) -> None:
    """A Workflow status that lists no groups (yet) still has Jobs worth reporting."""
    if groups:
        return
    for job in jobs:
        meta = job.get("metadata") or {}
        nodes = list(dig(job.get("spec"), "nodes") or []) or [n for n in (dig(meta.get("annotations"), ANNOTATION_GROUP_NODES) or "").split(",") if n]
        group = GroupResult(
            name=dig(meta.get("labels"), LABEL_GROUP) or meta.get("name", ""),
            nodes=nodes,
            domain=common_domain(nodes, node_domains),
            phase=job_phase(job) or "Pending",
            job_name=meta.get("name"),
        )
        attach_bandwidth(group, job, bms, bus_min)
        groups.append(group)


def common_domain(nodes: list[str], node_domains: dict[str, str]) -> str | None:
    found = {node_domains[n] for n in nodes if n in node_domains}
    return found.pop() if len(found) == 1 else None


def attach_bandwidth(
    group: GroupResult, job: dict | None, bms: list[dict], bus_min: float | None, recorded: dict | None = None
) -> None:
    """Fill a group's per-size bandwidth and transport: from the Workflow's group record
    (it outlives the Job), else the Job, else its BandwidthMeasurement."""
    source = None
    if recorded and recorded.get("bandwidth"):
        source = (list(recorded["bandwidth"]), transport_list(recorded.get("transport")), bool(recorded.get("provisional")))
    source = source or bandwidth_source(job, bms)
    if source is None:
        return
    results, transport, provisional = source
    rows = []
    for r in results:
        size = int(to_float(r.get("sizeBytes", r.get("size"))) or 0)
        alg_raw = first_key(r, "algBW", "algBwGBps", "algBWGBps")
        bus_raw = first_key(r, "busBW", "busBwGBps", "busBWGBps")
        alg, bus = to_float(alg_raw), to_float(bus_raw)
        if alg is None or bus is None:
            continue
        rows.append(_row(size, alg_raw, bus_raw, alg, bus, int(r.get("samples") or 0), provisional))
    rows.sort(key=lambda r: r.size_bytes)
    group.bandwidth = rows
    group.transport = transport
    group.provisional = provisional and bool(rows)
    if rows:
        peak = max(rows, key=lambda r: r.bus_bw_gbps)
        group.bus_bw, group.bus_bw_gbps = peak.bus_bw, peak.bus_bw_gbps
        if bus_min is not None and peak.bus_bw_gbps < bus_min:
            group.below_min = True
        if bus_min is not None:
            mark_low(rows, bus_min)


def mark_low(rows: list[BandwidthRow], bus_min: float) -> None:
    """LOW on every headline row (1 MB and up) under the bar; below 1 MB latency rules
    and every row would be LOW, which says nothing."""
    from nvcre.report.format import HEADLINE_MIN_BYTES

    for row in rows:
        row.low = row.size_bytes >= HEADLINE_MIN_BYTES and row.bus_bw_gbps < bus_min


def _row(size: int, alg_shown, bus_shown, alg: float, bus: float, samples: int, provisional: bool) -> BandwidthRow:
    """One table row: ``*_shown`` (a measured text or a number) become the GB/s texts,
    ``alg`` / ``bus`` the numbers that plots and LOW flags use."""
    return BandwidthRow(
        size=human_size(size),
        size_bytes=size,
        alg_bw=gbps_text(alg_shown) or "",
        bus_bw=gbps_text(bus_shown) or "",
        alg_bw_gbps=alg,
        bus_bw_gbps=bus,
        samples=samples,
        provisional=provisional,
    )


def bandwidth_source(job: dict | None, bms: list[dict]) -> tuple[list[dict], list[str], bool] | None:
    if job:
        jstatus = job.get("status") or {}
        m = jstatus.get("measurements") or {}
        if m.get("bandwidth"):
            return list(m["bandwidth"]), transport_list(m.get("transport")), bool(m.get("provisional"))
        bw = jstatus.get("bandwidth")
        if isinstance(bw, dict) and (bw.get("results") or bw.get("transport")):
            return list(bw.get("results") or []), transport_list(bw.get("transport")), bool(bw.get("provisional"))
        if isinstance(bw, list) and bw:
            return list(bw), transport_list(jstatus.get("transport")), False
    job_name = dig(job, "metadata", "name")
    for bm in bms:
        ref = dig(bm.get("spec"), "jobRef", "name")
        if job_name and ref == job_name:
            st = bm.get("status") or {}
            complete = true_condition(st.get("conditions") or [], "Complete")
            provisional = not complete or complete.get("reason") not in ("JobSucceeded", None, "")
            return list(st.get("results") or st.get("bandwidth") or []), transport_list(st.get("transport")), provisional
    return None


def aggregate_bandwidth(groups: list[GroupResult], bus_min: float | None) -> list[BandwidthRow]:
    """The category's table: one group as measured; several averaged per size, weighted
    by samples, but only when they sit on the same side of the bar. When some groups
    are below it, the table is the worst group's: a mean of good and bad groups is a
    number no group measured (every group's own table is in ``groups[].bandwidth``)."""
    measured = [g for g in groups if g.bandwidth and not g.provisional] or [g for g in groups if g.bandwidth]
    if not measured:
        return []
    if bus_min is not None and any(g.below_min for g in measured) and not all(g.below_min for g in measured):
        worst = min(measured, key=lambda g: g.bus_bw_gbps if g.bus_bw_gbps is not None else float("inf"))
        return [row.model_copy() for row in worst.bandwidth]
    if len(measured) == 1:
        return [row.model_copy() for row in measured[0].bandwidth]
    by_size: dict[int, list[BandwidthRow]] = {}
    for g in measured:
        for row in g.bandwidth:
            by_size.setdefault(row.size_bytes, []).append(row)
    rows = []
    for size, items in sorted(by_size.items()):
        weights = [max(r.samples, 1) for r in items]
        total = sum(weights)
        alg = sum(r.alg_bw_gbps * w for r, w in zip(items, weights)) / total
        bus = sum(r.bus_bw_gbps * w for r, w in zip(items, weights)) / total
        rows.append(_row(size, alg, bus, round(alg, 2), round(bus, 2), sum(r.samples for r in items),
                         any(r.provisional for r in items)))
    if bus_min is not None and rows:
        mark_low(rows, bus_min)
    return rows
