"""The trainjob adapter end to end with the real Kubeflow Trainer v2 and JobSet.

Both controller managers are built from their pinned Go modules (``make trainer``)
and run against the test bed's API server with their admission webhooks served for
real. The nvcre controller runs with its default adapter choice (``auto``): Trainer's
TrainJob being served must make it pick trainjob, and each workload must then go
TrainJob -> JobSet -> batch Jobs -> pods on the simulated fleet.
"""

from __future__ import annotations

import random
import time

import pytest
import yaml

from nvcre.kube.resources import NVCRE_API_VERSION

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"


@pytest.fixture
def trainer_kube(kubeflow_trainer, kube):
    """The API client, once Trainer and JobSet serve the test bed."""
    return kube


def _workflow_jobs(kube, namespace: str, workflow: str) -> list[dict]:
    return kube.list(NVCRE_API_VERSION, "Job", namespace, label_selector=f"nvcre.nvidia.com/workflow={workflow}")


def test_nccl_certification_runs_through_trainjob(kubeflow_trainer, trainer_kube, sim_fleet, controller, namespace, e2e):
    kube = trainer_kube
    # One NIC at half rate: the group's bandwidth then proves which hosts the launcher
    # took from Trainer's hostfile (all four, by their JobSet host names).
    sim_fleet.start({"name": "tj-nccl", "fleet": {"nodes": 4, "racks": 1}, "seed": 3, "noise": 0.0,
                     "faults": [{"type": "degraded-nic", "node": "gpu-node-04", "factor": 0.5}]})
    controller.start()
    category = {"domain": "communication", "variant": "nccl-all-reduce",
                "options": {"testScale": "full-scale", "thresholds": {"busBandwidthGBps": "value >= 100"}}}
    e2e.apply(kube, e2e.certification("tj-nccl", namespace, [category]))

    # While it runs: a TrainJob and its JobSet exist, our Jobs are the JobSet's, not ours.
    # (The JobSet controller creates its batch Jobs a moment after the JobSet: wait for them too.)
    def trainjob_running():
        tjs = kube.list(TRAINER_API, "TrainJob", namespace)
        jss = kube.list(JOBSET_API, "JobSet", namespace)
        batch = kube.list("batch/v1", "Job", namespace)
        return (tjs, jss, batch) if tjs and jss and batch else None

    tjs, jss, batch = e2e.wait_for(trainjob_running, 120, "a TrainJob, its JobSet and their batch Jobs", controller.log_tail)
    assert {t["metadata"]["name"] for t in tjs} == {j["metadata"]["name"] for j in jss}
    assert batch and all(JOBSET_LABEL in (j["metadata"].get("labels") or {}) for j in batch), [
        j["metadata"]["name"] for j in batch]

    cert = e2e.wait_terminal(kube, "Certification", "tj-nccl", namespace, 600, controller)
    st = cert["status"]
    assert e2e.true_condition(cert, "Succeeded"), st
    assert st["summary"]["result"] == "PASSED", st["summary"]
    wf_name = st["categoryStatuses"][0]["workflowRef"]["name"]
    wf = kube.get(NVCRE_API_VERSION, "Workflow", wf_name, namespace)
    # the controller ran with its default (auto) adapter choice and found TrainJob served
    assert wf["metadata"]["annotations"]["nvcre.nvidia.com/adapter"] == "trainjob"
    assert wf["spec"]["jobTemplate"]["spec"]["workload"]["native"]["adapter"] == "trainjob"
    table = wf["status"].get("bandwidth") or []
    assert len(table) >= 5 and all(row["busBwGBps"] > 0 for row in table[-3:]), table
    assert wf["status"].get("transport") == ["IB"]
    jobs = _workflow_jobs(kube, namespace, wf_name)
    assert len(jobs) == 1 and jobs[0]["status"]["workloadRef"]["kind"] == "TrainJob"
    assert sorted(jobs[0]["status"]["nodesRan"]) == sorted(sim_fleet.nodes)
    assert jobs[0]["status"]["measurements"]["busBandwidthGBps"] >= 100
    largest = max(table, key=lambda row: row["sizeBytes"])
    expected = sim_fleet.handle.expected_busbw(sim_fleet.nodes, size=int(largest["sizeBytes"]))
    healthy_three = sim_fleet.handle.expected_busbw(sim_fleet.nodes[:3], size=int(largest["sizeBytes"]))
    assert abs(largest["busBwGBps"] - expected) <= 0.05 * expected, (largest, expected)
    assert largest["busBwGBps"] < 0.8 * healthy_three, (largest, healthy_three)
    # Trainer itself reconciled it (its controller-runtime metrics count the passes).
    reconciled = [line for line in kubeflow_trainer.trainer_metrics().splitlines()
                  if line.startswith("controller_runtime_reconcile_total{") and 'controller="trainjob_controller"' in line
                  and 'result="success"' in line]
    assert reconciled and float(reconciled[0].rsplit(" ", 1)[1]) > 0, reconciled
    # Cleaned up: the TrainJob, its runtime and JobSet are gone once the Job ended.
    e2e.wait_for(lambda: not kube.list(TRAINER_API, "TrainJob", namespace)
                 and not kube.list(TRAINER_API, "TrainingRuntime", namespace)
                 and not kube.list(JOBSET_API, "JobSet", namespace), 60, "the TrainJob to be cleaned up")


def _workloadrun(name: str, namespace: str, framework: dict, *, nodes: int = 2, placement: str = "Pinned") -> dict:
    return {"apiVersion": NVCRE_API_VERSION, "kind": "WorkloadRun", "metadata": {"name": name, "namespace": namespace},
            "spec": {"image": "nvcr.io/nvidia/pytorch:26.01-py3", "framework": framework, "numNodes": nodes,
                     "orchestration": {"placement": placement, "timeoutPerJob": "30m"}}}


def _workload_kinds(kube, namespace: str, run: dict) -> set[str]:
    wf = kube.get(NVCRE_API_VERSION, "Workflow", run["status"]["workflowRef"]["name"], namespace)
    return {j["status"]["workloadRef"]["kind"] for j in _workflow_jobs(kube, namespace, wf["metadata"]["name"])}


def test_torch_policy_workloads_run_through_trainjob(trainer_kube, sim_fleet, controller, namespace, e2e):
    """torch policy: a torch WorkloadRun (two Pinned groups) and Megatron training
    (torchrun with Trainer's PET_* rendezvous env), measured from the ranks' logs."""
    kube = trainer_kube
    sim_fleet.start("healthy.yaml", nodes=4, racks=1)
    controller.start()
    e2e.apply(kube, _workloadrun("torch", namespace, {"torch": {"script": "/workspace/train.py", "args": ["--epochs", "1"]}}))
    e2e.apply(kube, e2e.certification("tj-train", namespace, [{"domain": "training", "variant": "nemotron5-8b"}]))

    run = e2e.wait_terminal(kube, "WorkloadRun", "torch", namespace, 300, controller)
    assert e2e.true_condition(run, "Succeeded"), run["status"]
    assert _workload_kinds(kube, namespace, run) == {"TrainJob"}

    cert = e2e.wait_terminal(kube, "Certification", "tj-train", namespace, 600, controller)
    assert e2e.true_condition(cert, "Succeeded"), cert["status"]
    wf_name = cert["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    jobs = _workflow_jobs(kube, namespace, wf_name)
    assert jobs and all(j["status"]["workloadRef"]["kind"] == "TrainJob" for j in jobs)
    m = jobs[0]["status"]["measurements"]
    assert m["avgTFLOPsPerGPU"] > 0 and 0 < m["goodputRatio"] <= 1, m
    gms = kube.list(NVCRE_API_VERSION, "GoodputMeasurement", namespace,
                    label_selector=f"nvcre.nvidia.com/workflow={wf_name}")
    assert gms and all(float(g["status"]["trainingTimeSec"]) > 0 for g in gms)


def test_failed_trainjob_names_the_pod_node_and_exit_code(trainer_kube, sim_fleet, controller, namespace, e2e):
    kube = trainer_kube
    sim_fleet.start("healthy.yaml", nodes=2, racks=1)
    controller.start()
    e2e.apply(kube, _workloadrun("boom", namespace, {"exec": {"command": ["sh", "-c", "echo starting; sleep 5; echo boom; exit 3"]}}))
    run = e2e.wait_terminal(kube, "WorkloadRun", "boom", namespace, 300, controller)
    assert e2e.true_condition(run, "Failed"), run["status"]
    wf = kube.get(NVCRE_API_VERSION, "Workflow", run["status"]["workflowRef"]["name"], namespace)
    (job,) = _workflow_jobs(kube, namespace, wf["metadata"]["name"])
    failed = e2e.true_condition(job, "Failed")
    assert failed["reason"] == "WorkloadFailed" and "TrainJob/" in failed["message"], failed
    log = job["status"]["failureLog"]
    assert log["exitCode"] == 3 and log["reason"] == "Error", log
    assert log["podName"].startswith(job["status"]["workloadRef"]["name"] + "-node-0-"), log
    assert log["nodeName"] in sim_fleet.nodes and "boom" in log["tail"], log
    assert {n["reason"] for n in job["status"]["failedNodes"]} == {"WorkloadFailed"}
    e2e.wait_for(lambda: not kube.list(TRAINER_API, "TrainJob", namespace), 60, "the failed TrainJob to be cleaned up")


def test_adapter_native_when_asked_even_with_trainer_installed(trainer_kube, sim_fleet, controller, namespace, e2e):
    kube = trainer_kube
    sim_fleet.start("healthy.yaml", nodes=2, racks=1)
    controller.start("--adapter", "native")
    e2e.apply(kube, _workloadrun("plain", namespace, {"exec": {"command": ["echo", "hello"]}}))
    run = e2e.wait_terminal(kube, "WorkloadRun", "plain", namespace, 300, controller)
    assert e2e.true_condition(run, "Succeeded"), run["status"]
    assert _workload_kinds(kube, namespace, run) == {"Job"}
    assert not kube.list(TRAINER_API, "TrainJob", namespace)


def test_training_restarts_from_checkpoint_through_trainjob(trainer_kube, sim_fleet, controller, namespace, e2e):
    """A training rank that dies after a checkpoint save fails the JobSet (and so the
    TrainJob); the Job restarts the workload under the same names, keeping the volume."""
    kube = trainer_kube
    scenario = {"name": "crashy", "fleet": {"nodes": 1, "platform": "aws", "gpu": "h100", "racks": 1}, "seed": 4,
                "noise": 0.0, "faults": [{"type": "flaky-node", "node": "gpu-node-01", "probability": 1.0}]}
    sim_fleet.start(scenario, time_scale=600.0)
    volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "nvcre-e2e-trainjob-checkpoints"},
              "spec": {"capacity": {"storage": "20Ti"}, "accessModes": ["ReadWriteMany"],
                       "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "",
                       "hostPath": {"path": "/tmp/nvcre-e2e-trainjob-checkpoints"}}}
    kube.create(volume)
    try:
        controller.start()
        e2e.apply(kube, e2e.certification("tj-ckpt", namespace, [
            {"domain": "training", "variant": "nemotron5-8b",
             "options": {"enableCheckpoint": True, "maxRestarts": 1, "maxSteps": 3000, "saveInterval": 20,
                         "exitDurationMins": 600, "storageSize": "1Ti"}}]))
        cert = e2e.wait_terminal(kube, "Certification", "tj-ckpt", namespace, 600, controller)
        (job,) = kube.list(NVCRE_API_VERSION, "Job", namespace)
        st = job["status"]
        assert st.get("restartCount") == 1, (st, cert["status"])
        assert st["workloadRef"]["kind"] == "TrainJob"
        assert kube.get("v1", "ConfigMap", f"{job['metadata']['name']}-attempt-1", namespace)
        gm = kube.list(NVCRE_API_VERSION, "GoodputMeasurement", namespace)[0]["status"]
        assert int(gm["interruptionCount"]) >= 1 and float(gm["lostWorkTimeSec"]) > 0, gm
    finally:
        kube.delete("v1", "PersistentVolume", "nvcre-e2e-trainjob-checkpoints")


def test_unschedulable_trainjob_pods_block_then_recover(trainer_kube, sim_fleet, controller, namespace, e2e):
    """JobSet's pods the scheduler cannot place are seen through the TrainJob's labels:
    WorkloadSchedulingBlocked with the scheduler's message, then a normal finish."""
    kube = trainer_kube
    sim_fleet.start("healthy.yaml", nodes=1, racks=1)
    controller.start()
    e2e.hold_gpus(kube, namespace, "gpu-node-01")
    e2e.apply(kube, e2e.certification("tj-blocked", namespace, [
        {"domain": "communication", "variant": "nccl-loopback",
         "options": {"testScale": "intra-node", "schedulingStallGraceSeconds": 2, "timeoutPerJob": "10m"}}]))
    job = e2e.wait_in_progress(kube, "Job", namespace, "WorkloadSchedulingBlocked", 120, controller)
    assert job["status"]["workloadRef"]["kind"] == "TrainJob"
    assert "nvidia.com/gpu" in e2e.true_condition(job, "InProgress")["message"]
    e2e.release_gpus(kube, namespace)
    cert = e2e.wait_terminal(kube, "Certification", "tj-blocked", namespace, 300, controller)
    assert e2e.true_condition(cert, "Succeeded"), cert["status"]
    done = kube.get(NVCRE_API_VERSION, "Job", job["metadata"]["name"], namespace)
    assert done["status"].get("schedulingResumedTime") and not done["status"].get("failedNodes")


TRAINJOB_CHAIN = {"TrainJob": ("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
                  "TrainingRuntime": ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes"),
                  "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets")}


def _verdict(cert: dict) -> tuple:
    st = cert["status"]
    phase = next(c["type"] for c in st["conditions"] if c["status"] == "True" and c["type"] in ("Succeeded", "Failed"))
    return phase, [(c["variant"], c["status"]) for c in st["categoryStatuses"]], sorted(
        (n["name"], n["reason"]) for n in st.get("failedNodes") or [])


def test_sigkilled_controller_creates_each_trainjob_once(trainer_kube, sim_fleet, controller, kubeconfig, namespace, e2e):
    """SIGKILL at random points, restart: the same verdict, and every TrainJob,
    TrainingRuntime and JobSet of the run was created exactly once."""
    kube = trainer_kube
    sim_fleet.start("healthy.yaml", nodes=4, racks=1, time_scale=240.0)
    categories = [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}},
                  {"domain": "communication", "variant": "nccl-loopback",
                   "options": {"testScale": "intra-node", "maxConcurrent": 2}}]
    additions = e2e.Creations(str(kubeconfig), namespace, TRAINJOB_CHAIN)
    rng = random.Random(20261130)
    try:
        controller.start()
        started = time.monotonic()
        e2e.apply(kube, e2e.certification("baseline", namespace, categories))
        expected = _verdict(e2e.wait_terminal(kube, "Certification", "baseline", namespace, 300, controller))
        duration = time.monotonic() - started
        assert expected[0] == "Succeeded", expected
        trials = 3
        for trial in range(trials):
            name = f"trial-{trial}"
            e2e.apply(kube, e2e.certification(name, namespace, categories))
            controller.crash_at_random(rng, duration * 0.8, downtime=1.0)
            cert = e2e.wait_terminal(kube, "Certification", name, namespace, 300, controller)
            assert _verdict(cert) == expected, f"trial {trial} diverged"
        time.sleep(3)  # let the watches see the last events
        assert controller.starts > trials
        assert not additions.duplicates()
        per_run = {run: len({n for n in additions.names("TrainJob") if n.startswith(f"{run}-")})
                   for run in ["baseline"] + [f"trial-{i}" for i in range(trials)]}
        # 2 all-reduce pairs + 4 intra-node loopback groups, in every run
        assert set(per_run.values()) == {6}, per_run
        assert additions.names("TrainingRuntime") == {f"{n}-runtime" for n in additions.names("TrainJob")}
        assert additions.names("JobSet") == additions.names("TrainJob")
    finally:
        additions.close()


def test_chart_rbac_is_enough_for_the_trainjob_path(trainer_kube, sim_fleet, controller, namespace, kubectl, helm,
                                                   control_plane, tmp_path, repo_root, e2e):
    """The controller as the chart's ServiceAccount (cluster-scoped RBAC, nothing more):
    discovering TrainJob, creating runtime and TrainJob, reading JobSet pods and their
    logs, cleaning up."""
    kube = trainer_kube
    release, ctl_ns = "nvcre-tj", "nvcre-e2e-tj-rbac"
    rendered = helm("template", release, str(repo_root / "charts" / "nvcre"), "--namespace", ctl_ns,
                    "--set", "rbac.scope=cluster").stdout
    rbac = [d for d in yaml.safe_load_all(rendered)
            if d and d.get("kind") in ("ClusterRole", "ClusterRoleBinding", "ServiceAccount")]
    kubectl("create", "namespace", ctl_ns, check=False)
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))
    try:
        token = kubectl("-n", ctl_ns, "create", "token", release, "--duration", "1h").stdout.strip()
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "sa",
                  "clusters": [{"name": "c", "cluster": {"server": control_plane.server,
                                                         "certificate-authority": str(control_plane.ca_cert)}}],
                  "users": [{"name": "sa", "user": {"token": token}}],
                  "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}]}
        (tmp_path / "sa.kubeconfig").write_text(yaml.safe_dump(config))
        sim_fleet.start("healthy.yaml", nodes=2, racks=1)
        controller.kubeconfig = str(tmp_path / "sa.kubeconfig")
        controller.start()
        e2e.apply(kube, e2e.certification("tj-rbac", namespace, [
            {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "full-scale"}}]))
        cert = e2e.wait_terminal(kube, "Certification", "tj-rbac", namespace, 300, controller)
        assert e2e.true_condition(cert, "Succeeded"), cert["status"]
        (job,) = kube.list(NVCRE_API_VERSION, "Job", namespace)
        assert job["status"]["workloadRef"]["kind"] == "TrainJob"
        assert job["status"]["measurements"]["busBandwidthGBps"] > 0
        e2e.wait_for(lambda: not kube.list(TRAINER_API, "TrainJob", namespace)
                     and not kube.list(TRAINER_API, "TrainingRuntime", namespace), 60, "the TrainJob to be cleaned up")
    finally:
        kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=yaml.safe_dump_all(rbac), check=False)
        kubectl("delete", "namespace", ctl_ns, "--wait=false", check=False)
