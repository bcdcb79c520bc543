"""Crash safety: the controller is SIGKILLed at random points of a run and restarted.

Ten trials; each must reach the same verdict as an undisturbed run, and every object
the controller creates (Workflows, Jobs, workload batch Jobs, measurements) must have
been created exactly once: a watch records every ADDED event with its UID.
"""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

import kubernetes
from kubernetes import watch

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


class Creations:
    """Every ADDED event per (kind, name), with the UIDs seen."""

    def __init__(self, kubeconfig: str, namespace: str) -> None:
        self.uids: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.stop = threading.Event()
        self.api = kubernetes.config.new_client_from_config(config_file=kubeconfig)
        self.threads = [
            threading.Thread(target=self._watch, args=(kind, lister), daemon=True)
            for kind, lister in self._listers(namespace).items()
        ]
        for t in self.threads:
            t.start()

    def _listers(self, ns):
        batch = kubernetes.client.BatchV1Api(self.api)
        custom = kubernetes.client.CustomObjectsApi(self.api)

        def custom_lister(plural):
            return lambda **kw: custom.list_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", ns, plural, **kw)

        return {
            "batch.Job": lambda **kw: batch.list_namespaced_job(ns, **kw),
            "Workflow": custom_lister("workflows"),
            "Job": custom_lister("jobs"),
            "BandwidthMeasurement": custom_lister("bandwidthmeasurements"),
        }

    def _watch(self, kind, lister) -> None:
        while not self.stop.is_set():
            try:
                for event in watch.Watch().stream(lister, timeout_seconds=5):
                    obj = event["object"]
                    meta = obj["metadata"] if isinstance(obj, dict) else obj.metadata.to_dict()
                    if event["type"] == "ADDED":
                        self.uids[(kind, meta["name"])].add(meta["uid"])
                    if self.stop.is_set():
                        return
            except Exception:
                time.sleep(0.2)

    def duplicates(self) -> dict:
        return {k: v for k, v in self.uids.items() if len(v) > 1}

    def close(self) -> None:
        self.stop.set()


def _verdict(kube, namespace, name):
    cert = kube.get(NVCRE_API_VERSION, "Certification", name, namespace)
    st = cert["status"]
    phase = next(c["type"] for c in st["conditions"] if c["status"] == "True")
    cats = [(c["variant"], c["status"]) for c in st["categoryStatuses"]]
    failed = sorted({(n["name"], n["reason"]) for n in st.get("failedNodes") or []})
    return phase, cats, failed


def test_sigkill_at_random_points_converges_without_duplicates(sim_fleet, controller, kube, kubeconfig, namespace, e2e):
    sim_fleet.start(SCENARIO, time_scale=240.0)
    creations = Creations(str(kubeconfig), namespace)
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
            for _ in range(rng.choice((1, 2))):  # one or two crashes per run
                time.sleep(rng.uniform(0.2, duration * 0.8))
                controller.kill()
                time.sleep(rng.uniform(0.0, 2.0))
                controller.start()
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
