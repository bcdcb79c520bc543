"""Checkpoint restart: a training pod that dies mid-run after saving a checkpoint is
restarted from it (same names, the checkpoint volume kept), and goodput accounts for
the interruption: the lost work and the restore appear in the GoodputMeasurement."""

from __future__ import annotations

from nvcre.kube.resources import NVCRE_API_VERSION

SCENARIO = {
    "name": "crashy",
    "fleet": {"nodes": 1, "platform": "aws", "gpu": "h100", "racks": 1},
    "seed": 4,
    "noise": 0.0,
    "faults": [{"type": "flaky-node", "node": "gpu-node-01", "probability": 1.0}],
}


def _volume() -> dict:
    """A static volume for the checkpoint claim (the test bed has no provisioner)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "nvcre-e2e-checkpoints"},
        "spec": {
            "capacity": {"storage": "20Ti"},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": "",
            "hostPath": {"path": "/tmp/nvcre-e2e-checkpoints"},
        },
    }


def test_training_restarts_from_checkpoint(sim_fleet, controller, kube, namespace, kubectl, e2e):
    sim_fleet.start(SCENARIO, time_scale=600.0)
    kube.create(_volume())
    try:
        controller.start()
        e2e.apply(kube, e2e.certification("ckpt", namespace, [
            {"domain": "training", "variant": "nemotron5-8b",
             # the flaky node crashes the run between 10 % and 90 % of its steps: with 3000
             # steps that is always after the first save (at step 250 at the latest)
             "options": {"enableCheckpoint": True, "maxRestarts": 1, "maxSteps": 3000, "saveInterval": 20, "exitDurationMins": 600,
                         "storageSize": "1Ti"}},
        ]))
        cert = e2e.wait_terminal(kube, "Certification", "ckpt", namespace, 600, controller)
        jobs = kube.list(NVCRE_API_VERSION, "Job", namespace)
        assert len(jobs) == 1, [j["metadata"]["name"] for j in jobs]
        job = jobs[0]
        st = job["status"]
        assert st.get("restartCount") == 1, (st, cert["status"])
        described = kubectl("-n", namespace, "describe", "job.nvcre.nvidia.com", job["metadata"]["name"]).stdout
        assert "WorkloadRestarting" in described
        # the attempt that died is kept for the goodput accounting
        assert kube.get("v1", "ConfigMap", f"{job['metadata']['name']}-attempt-1", namespace)
        gm = kube.list(NVCRE_API_VERSION, "GoodputMeasurement", namespace)[0]
        gst = gm["status"]
        assert e2e.true_condition(gm, "Complete")
        assert int(gst["interruptionCount"]) >= 1, gst
        assert float(gst["lostWorkTimeSec"]) > 0 and float(gst["rescheduleTimeSec"]) > 0, gst
        assert 0 < float(gst["result"]) < 1, gst
    finally:
        kube.delete("v1", "PersistentVolume", "nvcre-e2e-checkpoints")
