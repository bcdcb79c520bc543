"""`workloadrun status`/`cancel` and the run flags: the pure parts (the cluster parts are
in tests/e2e/test_cli_workloadrun_ops.py)."""

from __future__ import annotations

import pytest

from nvcre.cli.workloadrun_ops import AUTO_KEY, apply_run_flags, cancel_one, resolve_auto_key, run_phase
from nvcre.errors import UserError


def _run(**spec):
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun", "metadata": {"name": "r"},
            "spec": {"image": "x", "numNodes": 4, "framework": {"exec": {"command": ["true"]}}, **spec}}


def _cond(kind, status="True"):
    return {"type": kind, "status": status, "reason": "R", "message": f"{kind} now"}


def test_phase_is_pending_until_a_condition_is_true():
    assert run_phase({}) == "Pending"
    assert run_phase({"status": {"conditions": [_cond("InProgress", "False")]}}) == "Pending"
    assert run_phase({"status": {"conditions": [_cond("InProgress")]}}) == "InProgress"
    assert run_phase({"status": {"conditions": [_cond("InProgress", "False"), _cond("Failed")]}}) == "Failed"
    assert run_phase({"status": {"conditions": [_cond("Succeeded"), _cond("ValidationFailed")]}}) == "Succeeded"


def test_node_list_sets_the_names_and_lowers_num_nodes():
    run = _run()
    assert apply_run_flags(run, node_list="a, b") == ["--node-list"]
    assert run["spec"]["target"]["nodeNames"] == ["a", "b"] and run["spec"]["numNodes"] == 2
    grown = _run(numNodes=1)
    apply_run_flags(grown, node_list="a,b,c")
    assert grown["spec"]["numNodes"] == 1  # never raised
    for bad, word in ((",", "one or more"), ("a,a", "twice")):
        with pytest.raises(UserError, match=word):
            apply_run_flags(_run(), node_list=bad)


def test_topology_domain_adds_a_match_expression():
    run = _run(target={"nodeSelector": {"nvidia.com/gpu.present": "true"}})
    apply_run_flags(run, topology_domain="rack-1", topology_key="topology.kubernetes.io/rack")
    assert run["spec"]["target"]["matchExpressions"] == [
        {"key": "topology.kubernetes.io/rack", "operator": "In", "values": ["rack-1"]}]
    assert run["spec"]["target"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    with pytest.raises(UserError, match="--topology-key: "):
        apply_run_flags(_run(), topology_domain="rack-1", topology_key="Not A Key")
    with pytest.raises(UserError, match="goes with --topology-domain"):
        apply_run_flags(_run(), topology_key="topology.kubernetes.io/rack")


def test_topology_domain_without_key_uses_the_platform_key():
    run = _run()
    apply_run_flags(run, topology_domain="nn-1")
    assert run["spec"]["target"]["matchExpressions"][0]["key"] == AUTO_KEY
    assert resolve_auto_key(run, "aws") == "topology.k8s.aws/network-node-layer-1"
    assert run["spec"]["target"]["matchExpressions"][0]["key"] == "topology.k8s.aws/network-node-layer-1"
    other = _run()
    apply_run_flags(other, topology_domain="r1")
    with pytest.raises(UserError, match="needs --topology-key on platform 'onprem'"):
        resolve_auto_key(other, "onprem")


def test_test_scale_is_one_a_workloadrun_knows():
    run = _run()
    apply_run_flags(run, test_scale="intra-node")
    assert run["spec"]["orchestration"] == {"testScale": "intra-node"}
    with pytest.raises(UserError, match="not a WorkloadRun test scale"):
        apply_run_flags(_run(), test_scale="diagnose")


class _Kube:
    """Just what cancel reads and writes, in memory."""

    def __init__(self, runs):
        self.runs = {(r["metadata"]["namespace"], r["metadata"]["name"]): r for r in runs}
        self.deleted = []

    def get(self, api_version, kind, name, namespace=None):
        return self.runs.get((namespace, name))

    def list(self, api_version, kind, namespace=None, **_):
        return list(self.runs.values())

    def delete(self, api_version, kind, name, namespace=None, *, uid=None, propagation="Background"):
        run = self.runs.pop((namespace, name), None)
        if run is None or (uid and run["metadata"].get("uid") != uid):
            return False
        self.deleted.append((kind, namespace, name))
        return True


def test_cancel_deletes_the_run_only_and_is_idempotent():
    run = {**_run(), "metadata": {"name": "r", "namespace": "team", "uid": "u1"}}
    kube = _Kube([run])
    ok, line = cancel_one(kube, "r", "team")
    assert ok and "cancelled" in line and kube.deleted == [("WorkloadRun", "team", "r")]
    again, line = cancel_one(kube, "r", "team")
    assert again and "not found in namespace 'team' (nothing to cancel)" in line
    assert kube.deleted == [("WorkloadRun", "team", "r")]


def test_cancel_in_the_wrong_namespace_names_the_right_one():
    kube = _Kube([{**_run(), "metadata": {"name": "r", "namespace": "team", "uid": "u1"}}])
    ok, line = cancel_one(kube, "r", "default")
    assert not ok and "add -n team" in line and not kube.deleted


def test_cancel_of_a_run_being_deleted_says_so():
    kube = _Kube([{**_run(), "metadata": {"name": "r", "namespace": "team", "uid": "u", "deletionTimestamp": "2026-01-01T00:00:00Z"}}])
    ok, line = cancel_one(kube, "r", "team")
    assert ok and "already being cancelled" in line and not kube.deleted


def test_workload_registry_mirrors_the_images_and_adds_the_pull_secret():
    import base64
    import json

    from nvcre.cli.workloadrun_ops import apply_registry

    run = _run(image="nvcr.io/nvidia/pytorch:26.01-py3", initContainers=[{"name": "i", "image": "busybox:1.36"}])
    run["metadata"]["namespace"] = "team"
    assert apply_registry(run, "mirror.local:5000/ngc", None) is None
    assert run["spec"]["image"] == "mirror.local:5000/ngc/nvidia/pytorch:26.01-py3"
    assert run["spec"]["initContainers"][0]["image"] == "mirror.local:5000/ngc/library/busybox:1.36"
    assert "imagePullSecrets" not in run["spec"]
    secret = apply_registry(run, "mirror.local:5000/ngc", ("u", "p"))
    assert run["spec"]["image"] == "mirror.local:5000/ngc/nvidia/pytorch:26.01-py3"  # idempotent
    assert run["spec"]["imagePullSecrets"] == [{"name": "nvcrectl-pull-r"}]
    assert secret["metadata"] == {"name": "nvcrectl-pull-r", "namespace": "team",
                                  "labels": {"app.kubernetes.io/managed-by": "nvcrectl"}}
    config = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    assert config["auths"]["mirror.local:5000"]["username"] == "u"
    with pytest.raises(UserError, match="--workload-registry: 'https://x' is not a registry"):
        apply_registry(_run(), "https://x", None)
