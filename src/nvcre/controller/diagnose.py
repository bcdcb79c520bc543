"""testScale diagnose in the controller: rounds of Jobs driven by the pure planner.

The planner (``nvcre.planning.diagnose``) decides each round's node-disjoint groups
and, from their outcomes, names bad nodes, links and racks. This driver keeps the
planner's compact state in ``Workflow.status.orchestration.diagnose``, runs a round's
groups as ordinary Jobs (the Workflow's group machinery launches and polls them),
and when every group of the round has ended records the results and writes the next
round's groups (or the verdict) in the same status write, so a restart resumes
exactly where it stopped.
"""

from __future__ import annotations

from nvcre.words import count
from nvcre.controller import conditions as c
from nvcre.controller import workflow_core as core
from nvcre.controller.conditions import NodeReason, WorkflowReason
from nvcre.controller.gather import workflow_jobs
from nvcre.controller.context import Context
from nvcre.controller.node_results import write_workflow_status
from nvcre.controller.isolation import is_isolation
from nvcre.controller.measurements import pair_figures
from nvcre.controller.workflow_step import job_name
from nvcre.controller.workflow_step import step as step_groups
from nvcre.discovery.racks import rack_label
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.planning.diagnose import (
    DiagnosePolicy,
    DiagnoseState,
    GroupResult,
    figure,
    Round,
    next_round,
    record,
    start,
    topology_from_labels,
)
from nvcre.objpath import dig

DEFAULT_TOPOLOGY_KEY = "nvidia.com/gpu.clique"


def policy_for(wf: dict, pairwise: bool = False) -> DiagnosePolicy:
    """The planner's policy from the Workflow spec; ``pairwise``: the category can run the
    per-pair bandwidth check (``nvcre.workloads.pairwise``), so a link is measured, not searched."""
    from nvcre.measure.thresholds import threshold_minimum

    spec = wf.get("spec") or {}
    orch = spec.get("orchestration") or {}
    diag = orch.get("diagnose") or {}
    thresholds = dig(spec, "validation", "performance", "thresholds", "thresholds") or {}
    return DiagnosePolicy(
        min_group_size=int(diag.get("minGroupSize") or 2),
        max_concurrent=int(dig(orch, "execution", "maxConcurrent") or 0),
        topology_key=diag.get("topologyKey") or DEFAULT_TOPOLOGY_KEY,
        threshold=threshold_minimum(thresholds.get("busBandwidthGBps")),
        # a found node must not hide a link or rack fault elsewhere; an isolation child only asks
        # who in its failed group explains the miss, so it stops there (the parent re-runs after repair)
        cross_check_after_faults=not is_isolation(wf),
        # one Job measures every pair of the suspects where the category can (an nccl-tests MPI
        # workload, native adapter); otherwise the halving search over groups
        link_check="pairwise" if pairwise else "search",
        # an isolation child's parent already proved the miss: a pair that passes, even just above
        # the bar (healthy H100 pairs measure ~381 against production's 370), is a passing partner,
        # not a doubt that leaves every node of the group unresolved
        marginal_band=0.0 if is_isolation(wf) else DiagnosePolicy.marginal_band,
    )


def rack_key(nodes: list[str], labels: dict[str, dict], preferred: str) -> str:
    """``preferred`` if the nodes carry it, else the first rack label that splits them
    into several domains of more than one node (per-node labels say nothing)."""
    return rack_label(nodes, labels, preferred, require_split=True) or preferred


def start_state(wf: dict, plan) -> dict:
    """The planner's initial state for the Workflow's discovered nodes."""
    policy = policy_for(wf, plan.pairwise)
    explicit = dig(wf, "spec", "orchestration", "diagnose", "topologyKey")
    if not explicit:
        key = rack_key(plan.nodes, plan.labels, policy.topology_key)
        if key != policy.topology_key:
            policy = DiagnosePolicy(**{**policy.__dict__, "topology_key": key})
    topology = topology_from_labels(plan.nodes, plan.labels, policy.topology_key)
    return start(plan.nodes, topology, policy).to_dict()


def _round_groups(step: Round) -> list[dict]:
    groups = [
        {"name": f"r{step.number}-{i}", "nodes": list(nodes), "phase": core.PENDING, "retries": 0}
        for i, nodes in enumerate(step.groups)
    ]
    for group, tag in zip(groups, step.tags):
        if tag == "pairwise":  # its Job measures every pair of its nodes (group_job renders the check)
            group["check"] = "pairwise"
    return groups


def step_diagnose(ctx: Context, wf: dict) -> float | None:
    orch = dig(wf, "status", "orchestration") or {}
    groups = orch.get("groups") or []
    if groups and any(g.get("phase") not in (core.SUCCEEDED, core.FAILED) for g in groups):
        step_groups(ctx, wf, diagnose_round=True)
        fresh = ctx.kube.get(NVCRE_API_VERSION, "Workflow", wf["metadata"]["name"], wf["metadata"]["namespace"])
        fgroups = dig(fresh, "status", "orchestration", "groups") or []
        done = fgroups and all(g.get("phase") in (core.SUCCEEDED, core.FAILED) for g in fgroups)
        return 0.0 if done else None  # the Jobs' watch events wake their Workflow

    state = DiagnoseState.from_dict(orch["diagnose"])
    results: list[GroupResult] | None = None
    if groups:  # a finished round: its outcomes go to the planner
        jobs = workflow_jobs(ctx, wf["metadata"]["namespace"], wf["metadata"]["name"])
        results = []
        for g in groups:
            job = jobs.get(dig(g, "jobRef", "name") or job_name(wf, g, 1))
            outcome = core.group_outcome(job)
            measured = figure(dig(job, "status", "measurements", "busBandwidthGBps"))
            passed = outcome.phase == core.SUCCEEDED
            # the magnitude (bus bandwidth) and the failure kind are the planner's evidence; only a
            # Job that ran to the end and missed the bar is slow: a dead Job's partial figure (or 0)
            # is no magnitude (docs/design/050, failed measurements)
            slow = outcome.validation and not outcome.hardware and measured is not None
            kind = "" if passed else "slow" if slow else (
                "hang" if "timeout" in (outcome.reason or "").lower() or "deadline" in (outcome.reason or "").lower()
                else "crash")
            pairs = pair_figures(job) if g.get("check") == "pairwise" else None
            results.append(GroupResult(g["nodes"], passed, measured if passed or slow else None, outcome.reason, kind,
                                       pairs=pairs))
        state = record(state, results)
    step = next_round(state)
    state_dict = state.to_dict()
    gen = wf["metadata"].get("generation")
    before_round = int(orch["diagnose"].get("round") or 0)

    def mutate(o: dict) -> bool:
        st = o["status"]
        oorch = st.setdefault("orchestration", {})
        if int(dig(oorch, "diagnose", "round") or 0) != before_round or c.is_terminal(st.get("conditions")):
            return False  # another pass already moved the diagnosis on
        if results is None and oorch.get("groups"):
            return False
        oorch["diagnose"] = state_dict
        if isinstance(step, Round):
            oorch["groups"] = _round_groups(step)
            oorch["totalGroups"] = len(step.groups)
            st["summary"] = {"groups": f"0/{len(step.groups)}", "iteration": f"round {step.number}"}
            tags = sorted(set(step.tags))
            c.set_status_phase(st, c.IN_PROGRESS, WorkflowReason.ITERATION_COMPLETED if results else WorkflowReason.JOB_CREATED,
                               f"Diagnose round {step.number}: {count(len(step.groups), 'group')} ({', '.join(tags)})", generation=gen)
        else:
            _verdict(st, step, gen, ctx.now_text())
        return True

    written = write_workflow_status(ctx, wf, mutate)
    if written is None or c.is_terminal(dig(written, "status", "conditions")):
        return None
    return 0.0


def _verdict(st: dict, verdict, generation, now_text: str) -> None:
    """Bad nodes become failed nodes with their evidence; links and racks are named apart."""
    nodes = [
        {"name": b["name"], "reason": b.get("reason") or NodeReason.WORKLOAD_FAILED, "message": (b.get("message") or "")[:1024]}
        for b in verdict.bad_nodes
    ]
    # an intermittent node is not healthy: named with the API's WorkloadFailed, its message says Intermittent
    nodes += [{"name": x["name"], "reason": NodeReason.WORKLOAD_FAILED, "message": x["message"][:1024]}
              for x in verdict.intermittent]
    if nodes:
        st["failedNodes"], _ = c.merge_failed_nodes(st.get("failedNodes"), nodes)
    st["failedNodeCount"] = len({n["name"] for n in st.get("failedNodes") or []})
    diag = st["orchestration"]["diagnose"]
    diag["findings"] = {
        "links": [{"a": x["a"], "b": x["b"], "message": x["message"][:1024]} for x in verdict.bad_links][:256],
        "racks": [{k: v for k, v in x.items() if k != "evidence"} for x in verdict.bad_racks][:64],
        "unresolved": [{k: v for k, v in x.items() if k != "evidence"} for x in verdict.unresolved][:64],
        "intermittent": [{k: v for k, v in x.items() if k != "evidence"} for x in verdict.intermittent][:64],
        "rounds": verdict.rounds,
        "tests": verdict.tests,
        "nodeRounds": verdict.node_rounds,
    }
    st["orchestration"]["groups"] = []
    st["completionTime"] = now_text
    parts = []
    if verdict.bad_nodes:
        parts.append(f"{len(verdict.bad_nodes)} faulty nodes")
    if verdict.bad_links:
        parts.append(f"{len(verdict.bad_links)} faulty links ({', '.join(x['a'] + '<->' + x['b'] for x in verdict.bad_links[:4])})")
    if verdict.bad_racks:
        parts.append(f"{len(verdict.bad_racks)} rack or switch faults ({', '.join(x['rack'] for x in verdict.bad_racks[:4])})")
    if verdict.unresolved:
        parts.append(f"{len(verdict.unresolved)} unresolved")
    if verdict.intermittent:
        parts.append(f"{count(len(verdict.intermittent), 'intermittent node')} "
                     f"({', '.join(x['name'] + ' ' + str(x['fails']) + '/' + str(x['tests']) for x in verdict.intermittent[:4])})")
    effort = f"{count(verdict.rounds, 'round')}, {count(verdict.tests, 'test')}"
    if parts:
        c.set_status_phase(st, c.FAILED, WorkflowReason.ITERATIONS_FAILED,
                           f"Diagnosis complete: {'; '.join(parts)} ({effort})", generation=generation)
        if any(n["reason"] == NodeReason.THRESHOLD_VIOLATION for n in nodes):
            c.set_condition(st.setdefault("conditions", []), c.VALIDATION_FAILED, True, WorkflowReason.JOB_VALIDATION_FAILED,
                            "One or more diagnose tests failed performance threshold validation", generation=generation)
    else:
        c.set_status_phase(st, c.SUCCEEDED, WorkflowReason.JOB_COMPLETED,
                           f"Diagnosis complete: all {count(len(verdict.good_nodes), 'node')} healthy, no faults detected ({effort})",
                           generation=generation)
