"""The controller under the chart's own RBAC (rbac.scope namespaced), as a ServiceAccount:
a run namespace without the run RoleBinding makes the Workflow wait with reason
NamespacePermissionsMissing and a Warning naming the binding; once the binding
printed by ``nvcrectl rbac print`` is applied, the run proceeds and passes. The
controller watches RoleBindings (the chart lets it): the grant is seen within seconds
of the binding, not at a re-check timer or the resync (made long here)."""

from __future__ import annotations

import subprocess
import sys
import time

import yaml

from nvcre.kube.resources import NVCRE_API_VERSION

CONTROLLER_NS = "nvcre-e2e-rbac"


def _service_account_kubeconfig(kubectl, control_plane, tmp_path) -> str:
    token = kubectl("-n", CONTROLLER_NS, "create", "token", "nvcre", "--duration", "1h").stdout.strip()
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": control_plane.server, "certificate-authority": str(control_plane.ca_cert)}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}],
        "current-context": "sa",
    }
    path = tmp_path / "sa.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_namespace_permissions_missing_then_granted(sim_fleet, controller, kube, namespace, kubectl, helm, control_plane, tmp_path, repo_root, e2e):
    rendered = helm("template", "nvcre", str(repo_root / "charts" / "nvcre"), "--namespace", CONTROLLER_NS,
                    "--set", "rbac.scope=namespaced").stdout
    rbac = [d for d in yaml.safe_load_all(rendered) if d and d.get("kind") in ("ClusterRole", "ClusterRoleBinding", "ServiceAccount")]
    assert {d["kind"] for d in rbac} == {"ClusterRole", "ClusterRoleBinding", "ServiceAccount"}
    kubectl("create", "namespace", CONTROLLER_NS, check=False)
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))
    sa = next(d for d in rbac if d["kind"] == "ServiceAccount")["metadata"]["name"]
    assert sa == "nvcre"
    try:
        sim_fleet.start("healthy.yaml", nodes=2, racks=1)
        controller.kubeconfig = _service_account_kubeconfig(kubectl, control_plane, tmp_path)
        controller.start("--resync-seconds", "600")  # the last value wins: no resync hides a missing wake
        e2e.apply(kube, e2e.certification("rbac", namespace, [
            {"domain": "communication", "variant": "nccl-loopback", "options": {"testScale": "intra-node"}}]))
        wf = e2e.wait_in_progress(kube, "Workflow", namespace, "NamespacePermissionsMissing", 90, controller)
        message = e2e.true_condition(wf, "InProgress")["message"]
        assert "nvcre-manager-run" in message and "create jobs.batch" in message
        described = kubectl("-n", namespace, "describe", "workflow", wf["metadata"]["name"]).stdout
        assert "NamespacePermissionsMissing" in described

        binding = subprocess.run([sys.executable, "-m", "nvcre.cli.main", "rbac", "print", "--namespace", namespace,
                                  "--controller-namespace", CONTROLLER_NS], capture_output=True, text=True, check=True).stdout
        kubectl("apply", "-f", "-", input=binding)
        applied = time.monotonic()
        name = wf["metadata"]["name"]

        def started() -> bool:
            now = kube.get(NVCRE_API_VERSION, "Workflow", name, namespace) or {}
            waiting = e2e.true_condition(now, "InProgress")
            return e2e.terminal(now) or bool(waiting and waiting["reason"] != "NamespacePermissionsMissing")

        e2e.wait_for(started, 15, "the Workflow to start after the RoleBinding (a watch event, not a timer)", controller.log_tail)
        print(f"granted seen {time.monotonic() - applied:.1f}s after the RoleBinding was applied")
        cert = e2e.wait_terminal(kube, "Certification", "rbac", namespace, 240, controller)
        assert e2e.true_condition(cert, "Succeeded"), cert["status"]
    finally:
        kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=yaml.safe_dump_all(rbac), check=False)
        kubectl("delete", "namespace", CONTROLLER_NS, "--wait=false", check=False)
