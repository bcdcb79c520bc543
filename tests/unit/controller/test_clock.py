from nvcre.controller.clock import advance
from nvcre.controller.context import format_time, parse_duration, parse_time

T0 = 1_800_000_000.0


def test_clock_starts_when_running_and_times_out():
    d = advance({}, now=T0, running=True, unschedulable=None, grace_seconds=60, timeout_seconds=100)
    assert d.updates == {"workloadStartTime": format_time(T0)}
    st = {"workloadStartTime": format_time(T0)}
    assert advance(st, now=T0 + 50, running=True, unschedulable=None, grace_seconds=60, timeout_seconds=100).timed_out is None
    assert advance(st, now=T0 + 101, running=True, unschedulable=None, grace_seconds=60, timeout_seconds=100).timed_out


def test_blocked_pauses_clock_reports_after_grace_and_resumes():
    st = {"workloadStartTime": format_time(T0)}
    d = advance(st, now=T0 + 30, running=False, unschedulable="0/3 nodes are available", grace_seconds=60, timeout_seconds=100)
    assert d.updates["schedulingBlockedSince"] == format_time(T0 + 30)
    assert d.blocked_message is None
    st.update(d.updates)
    d = advance(st, now=T0 + 95, running=False, unschedulable="0/3 nodes are available", grace_seconds=60, timeout_seconds=100)
    assert d.blocked_message == "Workload pods are unschedulable: 0/3 nodes are available"
    assert d.timed_out is None  # frozen at 30 s of running
    assert d.running_seconds == 30
    # recovery: the start moves forward by the blocked time
    d = advance(st, now=T0 + 130, running=True, unschedulable=None, grace_seconds=60, timeout_seconds=100)
    assert d.updates["schedulingBlockedSince"] is None
    assert parse_time(d.updates["workloadStartTime"]) == T0 + 100
    assert d.timed_out is None and d.running_seconds == 30


def test_blocked_longer_than_timeout_times_out():
    st = {"schedulingBlockedSince": format_time(T0)}
    d = advance(st, now=T0 + 101, running=False, unschedulable="x", grace_seconds=10, timeout_seconds=100)
    assert d.timed_out and "unschedulable" in d.timed_out


def test_parse_duration():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("500ms") == 0.5
    assert parse_duration("bad", 7) == 7
    assert parse_duration(None, None) is None
