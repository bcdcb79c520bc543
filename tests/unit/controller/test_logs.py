"""Controller logs: --log-format json writes one object per line with structured fields,
and every phase transition a status write makes is one INFO line naming the object."""

from __future__ import annotations

import io
import json
import logging

import pytest

from nvcre.controller import conditions as c
from nvcre.controller.logs import configure, log_transition


@pytest.fixture
def restore_root():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)


def _job(conditions):
    return {"kind": "Job", "metadata": {"name": "g0", "namespace": "team-a", "generation": 3}, "status": {"conditions": conditions}}


def test_json_transition_line_has_the_object_fields(restore_root):
    out = io.StringIO()
    configure("INFO", "json", stream=out)
    before: list[dict] = []
    c.set_phase(before, c.IN_PROGRESS, "WorkloadRunning")
    after = [dict(x) for x in before]
    c.set_phase(after, c.FAILED, "ThresholdViolation", "busbw 90 < 180")
    log_transition(_job(after), before, after)
    log_transition(_job(after), after, after)  # phase held: no line
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 1
    line = lines[0]
    assert line["level"] == "info" and line["logger"] == "nvcre.controller.transitions"
    assert {k: line[k] for k in ("kind", "namespace", "name", "generation", "reason", "from_phase", "to_phase")} == {
        "kind": "Job", "namespace": "team-a", "name": "g0", "generation": 3,
        "reason": "ThresholdViolation", "from_phase": "InProgress", "to_phase": "Failed",
    }
    assert line["ts"].endswith("Z") and "team-a/g0" in line["msg"]


def test_text_format_and_exceptions(restore_root):
    out = io.StringIO()
    configure("warning", "text", stream=out)
    log = logging.getLogger("nvcre.test")
    log.info("hidden")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("failed %s", "x")
    text = out.getvalue()
    assert "hidden" not in text and "ERROR nvcre.test: failed x" in text and "RuntimeError: boom" in text
    out = io.StringIO()
    configure("INFO", "json", stream=out)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("nvcre.test").exception("failed")
    assert "RuntimeError: boom" in json.loads(out.getvalue())["exc"]


@pytest.mark.parametrize("level,fmt", [("verbose", "text"), ("INFO", "yaml")])
def test_bad_level_or_format_is_refused(level, fmt, restore_root):
    with pytest.raises(ValueError, match="log (level|format) must be one of"):
        configure(level, fmt)


def test_cli_refuses_bad_log_format():
    from nvcre.cli.main import main

    assert main(["controller", "run", "--log-format", "xml"]) == 2


class _OneObjectKube:
    """update_status on one stored object, as KubeClient does after a successful write."""

    def __init__(self, obj):
        self.obj = obj
        self.requests: dict = {}

    def update_status(self, api_version, kind, name, namespace, mutate, *, current=None):
        import copy

        fresh = copy.deepcopy(self.obj)
        fresh.setdefault("status", {})
        if mutate(fresh):
            self.obj = fresh
        return copy.deepcopy(self.obj)

    def post_event(self, *a, **k):
        pass


def test_every_status_write_that_changes_phase_logs_one_info_line(caplog):
    """The line comes from write_status, the one status write path of every reconciler."""
    from nvcre.controller.context import Context, write_status

    obj = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Workflow",
           "metadata": {"name": "wf", "namespace": "ns", "generation": 2}, "status": {}}
    ctx = Context(kube=_OneObjectKube(obj))  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="nvcre.controller.transitions"):
        write_status(ctx, obj, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, "JobsRunning", "running"))
        write_status(ctx, obj, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, "JobsRunning", "still running"))
        write_status(ctx, obj, lambda o: c.set_status_phase(o["status"], c.SUCCEEDED, "AllJobsSucceeded", "done"))
    lines = [r for r in caplog.records if r.name == "nvcre.controller.transitions"]
    assert [(r.fields["from_phase"], r.fields["to_phase"], r.fields["reason"]) for r in lines] == [
        ("", "InProgress", "JobsRunning"), ("InProgress", "Succeeded", "AllJobsSucceeded"),
    ]
    assert all(r.levelno == logging.INFO and r.fields["generation"] == 2 and r.fields["name"] == "wf" for r in lines)


def test_cli_flag_choices_match_the_log_module():
    from nvcre.cli import controller as cli
    from nvcre.controller import logs

    assert (cli.LOG_FORMATS, cli.LOG_LEVELS) == (logs.LOG_FORMATS, logs.LOG_LEVELS)


def test_cli_accepts_the_removed_poll_seconds_with_a_warning(capsys):
    # a deployment written for an older release passes --poll-seconds: it is parsed and ignored
    # (here the run then stops at the bad --log-format, before any cluster is touched)
    from nvcre.cli.main import main

    assert main(["controller", "run", "--poll-seconds", "10", "--log-format", "xml"]) == 2
    err = capsys.readouterr().err
    assert "--poll-seconds is ignored" in err and "No such option" not in err
