"""Reconcilers against an in-memory API: level-triggered and idempotent.

The same state in gives the same writes out: reconciling again creates nothing new,
and a pass that finds its children already there adopts them.
"""

from __future__ import annotations

import copy
import pytest

from nvcre.controller import conditions as c
from nvcre.controller.reconcilers.certification import reconcile_certification
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.workflow import reconcile_workflow
from nvcre.sim.fleet import FleetSpec, build_fleet

from fake_kube import FakeKube

API = "nvcre.nvidia.com/v1alpha1"


@pytest.fixture
def world():
    fleet = build_fleet(FleetSpec(nodes=4, racks=1))
    kube = FakeKube(fleet.nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: 1_800_000_000.0)
    kube.add({
        "apiVersion": API, "kind": "Certification",
        "metadata": {"name": "cert", "namespace": "ns"},
        "spec": {"target": {}, "categories": [
            {"domain": "communication", "variant": "nccl-loopback", "options": {"testScale": "intra-node"}},
            {"domain": "training", "variant": "nemotron5-8b"},
        ]},
    })
    return kube, ctx


def test_certification_first_pass_seeds_and_creates_one_workflow(world):
    kube, ctx = world
    reconcile_certification(ctx, "ns", "cert")
    reconcile_certification(ctx, "ns", "cert")  # again: nothing new
    assert [k for k, _ in kube.creates] == ["Workflow"]
    cert = kube.get(API, "Certification", "cert", "ns")
    st = cert["status"]
    assert [e["status"] for e in st["categoryStatuses"]] == ["InProgress", "Pending"]
    assert c.reason_of(st["conditions"], c.IN_PROGRESS) == "WorkflowCreated"
    assert st["totalNodes"] == 4 and st["summary"]["result"] == "RUNNING"
    assert ("Normal", "WorkflowCreated") in kube.events


def test_workflow_plans_then_launches_each_group_once(world):
    kube, ctx = world
    reconcile_certification(ctx, "ns", "cert")
    wf_name = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf_name)  # plan
    wf = kube.get(API, "Workflow", wf_name, "ns")
    assert [g["name"] for g in wf["status"]["orchestration"]["groups"]] == [f"group-{i}" for i in range(4)]
    reconcile_workflow(ctx, "ns", wf_name)  # launch
    reconcile_workflow(ctx, "ns", wf_name)  # poll: nothing new
    jobs = [n for k, n in kube.creates if k == "Job"]
    assert len(jobs) == 4 and len(set(jobs)) == 4
    wf = kube.get(API, "Workflow", wf_name, "ns")
    assert all(g["phase"] == "Running" for g in wf["status"]["orchestration"]["groups"])
    # a controller that lost its status write finds the Jobs and adopts them
    for g in wf["status"]["orchestration"]["groups"]:
        g.pop("jobRef")
        g.pop("startTime")
        g["phase"] = "Pending"
    kube.objects[(f"{API}/Workflow", "ns", wf_name)]["status"] = wf["status"]
    ctx.cache.put(copy.deepcopy(kube.objects[(f"{API}/Workflow", "ns", wf_name)]))  # the watch has it too
    reconcile_workflow(ctx, "ns", wf_name)
    assert len([n for k, n in kube.creates if k == "Job"]) == 4
    wf = kube.get(API, "Workflow", wf_name, "ns")
    assert all(g.get("jobRef") for g in wf["status"]["orchestration"]["groups"])  # adopted


def test_a_planned_workflow_is_read_from_the_cache(world):
    """Its passes follow every status write of its Jobs: no GET of a fleet-sized object each time."""
    kube, ctx = world
    reconcile_certification(ctx, "ns", "cert")
    wf_name = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf_name)  # plan (read live: not planned yet)
    read_live = []
    real_get = kube.get
    kube.get = lambda api, kind, *a, **kw: read_live.append(kind) or real_get(api, kind, *a, **kw)
    reconcile_workflow(ctx, "ns", wf_name)  # launch
    reconcile_workflow(ctx, "ns", wf_name)
    assert "Workflow" not in read_live
    assert len([n for k, n in kube.creates if k == "Job"]) == 4


def test_a_foreign_workflow_with_our_name_is_a_collision(world):
    kube, ctx = world
    from nvcre.controller import naming

    name = naming.workflow_name("cert", "communication", "nccl-loopback", {"testScale": "intra-node"})
    kube.add({"apiVersion": API, "kind": "Workflow", "metadata": {"name": name, "namespace": "ns"}, "spec": {}})
    reconcile_certification(ctx, "ns", "cert")
    cert = kube.get(API, "Certification", "cert", "ns")
    assert c.reason_of(cert["status"]["conditions"], c.FAILED) == "WorkflowNameCollision"


def test_retry_failed_groups_runs_a_failed_group_again_under_a_new_job(world):
    kube, ctx = world
    reconcile_certification(ctx, "ns", "cert")
    wf_name = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    kube.objects[(f"{API}/Workflow", "ns", wf_name)]["spec"]["orchestration"]["execution"]["retryFailedGroups"] = 1
    reconcile_workflow(ctx, "ns", wf_name)  # plan
    reconcile_workflow(ctx, "ns", wf_name)  # launch
    first = sorted(n for k, n in kube.creates if k == "Job")
    job = kube.objects[(f"{API}/Job", "ns", first[0])]
    job["status"] = {"conditions": [], "failedNodes": [{"name": job["spec"]["nodes"][0], "reason": "WorkloadFailed"}]}
    c.set_status_phase(job["status"], c.FAILED, "WorkloadFailed", "exit 1")
    ctx.metrics.store.put(dict(job, apiVersion=API, kind="Job"))
    reconcile_workflow(ctx, "ns", wf_name)  # sees the failure: retry
    wf = kube.get(API, "Workflow", wf_name, "ns")
    group = next(g for g in wf["status"]["orchestration"]["groups"] if g["nodes"] == job["spec"]["nodes"])
    assert group["phase"] == "Pending" and group["retries"] == 1
    assert wf["status"]["failedNodes"] == [{"name": job["spec"]["nodes"][0], "reason": "WorkloadFailed"}]
    reconcile_workflow(ctx, "ns", wf_name)  # relaunch under its own name
    jobs = [n for k, n in kube.creates if k == "Job"]
    assert len(jobs) == 5 and len(set(jobs)) == 5
    assert any("-r1" in n for n in jobs)


def test_a_detector_that_cannot_be_evaluated_is_reported_not_swallowed(world):
    """An evaluation error at run time: NodeHealthMonitorError condition, a Warning Event,
    and the report's Health line (the reference only logs it, so the detector never fires)."""
    from nvcre.controller.reconcilers.job import reconcile_job
    from nvcre.report.category import health_check_problem

    kube, ctx = world
    reconcile_certification(ctx, "ns", "cert")
    wf_name = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf_name)
    reconcile_workflow(ctx, "ns", wf_name)
    job_name = next(n for k, n in kube.creates if k == "Job")
    key = (f"{API}/Job", "ns", job_name)
    # declared variable, but a key no Node has: fails on every node at run time
    kube.objects[key]["spec"]["nodeHealthMonitor"] = {"cel": {"expression": "node.status.allocatable['example.com/nic'] == '0'"}}
    reconcile_job(ctx, "ns", job_name)
    reconcile_job(ctx, "ns", job_name)
    job = kube.get(API, "Job", job_name, "ns")
    cond = c.find(job["status"]["conditions"], c.HEALTH_CHECK_ERROR)
    assert cond and cond["status"] == "True" and cond["reason"] == "DetectorEvaluationFailed"
    assert "could not be evaluated" in cond["message"] and "example.com/nic" in cond["message"]
    assert kube.events.count(("Warning", "NodeHealthMonitorError")) == 1  # once, not every pass
    assert health_check_problem([job]) == cond["message"]


def test_an_alias_category_runs_under_the_reference_name(world):
    """nccl-all-to-all (nvcre's old spelling) is accepted; objects and statuses carry nccl-alltoall."""
    kube, ctx = world
    kube.add({
        "apiVersion": API, "kind": "Certification", "metadata": {"name": "a2a", "namespace": "ns"},
        "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-to-all"}]},
    })
    reconcile_certification(ctx, "ns", "a2a")
    st = kube.get(API, "Certification", "a2a", "ns")["status"]
    assert c.reason_of(st["conditions"], c.IN_PROGRESS) == "WorkflowCreated", st
    assert st["categoryStatuses"][0]["variant"] == "nccl-alltoall"
    assert "communication/nccl-alltoall" in c.message_of(st["conditions"], c.IN_PROGRESS)
    wf = kube.get(API, "Workflow", st["categoryStatuses"][0]["workflowRef"]["name"], "ns")
    assert wf["metadata"]["name"] == "a2a-communication-nccl-alltoall"
    assert wf["metadata"]["labels"]["nvcre.nvidia.com/category-variant"] == "nccl-alltoall"
    assert wf["spec"]["category"] == "communication/nccl-alltoall"


def test_gcp_h100_renders_what_the_cluster_says_networks_and_tcpxo_plugin():
    """The Workflow controller reads the GPU NIC networks from node allocatable and the
    TCPXO plugin version from the installer pods; a node without the networks warns."""
    import json as _json

    fleet = build_fleet(FleetSpec(nodes=3, racks=1, platform="gcp", gpu="h100"))
    nets = [f"a3-nic-{i}" for i in range(1, 9)]
    nodes = []
    for i, node in enumerate(fleet.nodes):
        node = copy.deepcopy(node)
        alloc = node.setdefault("status", {}).setdefault("allocatable", {})
        for key in [k for k in alloc if k.startswith("networking.gke.io.networks/")]:
            del alloc[key]  # the simulated fleet's own names; these nodes use others
        for net in (nets if i < 2 else nets[:7]):  # the third node lacks one network
            alloc[f"networking.gke.io.networks/{net}"] = "1"
        nodes.append(node)
    kube = FakeKube(nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: 1_800_000_000.0)
    image = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.17"
    kube.add({"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "nccl-tcpxo-installer-x", "namespace": "kube-system", "labels": {"k8s-app": "nccl-tcpxo-installer"}},
              "spec": {"initContainers": [{"name": "installer", "image": image}], "containers": []}})
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "g", "namespace": "ns"},
              "spec": {"target": {"nodeNames": [n["metadata"]["name"] for n in nodes[:2]]},
                       "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}})
    reconcile_certification(ctx, "ns", "g")
    wf_name = kube.get(API, "Certification", "g", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf_name)
    reconcile_workflow(ctx, "ns", wf_name)
    job = kube.get(API, "Job", next(n for k, n in kube.creates if k == "Job"), "ns")
    text = _json.dumps(job["spec"]["workload"])
    assert '\\"network\\":\\"a3-nic-8\\"' in text and "vpc1" not in text
    assert "tcpgpudmarxd-dev:v1.0.23" in text and "pytorch:26.01-py3" in text and "25.06" not in text
    assert ("Warning", "GKENetworkDetection") not in kube.events and ("Warning", "TCPXOPluginDetection") not in kube.events

    # all three nodes: one lacks a network -> the defaults and a Warning on the Workflow
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "h", "namespace": "ns"},
              "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-gather"}]}})
    reconcile_certification(ctx, "ns", "h")
    wf2 = kube.get(API, "Certification", "h", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf2)
    assert ("Warning", "GKENetworkDetection") in kube.events


def test_onprem_gb200_nic_resource_is_detected_or_the_reason_reported():
    """On-prem GB200 without nicResourceName: the one NIC resource every node has enough of
    is requested; none -> nothing requested and a Normal NICResourceDetection event."""
    import json as _json

    fleet = build_fleet(FleetSpec(nodes=2, racks=1, platform="onprem", gpu="gb200"))
    kube = FakeKube(fleet.nodes)  # the simulated on-prem nodes advertise rdma/ib: 1k
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: 1_800_000_000.0)
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "o", "namespace": "ns"},
              "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}})
    reconcile_certification(ctx, "ns", "o")
    wf_name = kube.get(API, "Certification", "o", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf_name)
    reconcile_workflow(ctx, "ns", wf_name)
    job = kube.get(API, "Job", next(n for k, n in kube.creates if k == "Job"), "ns")
    assert '"rdma/ib": "8"' in _json.dumps(job["spec"]["workload"])
    assert ("Normal", "NICResourceDetection") not in kube.events

    for key, node in list(kube.objects.items()):  # take the NICs away: nothing to pick
        if key[0] == "v1/Node":
            node["status"]["allocatable"].pop("rdma/ib", None)
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "p", "namespace": "ns"},
              "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-gather"}]}})
    reconcile_certification(ctx, "ns", "p")
    wf2 = kube.get(API, "Certification", "p", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf2)
    reconcile_workflow(ctx, "ns", wf2)
    assert ("Normal", "NICResourceDetection") in kube.events
    jobs = [kube.get(API, "Job", n, "ns") for k, n in kube.creates if k == "Job"]
    assert not any('"rdma/ib"' in _json.dumps(j["spec"]["workload"]) for j in jobs if j and j["metadata"]["name"].startswith("p-"))


def test_unknown_architecture_sizing_is_announced_once_per_category():
    """GPUArchitectureDefaults (ADR-092): an architecture without hardware defaults is sized
    by the fallback; the Certification says so when the category's Workflow is created."""
    fleet = build_fleet(FleetSpec(nodes=2, racks=1, platform="onprem", gpu="h100"))
    nodes = copy.deepcopy(fleet.nodes)
    for node in nodes:
        node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-X900-96GB"
    kube = FakeKube(nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: 1_800_000_000.0)
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "x", "namespace": "ns"},
              "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-loopback"}]}})
    reconcile_certification(ctx, "ns", "x")
    reconcile_certification(ctx, "ns", "x")
    assert kube.events.count(("Warning", "GPUArchitectureDefaults")) == 1


def test_a_failed_category_leaves_a_workflow_failed_event_on_the_certification(world):
    kube, ctx = world
    reconcile_certification(ctx, "ns", "cert")
    wf_name = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    key = (f"{API}/Workflow", "ns", wf_name)
    wf = kube.objects[key]
    wf.setdefault("status", {})["conditions"] = [
        {"type": "Failed", "status": "True", "reason": "IterationsFailed", "message": "1 groups failed across 1 iterations",
         "lastTransitionTime": "2026-11-30T00:00:00Z"},
    ]
    kube.events.clear()
    reconcile_certification(ctx, "ns", "cert")
    reconcile_certification(ctx, "ns", "cert")
    st = kube.get(API, "Certification", "cert", "ns")["status"]
    assert st["categoryStatuses"][0]["status"] == "Failed"
    assert kube.events.count(("Warning", "WorkflowFailed")) == 1, kube.events
    assert st["categoryStatuses"][1]["status"] == "InProgress"  # not the final verdict: the category Event


def _finish_workflow(kube, name: str, kind: str, reason: str) -> None:
    kube.objects[(f"{API}/Workflow", "ns", name)].setdefault("status", {})["conditions"] = [
        {"type": kind, "status": "True", "reason": reason, "message": reason, "lastTransitionTime": "2026-11-30T00:00:00Z"}]


def test_duplicates_with_different_options_run_as_distinct_workflows_and_count_once_each():
    """Issue 13: the same domain/variant listed twice with options the name suffix does not
    show (thresholds) was merged into one Workflow and counted twice. Each listing must get
    its own Workflow (naming.category_workflow_name: an options hash) and its own verdict."""
    from nvcre.controller import naming

    fleet = build_fleet(FleetSpec(nodes=4, racks=1))
    kube = FakeKube(fleet.nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: 1_800_000_000.0)
    categories = [
        {"domain": "communication", "variant": "nccl-loopback", "options": {"thresholds": {"busBandwidthGBps": "value >= 100"}}},
        {"domain": "communication", "variant": "nccl-loopback", "options": {"thresholds": {"busBandwidthGBps": "value >= 900"}}},
        {"domain": "communication", "variant": "nccl-loopback"},
    ]
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "dup", "namespace": "ns"},
              "spec": {"target": {}, "categories": copy.deepcopy(categories)}})
    expected = [naming.category_workflow_name("dup", categories, i) for i in range(3)]
    assert len(set(expected)) == 3
    outcomes = [("Failed", "IterationsFailed"), ("Succeeded", "AllIterationsSucceeded"), ("Succeeded", "AllIterationsSucceeded")]
    for index, (kind, reason) in enumerate(outcomes):
        reconcile_certification(ctx, "ns", "dup")  # records the previous verdict
        reconcile_certification(ctx, "ns", "dup")  # starts this listing's Workflow
        st = kube.get(API, "Certification", "dup", "ns")["status"]
        assert st["categoryStatuses"][index]["workflowRef"]["name"] == expected[index]
        wf = kube.get(API, "Workflow", expected[index], "ns")
        if "options" in categories[index]:  # each Workflow judges by its own listing's thresholds
            judged = wf["spec"]["validation"]["performance"]["thresholds"]["thresholds"]
            assert judged == categories[index]["options"]["thresholds"], judged
        _finish_workflow(kube, expected[index], kind, reason)
    reconcile_certification(ctx, "ns", "dup")
    reconcile_certification(ctx, "ns", "dup")
    st = kube.get(API, "Certification", "dup", "ns")["status"]
    assert sorted(n for k, n in kube.creates if k == "Workflow") == sorted(expected)  # one each, none shared
    assert [e["status"] for e in st["categoryStatuses"]] == ["Failed", "Succeeded", "Succeeded"]
    assert [e["workflowRef"]["name"] for e in st["categoryStatuses"]] == expected
    summary = st["summary"]
    assert (summary["categoriesPassed"], summary["categoriesFailed"], summary["result"]) == ("2/3", 1, "FAILED"), summary
