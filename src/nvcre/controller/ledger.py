"""Write the node readiness ledger as each Certification Workflow ends.

Gather (the ended Workflow, its Jobs from the watch cache, one LIST of the Nodes for
driver/CUDA labels), decide (``node_results``: pure, per node; ``nvcre.judge.ledger.update``
per record) and write (one NodeReadiness per node in the controller's namespace; create
if absent, else a status write). The Workflow then records ``orchestration.ledger`` and
any ``regressions`` (with Events), which is what lets its Certification move on, so a
report never misses a Regression found for it. Nodes themselves are never modified.

A grouped run records each ended group's nodes with the group's figure; a testScale
diagnose run records every node its verdict covers (scope "diagnosis ..."): named faulty
nodes Failed with the diagnosis's reason, cleared ones Passed (NotJudged when nothing
judged), the rest NotJudged with why. Regressions use the category's
``regressionMargin`` (carried by the Workflow as an annotation; default 0.10).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from nvcre.controller import conditions as c
from nvcre.controller import isolation
from nvcre.controller import labels as L
from nvcre.controller.context import Context
from nvcre.controller.runtime.namespaces import DEFAULT_NAMESPACE, ledger_namespace  # noqa: F401 - ledger.ledger_namespace stays
from nvcre.controller.gather import all_gpu_nodes
from nvcre.controller.judging import REGRESSION_MARGIN_ANNOTATION, judging_of
from nvcre.judge import ledger as J
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.api.workflow import MAX_STATUS_REGRESSIONS
from nvcre.objpath import dig

log = logging.getLogger(__name__)

KIND = "NodeReadiness"
REGRESSION = "Regression"
MAX_REGRESSIONS = MAX_STATUS_REGRESSIONS  # in the Workflow status; the condition gives the count
WRITERS = 8


def applies(wf: dict) -> bool:
    """Certification categories only (not isolation children, not WorkloadRuns)."""
    owner = L.controller_of(wf) or {}
    return owner.get("kind") == "Certification" and not isolation.is_isolation(wf)


def recorded(wf: dict) -> bool:
    return bool(dig(wf, "status", "orchestration", "ledger"))


LEDGER_GRACE_SECONDS = 60.0


def wait_for(ctx: Context, wf: dict) -> float | None:
    """Seconds the Certification should wait for an ended Workflow's ledger write; None: go on.

    The write marks the Workflow's status, and that watch event wakes the Certification
    (its owner), so the wait is only the bound: a Workflow that ended more than a minute
    ago without one (an old controller, a broken ledger) does not hold its Certification."""
    from nvcre.controller.context import parse_time

    st = wf.get("status") or {}
    if not c.is_terminal(st.get("conditions")) or not applies(wf) or recorded(wf):
        return None
    terminal = c.find(st.get("conditions"), c.phase_of(st.get("conditions")))
    ended = parse_time(st.get("completionTime")) or parse_time(dig(terminal, "lastTransitionTime"))
    left = ended + LEDGER_GRACE_SECONDS - ctx.now() if ended is not None else 0.0
    if left <= 0:  # no time to wait from, or past the bound: do not hold
        return None
    return left


def _shape(nodes: int, gpus: int | None, scale: str | None) -> str:
    per = f" x {gpus} GPUs" if gpus else ""
    scope = "intra-node" if nodes == 1 or scale == "intra-node" else ("intra-rack" if scale == "intra-rack" else "inter-node")
    return f"{nodes} node{'s' if nodes != 1 else ''}{per}, {scope}"


def _bar(wf: dict, judging: dict) -> str | None:
    derived = judging.get("derived") or []
    if derived:
        return "; ".join(f"{d['key']} >= {d['bar']:g} ({d.get('stage')})" for d in derived)[:256]
    thresholds = dig(wf, "spec", "validation", "performance", "thresholds", "thresholds") or {}
    return ", ".join(f"{k} {v}" for k, v in sorted(thresholds.items()))[:256] or None


def regression_margin(wf: dict) -> float | None:
    """The category's ``regressionMargin`` as its Workflow carries it (None: the default). A value
    the API would have refused (an annotation edited by hand) falls back to the default, logged."""
    raw = dig(wf, "metadata", "annotations", REGRESSION_MARGIN_ANNOTATION)
    if raw is None:
        return None
    try:
        return J.check_margin(float(raw))
    except ValueError:
        log.warning("Workflow %s: regression margin %r is not a fraction in (0, 1); using the default %g",
                    dig(wf, "metadata", "name"), raw, J.DEFAULT_REGRESSION_MARGIN)
        return None


def _environment(judging: dict, measured: dict, transport: str | None, labels: dict) -> dict[str, str]:
    """What ran on a node: the image, what the Job measured, driver and CUDA from the Node's labels."""
    env = {"image": judging.get("image"), "imageDigest": measured.get("imageDigest"),
           "transport": measured.get("transport") or transport,
           "nccl": measured.get("ncclVersion"),
           "driver": labels.get("nvidia.com/cuda.driver-version.full") or ".".join(
               labels[k] for k in ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor",
                                   "nvidia.com/cuda.driver.rev") if labels.get(k)),
           "cuda": ".".join(labels[k] for k in ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")
                            if labels.get(k))}
    return {k: str(v) for k, v in env.items() if v}


def node_results(wf: dict, run: str, now: str, jobs: list[dict], node_labels: dict[str, dict]) -> list[J.NodeResult]:
    """Every node the Workflow tested, with its outcome, figure and environment (pure).

    A diagnose Workflow that ended before its verdict (no ``findings``) records nothing: a
    half-run round's pair says nothing final about either node."""
    diagnose = dig(wf, "status", "orchestration", "diagnose")
    if diagnose:
        return _diagnosed_results(wf, run, now, jobs, node_labels) if diagnose.get("findings") is not None else []
    return _group_results(wf, run, now, jobs, node_labels)


def _group_results(wf: dict, run: str, now: str, jobs: list[dict], node_labels: dict[str, dict]) -> list[J.NodeResult]:
    """A grouped run: each ended group's nodes, with the group's figure (not an isolated node's)."""
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
    by_job = {dig(j, "metadata", "name"): j for j in jobs}
    job_of_group = {dig(j, "metadata", "labels", L.GROUP): j for j in jobs if dig(j, "metadata", "labels", L.GROUP)}
    bar = _bar(wf, judging)
    category = dig(wf, "spec", "category") or ""
    out: list[J.NodeResult] = []
    for g in orch.get("groups") or []:
        nodes = list(g.get("nodes") or [])
        if not nodes or g.get("phase") not in ("Succeeded", "Failed"):
            continue
        job = by_job.get(dig(g, "jobRef", "name")) or job_of_group.get(g["name"]) or {}
        measured = dig(job, "status", "measurements") or {}
        hours = job_gpu_hours(job, int(gpus or 0)) if job else None
        for node in nodes:
            if node in failed:
                result, reason = J.FAILED, failed[node]
            elif not judged:
                result, reason = J.NOT_JUDGED, (judging.get("message") or "")[:256]
            else:
                result, reason = J.PASSED, None
            out.append(J.NodeResult(
                node=node, category=category, scope=_shape(len(nodes), gpus, orch.get("testScale")), result=result,
                time=now, run=run, workflow=wf["metadata"]["name"], stage=stage,
                value=None if node in cleared else g.get("headline"), bar=bar, reason=reason,
                environment=_environment(judging, measured, g.get("transport"), node_labels.get(node) or {}),
                gpu_hours=(hours / len(nodes)) if hours is not None else None,
            ))
    return out


def diagnosis_scope(gpus: int | None) -> str:
    """The scope of a diagnose run's results: one key per category, whatever the rounds ran."""
    return f"diagnosis (adaptive isolation){f', {gpus} GPUs per node' if gpus else ''}"


def diagnosed_verdicts(wf: dict) -> dict[str, tuple[str, str | None]]:
    """Per node a finished diagnosis ran over: (result, reason), from its verdict (pure).

    Named faulty (a bad or intermittent node, an end of a bad link): Failed, with the
    diagnosis's own reason and evidence. Cleared (tested good, rack not at fault): Passed,
    or NotJudged when nothing judged the run. Anything else the diagnosis left open (a
    rack or boundary at fault, unresolved, untested): NotJudged, saying why."""
    from nvcre.planning.diagnose import UNLABELLED
    from nvcre.planning.diagnose_model import DiagnoseError, DiagnoseState

    st = wf.get("status") or {}
    diag = dig(st, "orchestration", "diagnose") or {}
    findings = diag.get("findings") or {}
    try:
        state = DiagnoseState.from_dict(diag)
    except (DiagnoseError, KeyError, TypeError, ValueError) as err:
        log.warning("Workflow %s: diagnose state not readable for the ledger: %s", dig(wf, "metadata", "name"), err)
        return {}
    judging = judging_of(wf)
    named = {n["name"]: f"{n.get('reason') or 'WorkloadFailed'}: {n.get('message') or ''}".rstrip(": ")
             for n in st.get("failedNodes") or [] if n.get("name")}
    for x in findings.get("links") or []:
        for end, other in ((x["a"], x["b"]), (x["b"], x["a"])):
            named.setdefault(end, f"link {x['a']}<->{x['b']} fails only with both ends ({other}): {x.get('message', '')}")
    racks: dict[str, str] = {}
    for x in findings.get("racks") or []:
        for rack in (x.get("rack"), x.get("peer")):
            if rack:
                racks.setdefault(rack, f"not cleared: rack {x.get('rack')} at fault: {x.get('message', '')}")
    open_ = {n: f"not cleared: {x.get('message', '')}" for x in findings.get("unresolved") or [] for n in x.get("nodes") or []}
    cleared = (J.PASSED, None) if judging.get("judged", True) else (J.NOT_JUDGED, judging.get("message") or "not judged")
    out: dict[str, tuple[str, str | None]] = {}
    for i, node in enumerate(state.names):
        rack = (state.domain_names[state.dom[i]] if i < len(state.dom) else "") or UNLABELLED
        if node in named:
            out[node] = (J.FAILED, named[node])
        elif rack in racks:
            out[node] = (J.NOT_JUDGED, racks[rack])
        elif i < len(state.status) and state.status[i] == "g":
            out[node] = cleared
        else:
            out[node] = (J.NOT_JUDGED, open_.get(node) or "not cleared: the diagnosis left it undecided")
    return out


def _diagnosed_results(wf: dict, run: str, now: str, jobs: list[dict], node_labels: dict[str, dict]) -> list[J.NodeResult]:
    """A testScale diagnose run: every node it ran over, as its verdict says, with the GPU-hours
    of the rounds it took part in. No figure: a pair's bandwidth is not one node's."""
    from nvcre.report.judging import job_gpu_hours

    judging = judging_of(wf)
    gpus = judging.get("gpusPerNode") or None
    stage = judging.get("stage") if judging.get("judged", True) else None
    hours: dict[str, float] = {}
    last_job: dict[str, dict] = {}
    for job in sorted(jobs, key=lambda j: dig(j, "metadata", "creationTimestamp") or ""):
        nodes = list(dig(job, "spec", "nodes") or dig(job, "status", "nodesRan") or [])
        spent = job_gpu_hours(job, int(gpus or 0))
        for node in nodes:
            last_job[node] = job
            if spent is not None:
                hours[node] = hours.get(node, 0.0) + spent / len(nodes)
    bar, category, scope = _bar(wf, judging), dig(wf, "spec", "category") or "", diagnosis_scope(gpus)
    return [
        J.NodeResult(
            node=node, category=category, scope=scope, result=result, time=now, run=run,
            workflow=wf["metadata"]["name"], stage=stage, value=None, bar=bar, reason=reason,
            environment=_environment(judging, dig(last_job.get(node), "status", "measurements") or {}, None,
                                     node_labels.get(node) or {}),
            gpu_hours=hours.get(node),
        )
        for node, (result, reason) in sorted(diagnosed_verdicts(wf).items())
    ]


def _body(namespace: str, node: str) -> dict:
    return {"apiVersion": NVCRE_API_VERSION, "kind": KIND,
            "metadata": {"name": node, "namespace": namespace, "labels": L.managed_labels()},
            "spec": {"nodeName": node}}


def _write_node(ctx: Context, namespace: str, node: str, results: list[J.NodeResult],
                margin: float | None = None) -> list[J.Regression]:
    found: list[J.Regression] = []
    current = ctx.kube.get(NVCRE_API_VERSION, KIND, node, namespace)
    if current is None:
        current, _ = ctx.kube.create(_body(namespace, node))

    def mutate(o: dict) -> bool:
        new, regs = J.update(o.get("status") or None, results, margin)
        found[:] = regs
        if new == (o.get("status") or {}):
            return False
        o["status"] = new
        return True

    written = ctx.kube.update_status(NVCRE_API_VERSION, KIND, node, namespace, mutate, current=current)
    if written is not None:
        written.setdefault("kind", KIND)
        ctx.cache.put(written)
    return found


def record_workflow(ctx: Context, wf: dict) -> dict | None:
    """Write every tested node's record, then mark the Workflow (returns it as written)."""
    from nvcre.controller.node_results import write_workflow_status

    if not applies(wf) or recorded(wf):
        return None
    meta = wf["metadata"]
    cert = dig(L.controller_of(wf), "name") or dig(meta, "labels", L.CERTIFICATION) or ""
    run = f"{meta['namespace']}/{cert}"
    namespace = ledger_namespace()
    jobs = list(ctx.cache.jobs_of(meta["namespace"], meta["name"]).values())
    try:  # the watch cache's Nodes: a full Node list per finished Workflow is 41 MB at 4096 nodes
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in all_gpu_nodes(ctx)}
    except Exception:  # driver/CUDA are a courtesy; the results are not
        labels = {}
    now = dig(wf, "status", "completionTime") or ctx.now_text()
    per_node: dict[str, list[J.NodeResult]] = {}
    for res in node_results(wf, run, now, jobs, labels):
        per_node.setdefault(res.node, []).append(res)
    regressions: list[J.Regression] = []
    margin = regression_margin(wf)
    note = f"{len(per_node)} node records in namespace {namespace}"
    try:
        with ThreadPoolExecutor(max_workers=min(WRITERS, max(1, len(per_node)))) as pool:
            for found in pool.map(lambda item: _write_node(ctx, namespace, item[0], item[1], margin),
                                  sorted(per_node.items())):
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
                            _regression_summary(regressions), generation=meta.get("generation"))
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
        ctx.cache.put(record)
    return len(records)


def _regression_summary(regressions: list) -> str:
    """The Regression condition's message: the first few, and how many there were in all."""
    text = "; ".join(r.message for r in regressions[:4])
    if len(regressions) > 4:
        shown = min(len(regressions), MAX_REGRESSIONS)
        text = (f"{len(regressions)} node(s) regressed (the first {shown} in status.orchestration.regressions, "
                f"all in the NodeReadiness ledger): {text}")
    return text[:1024]
