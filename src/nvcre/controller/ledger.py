"""Write the node readiness ledger as each Certification Workflow ends.

Gather (the ended Workflow, its Jobs from the watch cache, one LIST of the Nodes for
driver/CUDA labels), decide (``node_results``: pure, per node; ``nvcre.judge.ledger.update``
per record) and write (one NodeReadiness per node in the controller's namespace; create
if absent, else a status write). The Workflow then records ``orchestration.ledger`` and
any ``regressions`` (with Events), which is what lets its Certification move on, so a
report never misses a Regression found for it. Nodes themselves are never modified.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor

from nvcre.controller import conditions as c
from nvcre.controller import isolation
from nvcre.controller import labels as L
from nvcre.controller.context import Context
from nvcre.controller.judging import judging_of
from nvcre.judge import ledger as J
from nvcre.kube.resources import NVCRE_API_VERSION

log = logging.getLogger(__name__)

KIND = "NodeReadiness"
DEFAULT_NAMESPACE = "nvcre-system"
REGRESSION = "Regression"
MAX_REGRESSIONS = 256
WRITERS = 8


def ledger_namespace() -> str:
    """The controller's namespace: NVCRE_LEDGER_NAMESPACE, else POD_NAMESPACE (the chart sets it)."""
    return os.environ.get("NVCRE_LEDGER_NAMESPACE") or os.environ.get("POD_NAMESPACE") or DEFAULT_NAMESPACE


def applies(wf: dict) -> bool:
    """Certification categories only (not isolation children, not WorkloadRuns)."""
    owner = L.controller_of(wf) or {}
    return owner.get("kind") == "Certification" and not isolation.is_isolation(wf)


def recorded(wf: dict) -> bool:
    return bool(((wf.get("status") or {}).get("orchestration") or {}).get("ledger"))


LEDGER_GRACE_SECONDS = 60.0


def wait_for(ctx: Context, wf: dict) -> float | None:
    """Seconds the Certification should wait for an ended Workflow's ledger write; None: go on.

    Bounded: a Workflow that ended more than a minute ago without one (an old controller,
    a broken ledger) does not hold its Certification."""
    from nvcre.controller.context import parse_time

    st = wf.get("status") or {}
    if not c.is_terminal(st.get("conditions")) or not applies(wf) or recorded(wf):
        return None
    terminal = c.find(st.get("conditions"), c.phase_of(st.get("conditions")))
    ended = parse_time(st.get("completionTime")) or parse_time((terminal or {}).get("lastTransitionTime"))
    if ended is None or ctx.now() - ended > LEDGER_GRACE_SECONDS:  # no time to wait from: do not hold
        return None
    return 1.0


def _shape(nodes: int, gpus: int | None, scale: str | None) -> str:
    per = f" x {gpus} GPUs" if gpus else ""
    scope = "intra-node" if nodes == 1 or scale == "intra-node" else ("intra-rack" if scale == "intra-rack" else "inter-node")
    return f"{nodes} node{'s' if nodes != 1 else ''}{per}, {scope}"


def _bar(wf: dict, judging: dict) -> str | None:
    derived = judging.get("derived") or []
    if derived:
        return "; ".join(f"{d['key']} >= {d['bar']:g} ({d.get('stage')})" for d in derived)[:256]
    thresholds = ((((wf.get("spec") or {}).get("validation") or {}).get("performance") or {}).get("thresholds") or {}).get("thresholds") or {}
    return ", ".join(f"{k} {v}" for k, v in sorted(thresholds.items()))[:256] or None


def node_results(wf: dict, run: str, now: str, jobs: list[dict], node_labels: dict[str, dict]) -> list[J.NodeResult]:
    """Every node the Workflow tested, with its outcome, figure and environment (pure)."""
    from nvcre.report.judging import job_gpu_hours

    st = wf.get("status") or {}
    orch = st.get("orchestration") or {}
    judging = judging_of(wf)
    gpus = judging.get("gpusPerNode") or None
    judged = judging.get("judged", True)
    stage = judging.get("stage") if judged else None
    failed: dict[str, str] = {}
    for n in st.get("failedNodes") or []:
        failed.setdefault(n["name"], n.get("reason") or "")
    iso = orch.get("isolation") or {}
    cleared = set(iso.get("nodes") or []) - set(iso.get("convicted") or []) if iso.get("phase") == isolation.SUCCEEDED else set()
    by_job = {(j.get("metadata") or {}).get("name"): j for j in jobs}
    job_of_group = {}
    for j in jobs:
        group = ((j.get("metadata") or {}).get("labels") or {}).get(L.GROUP)
        if group:
            job_of_group[group] = j
    image = judging.get("image")
    bar = _bar(wf, judging)
    category = (wf.get("spec") or {}).get("category") or ""
    out: list[J.NodeResult] = []
    for g in orch.get("groups") or []:
        nodes = list(g.get("nodes") or [])
        if not nodes or g.get("phase") not in ("Succeeded", "Failed"):
            continue
        job = by_job.get((g.get("jobRef") or {}).get("name")) or job_of_group.get(g["name"]) or {}
        measured = (job.get("status") or {}).get("measurements") or {}
        hours = job_gpu_hours(job, int(gpus or 0)) if job else None
        for node in nodes:
            labels = node_labels.get(node) or {}
            env = {"image": image, "imageDigest": measured.get("imageDigest"),
                   "transport": measured.get("transport") or g.get("transport"),
                   "nccl": measured.get("ncclVersion"),
                   "driver": labels.get("nvidia.com/cuda.driver-version.full") or ".".join(
                       labels[k] for k in ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor",
                                           "nvidia.com/cuda.driver.rev") if labels.get(k)),
                   "cuda": ".".join(labels[k] for k in ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")
                                    if labels.get(k))}
            if node in failed:
                result, reason = J.FAILED, failed[node]
            elif not judged:
                result, reason = J.NOT_JUDGED, (judging.get("message") or "")[:256]
            else:
                result, reason = J.PASSED, None
            value = None if node in cleared else g.get("headline")
            out.append(J.NodeResult(
                node=node, category=category, scope=_shape(len(nodes), gpus, orch.get("testScale")), result=result,
                time=now, run=run, workflow=wf["metadata"]["name"], stage=stage, value=value, bar=bar, reason=reason,
                environment={k: str(v) for k, v in env.items() if v},
                gpu_hours=(hours / len(nodes)) if hours is not None else None,
            ))
    return out


def _body(namespace: str, node: str) -> dict:
    return {"apiVersion": NVCRE_API_VERSION, "kind": KIND,
            "metadata": {"name": node, "namespace": namespace, "labels": L.managed_labels()},
            "spec": {"nodeName": node}}


def _write_node(ctx: Context, namespace: str, node: str, results: list[J.NodeResult]) -> list[J.Regression]:
    found: list[J.Regression] = []
    current = ctx.kube.get(NVCRE_API_VERSION, KIND, node, namespace)
    if current is None:
        current, _ = ctx.kube.create(_body(namespace, node))

    def mutate(o: dict) -> bool:
        new, regs = J.update(o.get("status") or None, results)
        found[:] = regs
        if new == (o.get("status") or {}):
            return False
        o["status"] = new
        return True

    written = ctx.kube.update_status(NVCRE_API_VERSION, KIND, node, namespace, mutate, current=current)
    if written is not None:
        written.setdefault("kind", KIND)
        ctx.metrics.store.put(written)
    return found


def record_workflow(ctx: Context, wf: dict) -> dict | None:
    """Write every tested node's record, then mark the Workflow (returns it as written)."""
    from nvcre.controller.node_results import write_workflow_status

    if not applies(wf) or recorded(wf):
        return None
    meta = wf["metadata"]
    cert = (L.controller_of(wf) or {}).get("name") or (meta.get("labels") or {}).get(L.CERTIFICATION) or ""
    run = f"{meta['namespace']}/{cert}"
    namespace = ledger_namespace()
    jobs = [j for j in ctx.metrics.store.of_kind("Job")
            if j["metadata"].get("namespace") == meta["namespace"]
            and (j["metadata"].get("labels") or {}).get(L.WORKFLOW) == meta["name"]]
    try:
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in ctx.kube.list("v1", "Node")}
    except Exception:  # driver/CUDA are a courtesy; the results are not
        labels = {}
    now = ((wf.get("status") or {}).get("completionTime")) or ctx.now_text()
    per_node: dict[str, list[J.NodeResult]] = {}
    for res in node_results(wf, run, now, jobs, labels):
        per_node.setdefault(res.node, []).append(res)
    regressions: list[J.Regression] = []
    note = f"{len(per_node)} node records in namespace {namespace}"
    try:
        with ThreadPoolExecutor(max_workers=min(WRITERS, max(1, len(per_node)))) as pool:
            for found in pool.map(lambda item: _write_node(ctx, namespace, item[0], item[1]), sorted(per_node.items())):
                regressions += found
    except Exception as err:  # no namespace, no RBAC: say so on the Workflow, never wedge it
        note = f"ledger not written to namespace {namespace}: {err}"[:512]
        log.warning("%s", note)
    regressions.sort(key=lambda r: r.node)

    def mutate(o: dict) -> bool:
        orch = o["status"].setdefault("orchestration", {})
        if orch.get("ledger"):
            return False
        orch["ledger"] = note
        if regressions:
            orch["regressions"] = [r.to_dict() for r in regressions[:MAX_REGRESSIONS]]
            c.set_condition(o["status"].setdefault("conditions", []), REGRESSION, True, REGRESSION,
                            "; ".join(r.message for r in regressions[:4])[:1024], generation=meta.get("generation"))
        return True

    written = write_workflow_status(ctx, wf, mutate)
    if written is not None:
        for r in regressions[:16]:
            ctx.events.emit(written, "Warning", REGRESSION, r.message)
    return written


def seed_store(ctx: Context) -> int:
    """Put the existing records into the metrics store, so the readiness gauge survives restarts."""
    try:
        records = ctx.kube.list(NVCRE_API_VERSION, KIND, ledger_namespace())
    except Exception as err:
        log.info("node readiness ledger not read: %s", err)
        return 0
    for record in records:
        record.setdefault("kind", KIND)
        ctx.metrics.store.put(record)
    return len(records)
