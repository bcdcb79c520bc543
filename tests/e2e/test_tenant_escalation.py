"""Least privilege at admission, on the real API server (issue 13).

The chart's RBAC, user roles and ValidatingAdmissionPolicy are installed; the controller
runs as the chart's ServiceAccount. A tenant who may create nvcre objects but not pods or
Secrets tries every escalation path (privileged hostPID pod with hostPath /, a Secret, a
ClusterRoleBinding, WorkloadRuns with hostPath / or a privileged init container or a Secret
in the environment, a Certification that swaps the image of a host-access category or asks
for rdmaDeviceAccess hostPath, a Workflow bound to another run by label or owner): each is refused at admission with a message naming what and
the verb. The same tenant's catalog Certification (MPI nccl-all-reduce) runs to Succeeded,
with the SSH key only in a Secret the controller created, owned by the Job. Holding the verb
admits the object; an admin's Job with a cluster-scoped object is failed by the controller
without creating it."""

from __future__ import annotations

import json

import pytest
import yaml

from nvcre.kube.client import ApiError, KubeClient
from nvcre.kube.resources import NVCRE_API_VERSION

CONTROLLER_NS = "nvcre-e2e-lp"
TENANT = "tenant"


def _token_kubeconfig(kubectl, control_plane, tmp_path, namespace: str, sa: str) -> str:
    token = kubectl("-n", namespace, "create", "token", sa, "--duration", "1h").stdout.strip()
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": control_plane.server, "certificate-authority": str(control_plane.ca_cert)}}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": sa, "context": {"cluster": "c", "user": sa}}],
        "current-context": sa,
    }
    path = tmp_path / f"{sa}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _job(namespace: str, name: str, objects: list[dict]) -> dict:
    return {"apiVersion": NVCRE_API_VERSION, "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodes": [], "timeoutPerJob": "5m", "workload": {"native": {"adapter": "native", "objects": objects}}}}


def _root_pod_job(name: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "hostPID": True,
        "containers": [{"name": "x", "image": "busybox", "command": ["sh", "-c", "cat /host/etc/shadow"],
                        "securityContext": {"privileged": True}, "volumeMounts": [{"name": "root", "mountPath": "/host"}]}],
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}}}


def _run(namespace: str, name: str, **spec) -> dict:
    body = {"image": "busybox", "framework": {"exec": {"command": ["true"]}}, "numNodes": 1}
    return {"apiVersion": NVCRE_API_VERSION, "kind": "WorkloadRun", "metadata": {"name": name, "namespace": namespace},
            "spec": {**body, **spec}}


def _refused(client: KubeClient, body: dict, *expected: str) -> str:
    with pytest.raises(ApiError) as caught:
        client.create(body)
    err = caught.value
    assert err.status in (403, 422), (err.status, err.message)
    assert "nvcre least privilege" in err.message, err.message
    for text in expected:
        assert text in err.message, (text, err.message)
    return err.message


def test_tenant_escalations_are_refused_and_a_catalog_run_passes(
        sim_fleet, controller, kube, namespace, kubectl, helm, control_plane, tmp_path, repo_root, e2e):
    served = kubectl("api-resources", "--api-group=admissionregistration.k8s.io", "-o", "name").stdout
    assert "validatingadmissionpolicies" in served and "validatingadmissionpolicybindings" in served
    rendered = helm("template", "nvcre", str(repo_root / "charts" / "nvcre"), "--namespace", CONTROLLER_NS,
                    "--set", f"rbac.runNamespaces={{{namespace}}}").stdout
    wanted = {"ClusterRole", "ClusterRoleBinding", "ServiceAccount", "RoleBinding",
              "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    docs = [d for d in yaml.safe_load_all(rendered) if d and d.get("kind") in wanted]
    assert wanted == {d["kind"] for d in docs}
    assert not any(d["kind"] == "ClusterRoleBinding" and d["roleRef"]["name"].endswith("-run-role") for d in docs)
    kubectl("create", "namespace", CONTROLLER_NS, check=False)
    tenant_rbac = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": TENANT, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "tenant-user", "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nvcre-user"},
         "subjects": [{"kind": "ServiceAccount", "name": TENANT, "namespace": namespace}]},
    ]
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs + tenant_rbac))
    try:
        who = f"system:serviceaccount:{namespace}:{TENANT}"
        for verb, resource in (("create", "pods"), ("create", "secrets"), ("get", "secrets"), ("privileged", "jobs.nvcre.nvidia.com")):
            answer = kubectl("auth", "can-i", verb, resource, "-n", namespace, "--as", who, check=False).stdout.strip()
            assert answer == "no", (verb, resource, answer)
        assert kubectl("auth", "can-i", "create", "certifications.nvcre.nvidia.com", "-n", namespace, "--as", who).stdout.strip() == "yes"

        sim_fleet.start("healthy.yaml", nodes=2, racks=1)
        controller.kubeconfig = _token_kubeconfig(kubectl, control_plane, tmp_path, CONTROLLER_NS, "nvcre")
        controller.start()
        tenant = KubeClient.from_kubeconfig(_token_kubeconfig(kubectl, control_plane, tmp_path, namespace, TENANT))

        # the policy is active once the first hostile object is refused (it syncs within seconds)
        def policy_active():
            try:
                tenant.create(_job(namespace, "probe", [_root_pod_job("probe")]))
            except ApiError as err:
                return "nvcre least privilege" in err.message
            kube.delete(NVCRE_API_VERSION, "Job", "probe", namespace)
            return False
        e2e.wait_for(policy_active, 60, "the admission policy to refuse a hostile Job")

        # a catalog Certification (multi-node MPI: the SSH key path) by the tenant runs meanwhile
        tenant.create(e2e.certification("catalog", namespace, [{"domain": "communication", "variant": "nccl-all-reduce"}]))

        # every escalation path of the issue, refused at admission, naming what and the verb
        _refused(tenant, _job(namespace, "root", [_root_pod_job("root")]),
                 "hostPID", "a hostPath volume", "a privileged container", "verb privileged on jobs.nvcre.nvidia.com")
        _refused(tenant, _job(namespace, "secret", [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                                                     "stringData": {"k": "v"}}]), "kind Secret", "verb escalate")
        _refused(tenant, _job(namespace, "crb", [{
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "pwn"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": TENANT, "namespace": namespace}]}]), "kind ClusterRoleBinding", "verb escalate")
        _refused(tenant, _run(namespace, "hostroot", volumes=[{"name": "root", "hostPath": {"path": "/"}}],
                              volumeMounts=[{"name": "root", "mountPath": "/host"}]),
                 "a hostPath volume", "verb privileged on workloadruns.nvcre.nvidia.com")
        _refused(tenant, _run(namespace, "privinit", initContainers=[
            {"name": "i", "image": "busybox", "command": ["true"], "securityContext": {"privileged": True}}]), "a privileged container")
        _refused(tenant, _run(namespace, "secretenv", env=[
            {"name": "T", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]), "environment from a Secret")
        _refused(tenant, e2e.certification("evil-image", namespace, [
            {"domain": "diagnostics", "variant": "dcgm-level4", "options": {"image": "evil/dcgm"}}]),
                 "diagnostics/dcgm-level4", "verb privileged on certifications.nvcre.nvidia.com")
        _refused(tenant, e2e.certification("rdma-host", namespace, [{"domain": "communication", "variant": "nccl-loopback"}],
                                           rdmaDeviceAccess="hostPath"), "rdmaDeviceAccess hostPath")
        # a Workflow of the tenant's own bound to another run (label or owner) would re-run what
        # that run was admitted with, on nodes the tenant picks
        for bound in ({"labels": {"nvcre.nvidia.com/certification": "catalog"}},
                      {"labels": {"nvcre.nvidia.com/workload-run": "someone-elses"}},
                      {"ownerReferences": [{"apiVersion": NVCRE_API_VERSION, "kind": "Workflow", "name": "catalog-x",
                                            "uid": "00000000-0000-0000-0000-000000000000", "controller": True}]}):
            _refused(tenant, {"apiVersion": NVCRE_API_VERSION, "kind": "Workflow",
                              "metadata": {"name": "rerun", "namespace": namespace, **bound},
                              "spec": {"jobTemplate": {"spec": {"workload": {"native": {"jobs": []}}, "timeoutPerJob": "1h"}},
                                       "orchestration": {"execution": {"maxConcurrent": 0, "timeoutPerJob": "1h"},
                                                         "iterations": 1}}},
                     "a Workflow bound to another run", "verb escalate on workflows.nvcre.nvidia.com")
        for kind, name in (("Job", "root"), ("Job", "secret"), ("Job", "crb"), ("WorkloadRun", "hostroot"), ("Workflow", "rerun")):
            assert kube.get(NVCRE_API_VERSION, kind, name, namespace) is None
        assert kube.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "pwn") is None

        # the catalog run passes; its key was only ever in the Secret the controller made
        def ssh_secret():
            for secret in kube.list("v1", "Secret", namespace):
                if secret["metadata"]["name"].endswith("-ssh"):
                    return secret
            return None
        secret = e2e.wait_for(ssh_secret, 120, "the MPI SSH Secret", controller.log_tail)
        assert secret["metadata"]["ownerReferences"][0]["kind"] == "Job"
        assert set(secret["data"]) == {"id_ed25519", "id_ed25519.pub", "authorized_keys"}
        for job in kube.list(NVCRE_API_VERSION, "Job", namespace):
            assert "PRIVATE KEY" not in json.dumps(job)
        cert = e2e.wait_terminal(kube, "Certification", "catalog", namespace, 300, controller)
        assert e2e.true_condition(cert, "Succeeded"), json.dumps(cert["status"])[:2000]

        # holding the verb admits the object
        kubectl("create", "rolebinding", "tenant-host-access", "-n", namespace, "--clusterrole", "nvcre-host-access",
                "--serviceaccount", f"{namespace}:{TENANT}")
        e2e.wait_for(lambda: kubectl("auth", "can-i", "privileged", "workloadruns.nvcre.nvidia.com", "-n", namespace,
                                     "--as", who, check=False).stdout.strip() == "yes", 30, "the host-access binding")
        tenant.create(_run(namespace, "hostroot-ok", volumes=[{"name": "root", "hostPath": {"path": "/"}}],
                           volumeMounts=[{"name": "root", "mountPath": "/host"}]))
        kube.delete(NVCRE_API_VERSION, "WorkloadRun", "hostroot-ok", namespace)
        _refused(tenant, _job(namespace, "secret2", [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]), "verb escalate")

        # defence in depth: an admin's Job with a cluster-scoped object is failed, nothing created
        kube.create(_job(namespace, "admin-crb", [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "before"}, "data": {"a": "b"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "pwn-admin"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
             "subjects": [{"kind": "ServiceAccount", "name": TENANT, "namespace": namespace}]}]))
        job = e2e.wait_terminal(kube, "Job", "admin-crb", namespace, 60, controller)
        failed = e2e.true_condition(job, "Failed")
        assert failed and failed["reason"] == "WorkloadCreationError" and "cluster-scoped" in failed["message"], failed
        assert kube.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "pwn-admin") is None
        assert kube.get("v1", "ConfigMap", "before", namespace) is None
    finally:
        kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=yaml.safe_dump_all(docs), check=False)
        kubectl("delete", "namespace", CONTROLLER_NS, "--wait=false", check=False)
