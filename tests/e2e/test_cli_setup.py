"""Install, inspect and remove nvcre the way a new user does, as subprocesses against the
test bed: `setup init` (Helm, kept values, bad input), `setup status`, `cluster info`,
`rbac print | kubectl apply`, `setup reset` keeping CRDs it does not own and the
ReportExport ones (as the reference), and the
wrong-input cases (unknown category, missing file, wrong namespace, bad --set)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

NVCRECTL = str(Path(sys.executable).with_name("nvcrectl"))
REPO = Path(__file__).resolve().parents[2]
KINDS = ("certifications", "workflows", "jobs", "workloadruns", "bandwidthmeasurements", "goodputmeasurements", "logprofiles")
FOREIGN_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "jobsets.jobset.x-k8s.io"},
    "spec": {
        "group": "jobset.x-k8s.io",
        "names": {"kind": "JobSet", "plural": "jobsets", "singular": "jobset", "listKind": "JobSetList"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha2",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


KEPT_POLICY = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "ReportExportPolicy",
    "metadata": {"name": "kept-by-reset"},
    "spec": {"source": {"namespaces": ["gpu-certs"]}, "webhook": {"url": "https://tracker.example.com/nvcre"}},
}


def nvcrectl(kubeconfig: str, *args: str, helm_path: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    if helm_path:
        env["NVCRE_HELM"] = helm_path
    return subprocess.run([NVCRECTL, *args], capture_output=True, text=True, env=env, timeout=timeout)


def _restore_crds(kubectl) -> None:
    """Other end-to-end tests share this API server: put the nvcre CRDs back."""
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(REPO / "charts" / "nvcre" / "crds"))
    for plural in KINDS:
        kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{plural}.nvcre.nvidia.com")


def test_setup_init_status_reset(control_plane, kubeconfig, kubectl, crds):
    helm = str(control_plane.helm_path)
    ns = "nvcre-e2e-setup"
    kubectl("apply", "-f", "-", input=json.dumps(FOREIGN_CRD))
    try:
        # bad input first: nothing is installed
        # phase deps: the JobSet CRD above runs no controller, so who owns JobSet is ambiguous:
        # refused before anything changes (docs/design/112-jobset-ownership.md). The rest of
        # this test is about phase helm and skips deps (tests/integration/test_setup_deps.py).
        ambiguous = nvcrectl(kubeconfig, "setup", "init", "-y", "-n", ns, helm_path=helm)
        assert ambiguous.returncode == 2 and "JobSet ownership is ambiguous, nothing was changed" in ambiguous.stderr
        assert "no JobSet controller was found" in ambiguous.stderr and "Traceback" not in ambiguous.stderr
        assert kubectl("get", "namespace", ns, check=False).returncode != 0  # nothing installed
        nodeps = ("--skip-phases", "deps")
        bad = nvcrectl(kubeconfig, "setup", "init", "-y", "-n", ns, *nodeps, "--set", "rbac.scope=everywhere", helm_path=helm)
        # the values schema refuses it, naming the value's path and what is allowed
        assert bad.returncode == 2 and "/rbac/scope" in bad.stderr and "'namespaced', 'cluster'" in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
        bad_set = nvcrectl(kubeconfig, "setup", "init", "-y", "-n", ns, *nodeps, "--set", "controller.replicas", helm_path=helm)
        assert bad_set.returncode == 2 and "expected KEY=VALUE" in bad_set.stderr
        bad_phase = nvcrectl(kubeconfig, "setup", "init", "-y", "--skip-phases", "crds", helm_path=helm)
        assert bad_phase.returncode == 2 and "accepted: deps, helm" in bad_phase.stderr

        # install: the controller runs as a local process on the test bed, so 0 replicas
        first = nvcrectl(
            kubeconfig, "setup", "init", "-y", "-n", ns, *nodeps,
            "--set", "controller.replicas=0", "--set", "controller.resources.limits.memory=1Gi", helm_path=helm,
        )
        assert first.returncode == 0, first.stderr
        assert "Preflight" in first.stdout and "--set controller.resources.limits.memory" in first.stdout
        assert "1Gi" not in first.stdout  # value sources are listed, contents are not
        assert "release nvcre installed (revision 1)" in first.stdout

        # a second run with one new value keeps the earlier ones
        bad_secret = nvcrectl(kubeconfig, "setup", "init", "-y", "-n", ns, *nodeps, "--image-pull-secret", "Reg_Cred", helm_path=helm)
        assert bad_secret.returncode == 2 and "--image-pull-secret 'Reg_Cred'" in bad_secret.stderr
        second = nvcrectl(kubeconfig, "setup", "init", "-y", "-n", ns, *nodeps, "--rbac-scope", "namespaced",
                          "--image-pull-secret", "regcred", helm_path=helm)
        assert second.returncode == 0, second.stderr
        deployment = json.loads(kubectl("get", "deployment", "-n", ns, "-o", "json").stdout)["items"][0]
        assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
        assert "kept from the installed release: controller.replicas, controller.resources.limits.memory" in second.stdout
        values = json.loads(subprocess.run([helm, "get", "values", "nvcre", "-n", ns, "-o", "json"], capture_output=True,
                                           text=True, env={**os.environ, "KUBECONFIG": kubeconfig}, check=True).stdout)
        assert values["controller"]["resources"]["limits"]["memory"] == "1Gi"
        assert values["rbac"]["scope"] == "namespaced" and values["controller"]["replicas"] == 0

        status = nvcrectl(kubeconfig, "setup", "status", "-n", ns)
        for line in ("✓ CRDs", "✓ Helm release", "✓ Controller", "✓ RBAC", "✓ LogProfiles"):
            assert line in status.stdout, status.stdout
        assert "DCGM" in status.stdout and "GPU Operator labels" in status.stdout

        # rbac print, applied, grants the controller's ServiceAccount a run namespace
        printed = nvcrectl(kubeconfig, "rbac", "print", "--namespace", "team-a", "--controller-namespace", ns)
        binding = yaml.safe_load(printed.stdout)
        assert binding["kind"] == "RoleBinding" and binding["roleRef"]["name"] == "nvcre-run-role"
        kubectl("create", "namespace", "team-a", check=False)
        kubectl("apply", "-f", "-", input=printed.stdout)
        sa = f"system:serviceaccount:{ns}:nvcre"
        # the run role writes workloads (batch Jobs), never bare pods (least privilege, docs/security.md)
        assert kubectl("auth", "can-i", "create", "jobs.batch", "-n", "team-a", f"--as={sa}", check=False).stdout.strip() == "yes"
        assert kubectl("auth", "can-i", "create", "pods", "-n", "team-a", f"--as={sa}", check=False).stdout.strip() == "no"
        assert kubectl("auth", "can-i", "create", "pods", "-n", "team-b", f"--as={sa}", check=False).stdout.strip() == "no"
        assert kubectl("auth", "can-i", "patch", "nodes", f"--as={sa}", check=False).stdout.strip() == "no"

        # the reference's reset retains ReportExport resources: a policy made now survives it
        kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(KEPT_POLICY))
        bad_reset = nvcrectl(kubeconfig, "setup", "reset", "-y", "--skip-phases", "crds", helm_path=helm)
        assert bad_reset.returncode == 2 and "accepted: cr, helm, deps" in bad_reset.stderr
        reset = nvcrectl(kubeconfig, "setup", "reset", "-y", "-n", ns, helm_path=helm)
        assert reset.returncode == 0, reset.stderr
        crd_count = len(list((REPO / "charts" / "nvcre" / "crds").glob("*.yaml")))
        assert "uninstalled" in reset.stdout and f"deleted {crd_count - 2} nvcre CRDs; kept 2" in reset.stdout
        crd_names = kubectl("get", "crd", "-o", "name").stdout
        assert "jobsets.jobset.x-k8s.io" in crd_names  # not ours: kept
        assert sorted(n for n in crd_names.split() if "nvcre.nvidia.com" in n) == [
            "customresourcedefinition.apiextensions.k8s.io/reportexportpolicies.nvcre.nvidia.com",
            "customresourcedefinition.apiextensions.k8s.io/reportexports.nvcre.nvidia.com",
        ]
        kept = kubectl("get", "reportexportpolicies.nvcre.nvidia.com", "-n", ns, "-o", "name").stdout
        assert "kept-by-reset" in kept
        after = nvcrectl(kubeconfig, "setup", "status", "-n", ns)
        assert after.returncode == 1 and "✗ Helm release" in after.stdout
    finally:
        kubectl("delete", "crd", "jobsets.jobset.x-k8s.io", "--ignore-not-found")
        kubectl("delete", "namespace", "team-a", "--ignore-not-found", "--wait=false")
        subprocess.run([helm, "uninstall", "nvcre", "-n", ns], capture_output=True, env={**os.environ, "KUBECONFIG": kubeconfig})
        _restore_crds(kubectl)
        kubectl("delete", "reportexportpolicies.nvcre.nvidia.com", "kept-by-reset", "-n", ns, "--ignore-not-found", "--wait=false")


def test_cluster_info_sees_the_fleet(sim_fleet, kubeconfig):
    sim_fleet.start("seed-failure-sample.yaml")
    info = nvcrectl(kubeconfig, "cluster", "info", "-o", "json")
    assert info.returncode == 0, info.stderr
    summary = json.loads(info.stdout)
    assert summary["platform"] == "aws" and summary["gpuArchitecture"] == "h100"
    assert summary["gpuNodes"] == 16 and summary["readyGPUNodes"] == 16
    assert summary["gpus"] == 16 * 8
    table = nvcrectl(kubeconfig, "cluster", "info")
    assert "Platform:  aws" in table.stdout and "16 ready of 16" in table.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["certification", "run", "--category", "communication/nccl-all-sideways"], "unknown category; known:"),
        (["certification", "run", "--cert-file", "/nonexistent/cert.yaml"], "/nonexistent/cert.yaml: no such file"),
        (["workloadrun", "run", "/nonexistent/run.yaml"], "/nonexistent/run.yaml: no such file"),
        (["certification", "run", "--category", "communication/nccl-all-reduce", "--wait", "--timeout", "0s"], "below 1s"),
        (["certification", "report", "no-such-cert", "-n", "nowhere"], "not found in namespace 'nowhere'"),
        (["certification", "cleanup", "no-such-cert", "-n", "nowhere"], "not found in namespace 'nowhere'"),
        (["certification", "report", "x", "-o", "xml"], "unknown format 'xml'"),
        (["certification", "run", "-c", "communication/nccl-all-reduce", "-o", "html"], "needs --wait"),
    ],
)
def test_wrong_input_is_a_clear_error(kubeconfig, crds, args, message):
    result = nvcrectl(kubeconfig, *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_manifest_names_the_field(kubeconfig, crds, tmp_path):
    cert = tmp_path / "cert.yaml"
    cert.write_text(yaml.safe_dump({
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
        "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                                "options": {"testScale": "sideways"}}]},
    }))
    result = nvcrectl(kubeconfig, "certification", "run", "--cert-file", str(cert))
    assert result.returncode == 2
    assert "spec.categories[0].options.testScale" in result.stderr


def test_cluster_info_counts_dra_gpus_from_resource_slices(control_plane, kubeconfig, crds, tmp_path):
    """A DRA-only fleet advertises no nvidia.com/gpu: GPUs are counted from ResourceSlices."""
    from nvcre.sim.kubelet import KubeletConfig
    from nvcre.sim.process import start_fleet

    cp = control_plane
    config = KubeletConfig(
        kubeconfig=str(cp.kubeconfig), state_dir=str(tmp_path / "fleet"), nodes=2, platform="nscale", gpu="gb300",
        racks=1, dra=True, tls_cert=str(cp.kubelet_serving_cert) if cp.kubelet_serving_cert else None,
        tls_key=str(cp.kubelet_serving_key) if cp.kubelet_serving_key else None,
        client_ca=str(cp.ca_cert) if cp.ca_cert else None,
    )
    handle = start_fleet(config, timeout_s=120)
    try:
        info = nvcrectl(kubeconfig, "cluster", "info", "-o", "json")
        assert info.returncode == 0, info.stderr
        summary = json.loads(info.stdout)
        assert summary["platform"] == "nscale"
        assert summary["gpuArchitecture"] == "gb300"
        assert sorted(summary["draNodes"]) == sorted(handle.nodes)
        assert summary["gpus"] == 2 * 4
    finally:
        handle.stop(delete=True)
