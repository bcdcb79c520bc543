"""Table-driven decision cases: ``cases/<decision>/<case>/{input,expected}.yaml``.

Each decision is a pure function of gathered state (``nvcre.controller.decide`` and the
pure helpers next to it). ``input.yaml`` is the state, ``expected.yaml`` the part of the
answer the case pins down: every key it names must match (maps recursively; a list
element by element with the same length, each map element again by the keys it
names; scalars exactly), a ``<key>~`` key checks that the text contains the value.
Adding a case is adding two files.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from nvcre.controller import clock, faults, isolation
from nvcre.controller import conditions as c
from nvcre.controller import workflow_core as core
from nvcre.controller import workload_state as ws
from nvcre.controller.decide import certification as cert_decide
from nvcre.controller.decide.job_end import decide_end
from nvcre.controller.decide.job_step import JobFacts, decide_job_step, stall_check_due
from nvcre.controller.decide.restart import decide_restart
from nvcre.controller.decide.workflow_pass import (
    Finished,
    WorkflowPass,
    apply_isolation_end,
    apply_workflow_pass,
    retryable,
)
from nvcre.controller.reconcilers.job import stall_verdict
from nvcre.measure.logprofile import default_log_profiles
from nvcre.timefmt import parse_time

CASES = Path(__file__).parent / "cases"


def _job_end(data: dict) -> dict:
    phase = ws.workload_phase(data["objects"], data["pods"])
    end = decide_end(phase, data["objects"], data["pods"], now=parse_time(data["now"]), label=data.get("label", "workload"))
    return {"workload_phase": phase.phase, "wait": end.wait, "wait_seconds": end.wait_seconds, "phase": end.phase,
            "reason": end.reason, "message": end.message, "blame_group": end.blame_group}


def _job_step(data: dict) -> dict:
    """The reconciler's gather (phase, unschedulable message, clocks) on the case's objects and pods, then the step."""
    objects, pods = data.get("objects") or [], data.get("pods") or []
    phase = ws.workload_phase(objects, pods)
    blocked = ws.unschedulable_message(pods) if phase.phase in (ws.PENDING, ws.RUNNING) else None
    now = parse_time(data["now"])
    clocks = clock.advance(data.get("status") or {}, now=now, running=phase.phase == ws.RUNNING, unschedulable=blocked,
                           grace_seconds=data.get("grace_seconds", 300), timeout_seconds=data.get("timeout_seconds"))
    gone = data.get("gone") or []
    due = stall_check_due(phase, blocked, gone, clocks)
    facts = JobFacts(phase, objects, pods, data.get("label", "workload"), blocked, gone, clocks, now,
                     data.get("startup_grace_seconds", 300), data.get("stalled") if due else None,
                     off_group=tuple(faults.off_group(data.get("group") or [], ws.pod_nodes(pods))))
    step = decide_job_step(facts)
    t = step.terminal
    return {"workload_phase": phase.phase, "blocked_message": clocks.blocked_message, "stall_check_due": due,
            "action": step.action, "wait_seconds": step.wait_seconds, "try_restart": step.try_restart,
            "failure_log": step.failure_log, "failure_log_fixed": step.failure_log_fixed,
            "read_measurements": step.read_measurements, "blame": list(step.blame), "prefetch": step.prefetch,
            "terminal": {"phase": t.phase, "reason": t.reason, "message": t.message, "blame_group": t.blame_group} if t else None}


def _certification(data: dict) -> dict:
    """``decide_advance`` on the status and the running category's Workflow, then the step applied
    to a copy; ``replay: true`` applies it a second time (a write retried after a 409 conflict)."""
    obj = {"metadata": {"name": "cert", "namespace": "ns", "generation": 1}, "status": copy.deepcopy(data["status"])}
    step = cert_decide.decide_advance(obj["status"], data.get("workflow"))

    def apply() -> bool:
        if step.action == cert_decide.MARK:
            return cert_decide.apply_category(obj, step.index, step.status, workflow=data.get("workflow"), reason=None,
                                              message=step.message, now_text=data["now_text"], label=data["label"])
        if step.action == cert_decide.MIRROR:
            return cert_decide.apply_mirror(obj, step.index, step.detail)
        return cert_decide.apply_final(obj) if step.action == cert_decide.FINALIZE else False

    changed = apply()
    out = {"action": step.action, "index": step.index, "category_status": step.status, "message": step.message,
           "detail": step.detail, "changed": changed, "status": obj["status"]}
    if data.get("replay"):
        out["replayed"] = apply()
    conds = obj["status"].get("conditions")
    phase = c.phase_of(conds)
    out["verdict"] = {"phase": phase, "reason": c.reason_of(conds, phase), "message": c.message_of(conds, phase)} if phase else {}
    return out


def _workflow_pass(data: dict) -> dict:
    wf = copy.deepcopy(data["workflow"])
    p = data["pass"]
    finished = [Finished(f["index"], core.group_outcome(f.get("job")), f.get("job")) for f in p.get("finished") or []]
    decision = WorkflowPass(p["iteration"], len(wf["status"]["orchestration"]["groups"]), finished,
                            [tuple(x) for x in p.get("launched") or []], p.get("blocked") or [],
                            p.get("diagnose_round", False), p.get("now_text", "2026-11-30T00:00:00Z"))
    changed = apply_workflow_pass(wf, decision)
    conds = wf["status"].get("conditions")
    phase = c.phase_of(conds)
    verdict = {"phase": phase, "reason": c.reason_of(conds, phase), "message": c.message_of(conds, phase)} if phase else {}
    return {"changed": changed, "status": wf["status"], "verdict": verdict}


def _clock(data: dict) -> dict:
    d = clock.advance(data["status"], now=parse_time(data["now"]), running=data.get("running", False),
                      unschedulable=data.get("unschedulable"), grace_seconds=data["grace_seconds"],
                      timeout_seconds=data.get("timeout_seconds"))
    return {"updates": d.updates, "blocked_message": d.blocked_message, "timed_out": d.timed_out}


def _isolation_start(data: dict) -> dict:
    wf = copy.deepcopy(data["workflow"])
    groups = isolation.eligible_groups(wf)
    if groups:
        isolation.begin(wf["status"], wf, groups, 1)
    return {"eligible": [g["name"] for g in groups], "status": wf["status"]}


def _isolation_end(data: dict) -> dict:
    if data.get("workflow_verdict"):  # the reconciler's write: fold and decide, then a replay after a 409
        wf = {"metadata": {"name": "wf", "generation": 1}, "spec": {"orchestration": {"iterations": 1}},
              "status": copy.deepcopy(data["status"])}
        end = apply_isolation_end(wf, data.get("child"), data.get("note", ""), "2026-11-30T00:00:00Z")
        conds = wf["status"].get("conditions")
        phase = c.phase_of(conds)
        return {"summary": end.summary if end else None, "isolation_phase": end.phase if end else None,
                "status": wf["status"], "verdict": {"phase": phase, "reason": c.reason_of(conds, phase),
                                                    "message": c.message_of(conds, phase)},
                "replayed": apply_isolation_end(wf, data.get("child"), data.get("note", ""), "2026-11-30T00:00:00Z")}
    st = copy.deepcopy(data["status"])
    summary = isolation.fold(st, data.get("child"), data.get("note", ""))
    return {"summary": summary, "status": st}


PROFILES = {p["metadata"]["name"]: p for p in default_log_profiles()}


def _stall(data: dict) -> dict:
    reason = stall_verdict(data["log"], PROFILES[data["profile"]], now=parse_time(data["now"]),
                           multiplier=float(data["multiplier"]), started_at=parse_time(data.get("started_at")),
                           resumed_at=parse_time(data.get("resumed_at")),
                           startup_timeout=float(data.get("startup_timeout", 1200)))
    return {"stalled": reason is not None, "reason": reason or ""}


def _restart(data: dict) -> dict:
    budget = tuple(data["budget"]) if data.get("budget") is not None else None
    d = decide_restart(budget, data.get("sick") or [], data.get("saved_checkpoint"))
    return {"restart": d.restart, "attempt": d.attempt, "why": d.why}


def _retry(data: dict) -> dict:
    outcome = core.group_outcome(data.get("job"))
    return {"outcome": outcome.phase, "retry": retryable(outcome, data["retries"], data["budget"],
                                                           diagnose=data.get("diagnose", False))}


DECISIONS = {
    "job_end": _job_end,
    "certification": _certification,
    "job_step": _job_step,
    "workflow_pass": _workflow_pass,
    "clock": _clock,
    "isolation_start": _isolation_start,
    "isolation_end": _isolation_end,
    "stall": _stall,
    "checkpoint_restart": _restart,
    "retry": _retry,
}


def _cases():
    for decision in sorted(p for p in CASES.iterdir() if p.is_dir()):
        for case in sorted(p for p in decision.iterdir() if p.is_dir()):
            yield pytest.param(decision.name, case, id=f"{decision.name}/{case.name}")


def _match(actual, expected, path: str = "") -> list[str]:
    problems = []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path or '.'}: expected a map, got {actual!r}"]
        for key, want in expected.items():
            if key.endswith("~"):
                text = actual.get(key[:-1])
                if not isinstance(text, str) or str(want) not in text:
                    problems.append(f"{path}.{key[:-1]}: {text!r} does not contain {want!r}")
                continue
            if key not in actual and want is not None:
                problems.append(f"{path}.{key}: missing (expected {want!r})")
                continue
            problems += _match(actual.get(key), want, f"{path}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path or '.'}: {actual!r} != {expected!r}"]
        for i, (a, e) in enumerate(zip(actual, expected)):
            problems += _match(a, e, f"{path}[{i}]")
        return problems
    if actual != expected:
        problems.append(f"{path or '.'}: {actual!r} != {expected!r}")
    return problems


def test_every_decision_has_cases():
    found = {p.name for p in CASES.iterdir() if p.is_dir()}
    assert found == set(DECISIONS), found ^ set(DECISIONS)


@pytest.mark.parametrize("decision,case", list(_cases()))
def test_decision_case(decision: str, case: Path):
    data = yaml.safe_load((case / "input.yaml").read_text())
    expected = yaml.safe_load((case / "expected.yaml").read_text())
    actual = DECISIONS[decision](data)
    problems = _match(actual, expected)
    assert not problems, "\n".join(problems)
