"""Pure helpers of the fake kubelet: $(VAR) expansion, what a pod asks for, field refs."""

from __future__ import annotations

from nvcre.sim.kubelet import KubeletConfig
from nvcre.sim.podenv import expand_k8s, field_ref, pod_gpus, pod_requests_rdma


def _pod(**spec):
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "b"},
                         "annotations": {"batch.kubernetes.io/job-completion-index": "3"}},
            "spec": {"nodeName": "gpu-node-01", "containers": [{"name": "c"}], **spec}}


def test_expand_k8s_follows_kubernetes_rules():
    env = {"A": "1", "B": "two"}
    assert expand_k8s("$(A)-$(B)", env) == "1-two"
    assert expand_k8s("$(MISSING)", env) == "$(MISSING)"
    assert expand_k8s("$$(A)", env) == "$(A)"
    assert expand_k8s("$A", env) == "$A"  # shell syntax is left for the shell


def test_rdma_and_gpu_requests():
    assert not pod_requests_rdma(_pod())
    rdma = _pod(containers=[{"name": "c", "resources": {"limits": {"vpc.amazonaws.com/efa": "32", "nvidia.com/gpu": "8"}}}])
    assert pod_requests_rdma(rdma) and pod_gpus(rdma) == 8
    assert pod_requests_rdma(_pod(volumes=[{"name": "ib", "hostPath": {"path": "/dev/infiniband"}}]))
    assert pod_requests_rdma(_pod(containers=[{"name": "c", "resources": {"requests": {"rdma/ib": "1"}}}]))


def test_field_refs():
    pod = _pod()
    assert field_ref(pod, "metadata.annotations['batch.kubernetes.io/job-completion-index']", "10.0.0.1") == "3"
    assert field_ref(pod, "metadata.labels['a']", "") == "b"
    assert field_ref(pod, "status.podIP", "10.64.0.2") == "10.64.0.2"
    assert field_ref(pod, "spec.nodeName", "") == "gpu-node-01"


def test_config_round_trip(tmp_path):
    config = KubeletConfig(kubeconfig="k", state_dir=str(tmp_path), nodes=3,
                           faults=["degraded-nic:node=gpu-node-02,factor=0.5"],
                           scenario={"seed": 9, "faults": [{"type": "slow-gpu", "node": "gpu-node-01", "factor": 0.5}]})
    path = tmp_path / "c.json"
    config.write(path)
    again = KubeletConfig.read(path)
    model = again.fault_model()
    assert model.seed == 9 and model.nic_factor("gpu-node-02") == 0.5 and model.gpu_factor("gpu-node-01") == 0.5
