"""The real kube-scheduler decides placement: a pod asking for more GPUs than any node
has stays Pending with PodScheduled=False, reason Unschedulable."""

from __future__ import annotations

import datetime as dt
import secrets

import pytest
from kubernetes import client

from nvcre.testbed.waiting import wait_until


@pytest.fixture
def gpu_node(api_client):
    """A Ready Node with 8 allocatable GPUs and a label only this test selects."""
    core = client.CoreV1Api(api_client)
    name = f"gpu-node-{secrets.token_hex(3)}"
    label = {"nvcre.nvidia.com/test-node": name}
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name, labels=label)))
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    core.patch_node_status(
        name,
        {
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "test node",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            }
        },
    )
    try:
        yield name, label
    finally:
        core.delete_node(name)


def _gpu_pod(name: str, gpus: int, selector: dict[str, str]) -> client.V1Pod:
    amount = {"nvidia.com/gpu": str(gpus)}
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            node_selector=selector,
            restart_policy="Never",
            containers=[
                client.V1Container(
                    name="main",
                    image="busybox",
                    command=["true"],
                    resources=client.V1ResourceRequirements(requests=amount, limits=amount),
                )
            ],
        ),
    )


def _scheduled_condition(core: client.CoreV1Api, namespace: str, pod: str):
    current = core.read_namespaced_pod(pod, namespace)
    for condition in current.status.conditions or []:
        if condition.type == "PodScheduled":
            return current, condition
    return None


def test_pod_wanting_more_gpus_than_the_node_has_is_unschedulable(api_client, namespace, gpu_node):
    core = client.CoreV1Api(api_client)
    node, selector = gpu_node

    # Control: 8 GPUs fit, so the scheduler does see the node and its GPUs.
    core.create_namespaced_pod(namespace, _gpu_pod("fits", 8, selector))
    bound = wait_until(
        lambda: core.read_namespaced_pod("fits", namespace).spec.node_name,
        what="the scheduler to bind the 8-GPU pod",
    )
    assert bound == node
    # No kubelet will confirm a graceful deletion; free the GPUs right away.
    core.delete_namespaced_pod("fits", namespace, grace_period_seconds=0)
    wait_until(
        lambda: not core.list_namespaced_pod(namespace, field_selector="metadata.name=fits").items,
        what="the 8-GPU pod to be deleted",
    )

    core.create_namespaced_pod(namespace, _gpu_pod("too-big", 16, selector))
    pod, condition = wait_until(
        lambda: _scheduled_condition(core, namespace, "too-big"),
        what="the scheduler to set PodScheduled on the 16-GPU pod",
    )
    assert condition.status == "False"
    assert condition.reason == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in condition.message
    assert pod.status.phase == "Pending"
    assert not pod.spec.node_name
