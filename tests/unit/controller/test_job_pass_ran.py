"""``nodesRan`` of a pinned group rides along with other writes; an Unpinned Job's is written at once."""

from __future__ import annotations

from nvcre.controller import conditions as c
from nvcre.controller.decide.job_pass import JobPass, apply_pass

GROUP = [f"node-{i:04d}" for i in range(8)]


def _running_job() -> dict:
    job = {"metadata": {"name": "j", "generation": 1}, "status": {}}
    apply_pass(job, JobPass(ran=GROUP[:2], group=GROUP, running=True, label="Job/j-launcher"))
    assert c.reason_of(job["status"]["conditions"], c.IN_PROGRESS) == "WorkloadRunning"
    return job


def test_more_pods_placed_alone_is_no_write_for_a_pinned_group():
    job = _running_job()
    assert job["status"]["nodesRan"] == GROUP[:2]  # rode along with the Running transition
    assert apply_pass(job, JobPass(ran=GROUP[:6], group=GROUP, running=True, label="Job/j-launcher")) is False
    assert job["status"]["nodesRan"] == GROUP[:2]


def test_a_pinned_groups_nodes_ran_are_complete_when_another_change_is_written():
    job = _running_job()
    sick = {GROUP[3]: "GPU fell off the bus"}
    assert apply_pass(job, JobPass(ran=GROUP, group=GROUP, sick=sick, running=True, label="Job/j-launcher")) is True
    assert job["status"]["nodesRan"] == GROUP


def test_an_unpinned_jobs_nodes_are_written_as_they_are_seen():
    job = {"metadata": {"name": "j", "generation": 1}, "status": {}}
    apply_pass(job, JobPass(ran=GROUP[:2], running=True, label="Job/j-launcher"))
    assert apply_pass(job, JobPass(ran=GROUP[:6], running=True, label="Job/j-launcher")) is True
    assert job["status"]["nodesRan"] == GROUP[:6]
