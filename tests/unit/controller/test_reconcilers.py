"""Reconcilers against an in-memory API: level-triggered and idempotent.

The same state in gives the same writes out: reconciling again creates nothing new,
and a pass that finds its children already there adopts them.
"""

from __future__ import annotations

import pytest

from nvcre.controller import conditions as c
from nvcre.controller.certification import reconcile_certification
from nvcre.controller.context import Context, Settings
from nvcre.controller.workflow import reconcile_workflow
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
    reconcile_workflow(ctx, "ns", wf_name)
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
