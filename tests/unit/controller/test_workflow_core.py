from nvcre.controller import conditions as c
from nvcre.controller import workflow_core as core


def _job(phase, reason, thresholds=None, validation=None, hardware=False):
    conds: list[dict] = []
    c.set_phase(conds, phase, reason, "m")
    if validation is not None:
        c.set_condition(conds, c.VALIDATION_FAILED, validation, "ThresholdViolated" if validation else "ThresholdsMet", "v")
    if hardware:
        c.set_condition(conds, c.HARDWARE_FAILED, True, "HardwareFailureDetected", "h")
    return {"spec": {"thresholds": thresholds} if thresholds else {}, "status": {"conditions": conds}}


def test_group_outcome_waits_for_threshold_verdict():
    assert core.group_outcome(_job(c.SUCCEEDED, "WorkloadCompleted", {"busBandwidthGBps": "value > 1"})).phase == core.RUNNING
    out = core.group_outcome(_job(c.SUCCEEDED, "WorkloadCompleted", {"busBandwidthGBps": "value > 1"}, validation=True))
    assert out.phase == core.FAILED and out.validation
    assert core.group_outcome(_job(c.SUCCEEDED, "WorkloadCompleted", {"k": "v"}, validation=False)).phase == core.SUCCEEDED
    assert core.group_outcome(_job(c.FAILED, "WorkloadFailed", hardware=True)).hardware
    assert core.group_outcome(None).phase == core.FAILED


def test_groups_to_launch_is_node_disjoint_and_bounded():
    groups = [
        {"name": "g0", "nodes": ["a", "b"], "phase": "Running"},
        {"name": "g1", "nodes": ["c", "d"], "phase": "Pending"},
        {"name": "g2-overflow", "nodes": ["b", "e"], "phase": "Pending"},
        {"name": "g3", "nodes": ["f"], "phase": "Pending"},
    ]
    assert core.groups_to_launch(groups, 0) == [1, 3]
    assert core.groups_to_launch(groups, 2) == [1]


def test_final_verdict_precedence():
    orch = {"groups": [{"phase": "Failed"}, {"phase": "Succeeded"}]}
    v = core.final_verdict(orch, [{"name": "n", "reason": "HardwareFailureDetected"}], [{"reason": "WorkloadFailed"}], 1)
    assert v.reason == "JobHardwareFailed" and "hardware" in v.message
    v = core.final_verdict(orch, [{"name": "n", "reason": "ThresholdViolation"}], [{"reason": "ThresholdViolated"}], 1)
    assert v.reason == "JobValidationFailed" and v.validation_failed
    v = core.final_verdict({"groups": [{"phase": "Succeeded"}]}, [], [], 2)
    assert v.phase == c.SUCCEEDED and v.message == "All 2 iterations completed successfully"
    hist = {"groups": [{"phase": "Succeeded"}], "iterationHistory": [{"iteration": 1, "groups": [{"phase": "Failed"}]}]}
    v = core.final_verdict(hist, [], [{"reason": "WorkloadFailed"}], 2)
    assert v.reason == "IterationsFailed" and v.message.startswith("1 groups failed across 2")
