"""Crash safety: the controller is SIGKILLed at random points of a run and restarted.

Ten trials; each must reach the same verdict as an undisturbed run, and every object
the controller creates (Workflows, Jobs, workload batch Jobs, measurements) must have
been created exactly once: a watch records every ADDED event with its UID.
"""

from __future__ import annotations

import random
import time

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
