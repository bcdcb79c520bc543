"""Startup stalls and vanished nodes: detected for every workload, with their reason."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from test_reconcilers import FakeKube  # noqa: E402  (same directory)

from nvcre.controller import conditions as c
from nvcre.controller import faults
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.sim.fleet import FleetSpec, build_fleet

API = "nvcre.nvidia.com/v1alpha1"
NOW = 1_800_000_000.0


def _stamp(seconds_ago: float) -> str:
    return datetime.fromtimestamp(NOW - seconds_ago, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(name="w-0", node="n1", *, reason="ContainerCreating", ago=700.0, phase="Pending", init=False, message="") -> dict:
    waiting = {"reason": reason, **({"message": message} if message else {})}
    key = "initContainerStatuses" if init else "containerStatuses"
    return {"metadata": {"name": name, "namespace": "ns", "labels": {"nvcre.nvidia.com/job": "j"}},
            "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": _stamp(ago)}],
                       key: [{"name": "rank", "state": {"waiting": waiting}}]}}


@pytest.mark.parametrize("reason", sorted(faults.STALLING))
def test_every_stalling_reason_past_the_grace_is_named(reason):
    text = faults.startup_stall([_pod(reason=reason, message="pull access denied")], now=NOW, grace_seconds=600)
    assert text and reason in text and "w-0" in text and "n1" in text and "pull access denied" in text and "700s" in text


def test_within_the_grace_or_not_scheduled_or_done_is_not_a_stall():
    assert faults.startup_stall([_pod(ago=100)], now=NOW, grace_seconds=600) is None
    unscheduled = _pod()
    unscheduled["spec"].pop("nodeName")
    assert faults.startup_stall([unscheduled], now=NOW) is None
    assert faults.startup_stall([_pod(phase="Failed")], now=NOW) is None
    running = _pod(phase="Running")
    running["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": _stamp(1000)}}
    assert faults.startup_stall([running], now=NOW) is None
    assert faults.startup_stall([_pod(reason="CrashLoopBackOff")], now=NOW) is None  # it started: a failure, not a stall


def test_hopeless_images_fail_at_once_and_init_containers_count():
    assert "InvalidImageName" in faults.startup_stall([_pod(reason="InvalidImageName", ago=1)], now=NOW)
    assert "ImagePullBackOff" in faults.startup_stall([_pod(reason="ImagePullBackOff", init=True)], now=NOW)


def test_vanished_nodes():
    present = [{"metadata": {"name": "n1"}}]
    assert faults.vanished_nodes(["n1", "n2"], present) == ["n2"]
    assert faults.vanished_nodes(["n1"], present) == []


@pytest.fixture
def world():
    kube = FakeKube(build_fleet(FleetSpec(nodes=2, racks=1)).nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    nodes = sorted(n["metadata"]["name"] for n in kube.list("v1", "Node"))
    objects = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "w"},
                "spec": {"completions": 2, "parallelism": 2, "template": {"spec": {"containers": [{"name": "rank", "image": "x"}]}}}}]
    kube.add({"apiVersion": API, "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
              "spec": {"nodes": nodes, "timeoutPerJob": "2h", "workload": {"native": {"objects": objects}}}})
    reconcile_job(ctx, "ns", "j")  # creates the workload
    return kube, ctx, nodes


def _add_pods(kube, nodes, **kw):
    for i, node in enumerate(nodes):
        pod = _pod(name=f"w-{i}", node=node, **kw)
        kube.add({"apiVersion": "v1", "kind": "Pod", **pod})


def test_a_stuck_image_pull_fails_the_job_with_workload_startup_stalled(world):
    kube, ctx, nodes = world
    _add_pods(kube, nodes, reason="ImagePullBackOff", message='Back-off pulling image "x"')
    reconcile_job(ctx, "ns", "j")
    st = kube.get(API, "Job", "j", "ns")["status"]
    assert c.reason_of(st["conditions"], c.FAILED) == "WorkloadStartupStalled"
    message = c.message_of(st["conditions"], c.FAILED)
    assert "ImagePullBackOff" in message and "w-0" in message and nodes[0] in message
    assert st["failureLog"]["reason"] == "WorkloadStartupStalled"


def test_a_node_deleted_mid_run_is_named_as_vanished(world):
    kube, ctx, nodes = world
    _add_pods(kube, nodes, reason="ContainerCreating", ago=10)
    kube.delete("v1", "Node", nodes[1])
    reconcile_job(ctx, "ns", "j")
    st = kube.get(API, "Job", "j", "ns")["status"]
    assert c.reason_of(st["conditions"], c.FAILED) == "WorkloadFailed"
    assert "vanished" in c.message_of(st["conditions"], c.FAILED) and nodes[1] in c.message_of(st["conditions"], c.FAILED)
    assert [n["name"] for n in st["failedNodes"]] == [nodes[1]]  # only the vanished node is blamed


def test_the_image_that_ran_is_read_from_the_kubelets_image_id():
    from nvcre.controller.workload_state import image_digest

    pods = [{"status": {"containerStatuses": [{"name": "c", "image": "nvcr.io/nvidia/pytorch:25.06-py3", "imageID": ""}]}},
            {"status": {"containerStatuses": [{"name": "c", "imageID": "nvcr.io/nvidia/pytorch@sha256:" + "a" * 64}]}}]
    assert image_digest(pods) == "nvcr.io/nvidia/pytorch@sha256:" + "a" * 64
    assert image_digest([{"status": {}}]) is None
