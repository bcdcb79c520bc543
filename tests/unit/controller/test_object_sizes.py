"""Every object the controller writes stays under 1 MiB at 4096 nodes with long names.

A full-scale all-reduce over 4096 GB200 nodes named like real ones, driven through the
real reconcilers (Certification, Workflow, Job) against an in-memory API whose watch
cache is synced: the workload is created, all 4096 worker pods run, and the run either
succeeds or fails on every node. The largest object written in either case (the
Certification, the Workflow, the Job with its status, the rendered batch Jobs, the
hostfile, the workload and node-result ConfigMaps) is checked against 1 MiB.

Objects that carry pods (the rendered batch Jobs and TrainJobs, and so every pod) are
held to a much smaller bound, because every pod is stored once per node: a Pinned group
is placed by its exceptions (``nvcre.workloads.placement``), not by every hostname.
"""

from __future__ import annotations

import json

import pytest

from nvcre.api.certification import CertificationStatus
from nvcre.catalog.resolve import resolve_category
from nvcre.api.job import JobStatus
from nvcre.api.workflow import WorkflowStatus
from nvcre.controller import conditions as c
from nvcre.controller import node_results
from nvcre.controller.reconcilers.certification import reconcile_certification
from nvcre.controller.context import Context, Settings, format_time
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.controller.reconcilers.workflow import reconcile_workflow
from nvcre.sim.fleet import FleetSpec, build_fleet
from nvcre.workloads.placement import labels_by_name
from nvcre.workloads.render import render_workload

from fake_kube import FakeKube

API = "nvcre.nvidia.com/v1alpha1"
MiB = 1024 * 1024
NODES = 4096
PREFIX = "dgx-gb200-nvl72-su01-rack-a01-compute-node-x"  # 49-character names, like real fleets'
NOW = 1_800_000_000.0
POD_CARRIER_BOUND = 16 * 1024  # a rendered object with a pod template (each pod is about this size)
RACK_KEY = "topology.kubernetes.io/rack"


class SizedKube(FakeKube):
    """Records the size of every object as written (create and status update)."""

    def __init__(self, nodes):
        super().__init__(nodes)
        self.written: dict[str, int] = {}

    def _note(self, obj):
        key = f"{obj['kind']}/{obj['metadata']['name']}"
        self.written[key] = max(self.written.get(key, 0), len(json.dumps(obj)))

    def create(self, obj, namespace=None):
        got, created = super().create(obj, namespace)
        if created:
            self._note(got)
        return got, created

    def update_status(self, *args, **kwargs):
        got = super().update_status(*args, **kwargs)
        if got is not None:
            self._note(got)
        return got


def _pod(job, name, role, node, phase, code):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "labels": {"nvcre.nvidia.com/job": job, "nvcre.nvidia.com/role": role}},
            "spec": {"nodeName": node, "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "4"}} if role == "worker" else {}}]},
            "status": {"phase": phase, "containerStatuses": [{"name": "main", "state": {"terminated": {
                "exitCode": code, "reason": "Error" if code else "Completed", "finishedAt": format_time(NOW),
                "startedAt": format_time(NOW - 60)}}}]}}


def _run(healthy: bool) -> tuple[SizedKube, str]:
    fleet = build_fleet(FleetSpec(nodes=NODES, racks=NODES // 16, platform="onprem", gpu="gb200", name_prefix=PREFIX))
    names = [n["metadata"]["name"] for n in fleet.nodes]
    assert len(names[0]) >= 48
    kube = SizedKube(fleet.nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "cert", "namespace": "ns"},
              "spec": {"target": {}, "categories": [
                  {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "full-scale"}}]}})
    reconcile_certification(ctx, "ns", "cert")
    wf = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    if healthy:  # no thresholds: a completed run passes
        kube.objects[(f"{API}/Workflow", "ns", wf)]["spec"].pop("validation", None)
    reconcile_workflow(ctx, "ns", wf)
    reconcile_workflow(ctx, "ns", wf)
    job = next(n for k, n in kube.creates if k == "Job")
    ctx.cache.replace("Node", [o for (k, _, _), o in kube.objects.items() if k == "v1/Node"])
    reconcile_job(ctx, "ns", job)  # creates the workload
    batch = {o["metadata"]["name"]: o for (k, _, _), o in kube.objects.items() if k == "batch/v1/Job"}
    assert len(batch) == 2
    pods = [_pod(job, f"{job}-launcher", "launcher", names[0], "Succeeded" if healthy else "Failed", 0 if healthy else 1)]
    pods += [_pod(job, f"{job}-worker-{i}", "worker", n, "Succeeded", 0) for i, n in enumerate(names)]
    ctx.cache.replace("Pod", pods)
    for name, obj in batch.items():
        done = "Complete" if healthy or "worker" in name else "Failed"
        obj["status"] = {"conditions": [{"type": done, "status": "True", "lastTransitionTime": format_time(NOW)}]}
    ctx.cache.replace("batch.Job", list(batch.values()))
    reconcile_job(ctx, "ns", job)
    jst = kube.get(API, "Job", job, "ns")["status"]
    assert c.phase_of(jst["conditions"]) == (c.SUCCEEDED if healthy else c.FAILED), jst["conditions"]
    for obj in kube.objects.values():
        if obj.get("kind") == "Job" and obj.get("apiVersion") == API:
            ctx.cache.put(obj)
    reconcile_workflow(ctx, "ns", wf)
    reconcile_certification(ctx, "ns", "cert")
    return kube, wf


@pytest.mark.parametrize("healthy", [True, False], ids=["healthy", "all-failed"])
def test_every_object_written_stays_under_one_mib_at_4096_nodes(healthy):
    kube, wf = _run(healthy)
    largest = max(kube.written.items(), key=lambda kv: kv[1])
    assert largest[1] < MiB, sorted(kube.written.items(), key=lambda kv: -kv[1])[:5]
    batch = {k: size for k, size in kube.written.items() if k.startswith("Job/") and "-workload" in k}
    assert batch and max(batch.values()) < POD_CARRIER_BOUND, batch  # the controller placed the group compactly
    models = {"Job": JobStatus, "Workflow": WorkflowStatus, "Certification": CertificationStatus}
    for obj in kube.objects.values():
        assert len(json.dumps(obj)) < MiB, obj["metadata"]["name"]
        if obj.get("apiVersion") == API and obj["kind"] in models and obj.get("status"):
            models[obj["kind"]].model_validate(obj["status"])  # the CRD schema's model: nothing unknown, nothing too long
    wst = kube.get(API, "Workflow", wf, "ns")["status"]
    assert c.phase_of(wst["conditions"]) == (c.SUCCEEDED if healthy else c.FAILED)
    cert = kube.get(API, "Certification", "cert", "ns")["status"]
    if healthy:
        assert not wst.get("failedNodes")
        cm = kube.get("v1", "ConfigMap", wst["succeededNodesRef"]["name"], "ns")
        assert len(node_results.decode_succeeded(cm)) == NODES
    else:
        # the Job lists the first entries and counts all; the Workflow names every node
        assert wst["failedNodeCount"] == NODES and len(wst["failedNodes"]) == NODES
        cm = kube.get("v1", "ConfigMap", wst["failedNodesRef"]["name"], "ns")
        assert len(node_results.decode_failed(cm)) == NODES
        assert cert["categoryStatuses"][0]["failedNodeCount"] == NODES
    # the rendered workload went to its ConfigMap; the Job points at it
    job = next(o for o in kube.objects.values() if o.get("kind") == "Job" and o.get("apiVersion") == API)
    assert "objectsRef" in job["spec"]["workload"]["native"] and "objects" not in job["spec"]["workload"]["native"]



def _fleet():
    fleet = build_fleet(FleetSpec(nodes=NODES, racks=NODES // 16, platform="onprem", gpu="gb200", name_prefix=PREFIX))
    return fleet.nodes, labels_by_name(fleet.nodes)


def _groups(nodes) -> dict[str, list[str]]:
    names = [n["metadata"]["name"] for n in nodes]
    rack = {n["metadata"]["name"]: n["metadata"]["labels"][RACK_KEY] for n in nodes}
    racks = sorted(set(rack.values()))
    half = set(racks[: len(racks) // 2])
    return {
        "full-scale": [n for i, n in enumerate(names) if i % 997 != 5],  # a few nodes left out (cordoned, sick)
        "half-the-racks": [n for i, n in enumerate(names) if rack[n] in half and i % 331 != 7],
        "one-rack": [n for n in names if rack[n] == racks[3]],
    }


@pytest.mark.parametrize("adapter", ["native", "trainjob"])
@pytest.mark.parametrize("category", ["communication/nccl-all-reduce", "training/nemotron5-8b"])
def test_rendered_pod_carriers_stay_small_at_4096_nodes(adapter, category):
    """Every object holding a pod template (batch Job, TrainJob, TrainingRuntime) is under 16 KiB at 4096
    nodes with 49-character names, for the full fleet and for rack groups, with the Nodes
    known (as the controller renders); the hostname list alone was ~200 KiB a pod."""
    nodes, fleet = _fleet()
    domain, variant = category.split("/")
    resolved = resolve_category({"domain": domain, "variant": variant}, None, platform="onprem", gpu_arch="gb200")
    for shape, group in _groups(nodes).items():
        objects = render_workload(resolved, name="w", namespace="ns", nodes=group, adapter=adapter, fleet=fleet)
        carriers = [o for o in objects if o["kind"] in ("Job", "TrainJob", "TrainingRuntime")]
        assert carriers, (shape, [o["kind"] for o in objects])
        for obj in carriers:
            size = len(json.dumps(obj))
            assert size < POD_CARRIER_BOUND, (shape, obj["kind"], obj["metadata"]["name"], size)


def test_a_fleet_wide_health_event_keeps_the_job_status_small():
    # 4096 nodes turn NotReady while the Job runs (a lost control plane, a power event): every
    # node is listed, the first MESSAGE_ENTRIES with their 1 KiB message, the rest name and reason
    from nvcre.controller.decide.job_pass import MESSAGE_ENTRIES, MESSAGE_LIMIT, health_entries

    names = [f"{PREFIX}-{i:04d}" for i in range(NODES)]
    first = {n: "x" * 4 * MESSAGE_LIMIT for n in names[:10]}
    listed, _ = c.merge_failed_nodes([], health_entries([], first))
    rest = {n: "NodeNotReady: " + "y" * 2 * MESSAGE_LIMIT for n in names}
    listed, _ = c.merge_failed_nodes(listed, health_entries(listed, rest))
    assert {n["name"] for n in listed} == set(names)
    with_message = [n for n in listed if n.get("message")]
    assert len(with_message) == MESSAGE_ENTRIES and all(len(n["message"]) == MESSAGE_LIMIT for n in with_message)
    assert len(json.dumps(listed)) < 480 * 1024  # was over 4 MiB of messages
    # the whole Job with every list at its longest: the group, where ranks ran, the sick nodes and
    # the longest logs the status keeps (8 pods x 8 KiB, 32 KiB failure log) stays under 1 MiB
    logs = [{"pod": f"p-{i}", "lines": ["z" * 8192]} for i in range(8)]
    job = {"spec": {"nodes": names}, "status": {"nodesRan": names, "failedNodes": listed, "failedNodeCount": NODES,
                                                "podLogs": logs, "failureLog": "w" * 32 * 1024}}
    assert len(json.dumps(job)) < MiB
