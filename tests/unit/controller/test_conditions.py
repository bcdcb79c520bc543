from nvcre.controller import conditions as c
from nvcre.controller.runtime.events import due_events, event_note


def test_set_phase_is_exclusive_and_idempotent():
    conds: list[dict] = []
    assert c.set_phase(conds, c.IN_PROGRESS, "WorkflowCreated", "m1", generation=1, now="t1")
    assert [x["status"] for x in conds] == ["True", "False", "False"]
    assert c.find(conds, c.FAILED)["reason"] == c.NOT_APPLICABLE
    assert not c.set_phase(conds, c.IN_PROGRESS, "WorkflowCreated", "m1", generation=1, now="t2")
    assert c.set_phase(conds, c.FAILED, "WorkflowFailed", "boom", now="t3")
    assert c.phase_of(conds) == c.FAILED
    assert c.is_terminal(conds)
    assert sum(1 for x in conds if x["status"] == "True") == 1
    assert c.find(conds, c.FAILED)["lastTransitionTime"] == "t3"
    # lastTransitionTime stays when only the message changes
    c.set_phase(conds, c.FAILED, "WorkflowFailed", "other", now="t4")
    assert c.find(conds, c.FAILED)["lastTransitionTime"] == "t3"


def test_additive_conditions_sit_beside_phase():
    conds: list[dict] = []
    c.set_phase(conds, c.SUCCEEDED, "WorkloadCompleted")
    c.set_condition(conds, c.VALIDATION_FAILED, True, "ThresholdViolated", "low")
    assert c.phase_of(conds) == c.SUCCEEDED
    assert c.is_true(conds, c.VALIDATION_FAILED)


def test_transition_and_events():
    before: list[dict] = []
    after: list[dict] = []
    c.set_phase(after, c.IN_PROGRESS, "WorkloadCreated", "created")
    assert due_events(before, after) == [("Normal", "WorkloadCreated", "created")]
    before = [dict(x) for x in after]
    c.set_phase(after, c.IN_PROGRESS, "WorkloadCreated", "created again")
    assert due_events(before, after) == []
    c.set_phase(after, c.FAILED, "WorkloadFailed", "exit 1")
    c.set_condition(after, c.HARDWARE_FAILED, True, "HardwareFailureDetected", "node x")
    events = due_events(before, after)
    assert events[0] == ("Warning", "WorkloadFailed", "exit 1")
    assert events[1] == ("Warning", "HardwareFailureDetected", "node x")


def test_thresholds_met_event_once():
    before: list[dict] = []
    after: list[dict] = []
    c.set_condition(after, c.VALIDATION_FAILED, False, "ThresholdsMet", "ok")
    assert ("Normal", "ThresholdsMet", "ok") in due_events(before, after)
    assert due_events([dict(x) for x in after], after) == []


def test_event_note_truncates_to_1024_bytes():
    note = event_note("é" * 2000)
    assert len(note.encode()) <= 1024
    assert note.endswith("... [truncated]")
    assert event_note("short") == "short"


def test_merge_failed_nodes_union_sorted():
    merged, added = c.merge_failed_nodes(
        [{"name": "b", "reason": "WorkloadFailed"}],
        [{"name": "a", "reason": "ThresholdViolation", "message": "m"}, {"name": "b", "reason": "WorkloadFailed"}, {"name": "", "reason": "x"}],
    )
    assert added
    assert [(n["name"], n["reason"]) for n in merged] == [("a", "ThresholdViolation"), ("b", "WorkloadFailed")]
    _, added = c.merge_failed_nodes(merged, [{"name": "a", "reason": "ThresholdViolation"}])
    assert not added
