"""Crash safety: the controller is SIGKILLed at random points of a run and restarted, and
killed right after chosen status writes (a test hook, nvcre.controller.testhooks).

Ten random trials; each must reach the same verdict as an undisturbed run, and every
object the controller creates (Workflows, Jobs, workload batch Jobs, measurements) must
have been created exactly once: a watch records every ADDED event with its UID. After a
kill at a status write the run converges to the same verdict and nothing written or
meant to be written (verdicts, measurements, node-result ConfigMaps) is lost.
"""

from __future__ import annotations

import random
import time

import pytest

from nvcre.controller.testhooks import KILL_AFTER_STATUS_WRITE
from nvcre.kube.resources import NVCRE_API_VERSION

SCENARIO = {
    "name": "restart",
    "fleet": {"nodes": 8, "platform": "aws", "gpu": "h100", "racks": 2},
    "seed": 3,
    "noise": 0.01,
    "faults": [{"type": "degraded-nic", "node": "gpu-node-03", "factor": 0.4}],
}
CATEGORIES = [
    {"domain": "communication", "variant": "nccl-all-reduce",
     "options": {"nodesPerJob": 4, "thresholds": {"busBandwidthGBps": "value >= 250"}}},
    {"domain": "communication", "variant": "nccl-loopback", "options": {"testScale": "intra-node", "maxConcurrent": 4}},
]


# What the controller creates, watched for ADDED events: (group, version, plural)
CREATED_KINDS = {
    "batch.Job": ("batch", "v1", "jobs"),
    "Workflow": ("nvcre.nvidia.com", "v1alpha1", "workflows"),
    "Job": ("nvcre.nvidia.com", "v1alpha1", "jobs"),
    "BandwidthMeasurement": ("nvcre.nvidia.com", "v1alpha1", "bandwidthmeasurements"),
}


EXPECTED_CATEGORIES = {"nccl-all-reduce": "Failed", "nccl-loopback": "Succeeded"}


def _verdict(kube, namespace, name):
    cert = kube.get(NVCRE_API_VERSION, "Certification", name, namespace)
    st = cert["status"]
    phase = next(c["type"] for c in st["conditions"] if c["status"] == "True")
    cats = [(c["variant"], c["status"]) for c in st["categoryStatuses"]]
    failed = sorted({(n["name"], n["reason"]) for n in st.get("failedNodes") or []})
    return phase, cats, failed


def test_sigkill_at_random_points_converges_without_duplicates(sim_fleet, controller, kube, kubeconfig, namespace, e2e):
    sim_fleet.start(SCENARIO, time_scale=240.0)
    creations = e2e.Creations(str(kubeconfig), namespace, CREATED_KINDS)
    rng = random.Random(20261130)
    try:
        controller.start()
        started = time.monotonic()
        e2e.apply(kube, e2e.certification("baseline", namespace, CATEGORIES))
        e2e.wait_terminal(kube, "Certification", "baseline", namespace, 300, controller)
        duration = time.monotonic() - started
        expected = _verdict(kube, namespace, "baseline")
        # gpu-node-03's group missed the threshold; isolation narrowed it down to gpu-node-03 alone
        assert expected[0] == "Failed" and expected[2] == [("gpu-node-03", "ThresholdViolation")], expected

        for trial in range(10):
            name = f"trial-{trial}"
            e2e.apply(kube, e2e.certification(name, namespace, CATEGORIES))
            controller.crash_at_random(rng, duration * 0.8, downtime=2.0)
            e2e.wait_terminal(kube, "Certification", name, namespace, 300, controller)
            assert _verdict(kube, namespace, name) == expected, f"trial {trial} diverged"
        time.sleep(3)  # let the watches catch the last events
        assert controller.starts >= 11
        assert not creations.duplicates(), creations.duplicates()
        # every run (baseline + 10 trials) created its two Workflows plus the all-reduce
        # Workflow's isolation diagnose, and nothing more
        assert len({k for k in creations.uids if k[0] == "Workflow"}) == 3 * 11
        runs = ["baseline"] + [f"trial-{i}" for i in range(10)]
        jobs = {run: sum(1 for kind, name in creations.uids if kind == "Job" and name.startswith(f"{run}-")) for run in runs}
        # 2 all-reduce groups + 8 intra-node loopback groups + the diagnosis's rounds, the same in every run
        assert len(set(jobs.values())) == 1 and jobs["baseline"] >= 2 + 8 + 4, jobs
        assert sum(jobs.values()) == len({k for k in creations.uids if k[0] == "Job"}), jobs
    finally:
        creations.close()


# Kill points: the controller SIGKILLs itself right after the API server stored this status
# write (testhooks.KILL_AFTER_STATUS_WRITE), so what it meant to do next is lost.
STATUS_WRITE_KILLS = [
    "Job/Succeeded:1",  # a group's verdict is stored; the Workflow never folded it in
    "BandwidthMeasurement/Complete:1",  # the measurement is final; its Job never read it
    "Workflow/Failed:1",  # a terminal Workflow; its node-result ConfigMaps were not written yet
]


def _wait_killed(controller, e2e, hook: str) -> str:
    e2e.wait_for(lambda: controller.proc.poll() is not None, 240, f"the controller to kill itself at {hook}",
                 controller.log_tail)
    assert controller.proc.returncode == -9, controller.log_tail()
    log = controller.log_tail(400)
    assert "killing the controller after status write" in log, log
    return log


def _nothing_lost(kube, namespace, e2e) -> None:
    """Every child ended, kept its verdict and measurements, and the ConfigMaps exist."""
    for job in kube.list(NVCRE_API_VERSION, "Job", namespace):
        assert e2e.terminal(job), job["metadata"]["name"]
        if job["spec"].get("bandwidthMeasurement"):
            assert (job["status"].get("measurements") or {}).get("busBandwidthGBps"), job["metadata"]["name"]
    for bm in kube.list(NVCRE_API_VERSION, "BandwidthMeasurement", namespace):
        assert bm["status"].get("phase") == "Complete" and bm["status"].get("results"), bm["metadata"]["name"]
    for wf in kube.list(NVCRE_API_VERSION, "Workflow", namespace):
        assert e2e.terminal(wf), wf["metadata"]["name"]
        for ref in ("failedNodesRef", "succeededNodesRef"):
            name = (wf["status"].get(ref) or {}).get("name")
            assert name and kube.get("v1", "ConfigMap", name, namespace) is not None, (wf["metadata"]["name"], ref)


@pytest.mark.parametrize("hook", STATUS_WRITE_KILLS)
def test_killed_right_after_a_status_write_converges_with_nothing_lost(hook, sim_fleet, controller, kube, kubeconfig,
                                                                     namespace, e2e):
    sim_fleet.start(SCENARIO, time_scale=240.0)
    creations = e2e.Creations(str(kubeconfig), namespace, CREATED_KINDS)
    try:
        controller.start(env={KILL_AFTER_STATUS_WRITE: hook})
        e2e.apply(kube, e2e.certification("killed", namespace, CATEGORIES))
        _wait_killed(controller, e2e, hook)
        controller.start()  # the same flags, without the hook
        e2e.wait_terminal(kube, "Certification", "killed", namespace, 300, controller)
        phase, cats, failed = _verdict(kube, namespace, "killed")
        assert (phase, failed) == ("Failed", [("gpu-node-03", "ThresholdViolation")]), (phase, cats, failed)
        assert dict(cats) == EXPECTED_CATEGORIES, cats
        _nothing_lost(kube, namespace, e2e)
        time.sleep(3)  # let the watches catch the last events
        assert not creations.duplicates(), creations.duplicates()
        assert len(creations.names("Workflow")) == 3  # two categories + the all-reduce isolation
    finally:
        creations.close()
