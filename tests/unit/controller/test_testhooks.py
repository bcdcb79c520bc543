"""The status-write kill hook: off unless set, parsed strictly, counts only what it names."""

from __future__ import annotations

import pytest

from nvcre.controller import testhooks
from nvcre.controller.testhooks import KILL_AFTER_STATUS_WRITE, StatusWriteKill
from nvcre.errors import UserError

SUCCEEDED = [{"type": "Succeeded", "status": "True"}]


def test_unset_means_no_hook():
    assert StatusWriteKill.from_env({}) is None
    testhooks.install({})
    testhooks.after_status_write("Job", [], SUCCEEDED, "j")  # inert: still alive


@pytest.mark.parametrize("spec", ["Job", "Job:0", "Job:x", ":3", "/Succeeded:1"])
def test_a_malformed_spec_is_refused_with_the_form(spec):
    with pytest.raises(UserError, match=r"<Kind>\[/<ConditionType>\]:<n>"):
        StatusWriteKill.from_env({KILL_AFTER_STATUS_WRITE: spec})


def test_a_condition_counts_only_the_write_that_turns_it_true():
    hook = StatusWriteKill.from_env({KILL_AFTER_STATUS_WRITE: "Job/Succeeded:2"})
    assert (hook.kind, hook.condition, hook.nth) == ("Job", "Succeeded", 2)
    assert hook.counts("Job", [], SUCCEEDED)
    assert not hook.counts("Job", SUCCEEDED, SUCCEEDED)  # already true before
    assert not hook.counts("Workflow", [], SUCCEEDED)
    plain = StatusWriteKill.from_env({KILL_AFTER_STATUS_WRITE: "Certification:3"})
    assert plain.counts("Certification", [], []) and not plain.counts("Job", [], [])


def test_the_nth_counted_write_kills(monkeypatch):
    killed = []
    monkeypatch.setattr(testhooks.os, "kill", lambda pid, sig: killed.append(sig))
    hook = StatusWriteKill.from_env({KILL_AFTER_STATUS_WRITE: "Job/Succeeded:2"})
    hook.after_write("Job", [], SUCCEEDED, "a")
    hook.after_write("Job", SUCCEEDED, SUCCEEDED, "a")
    assert killed == []
    hook.after_write("Job", [], SUCCEEDED, "b")
    assert killed == [testhooks.signal.SIGKILL]
