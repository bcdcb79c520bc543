"""The Helm chart: lint and template are clean, and its RBAC, installed in a real API
server, lets the controller read Nodes but never update, patch or delete them."""

from __future__ import annotations

import json
import secrets

import pytest
import yaml

pytestmark = pytest.mark.integration

CHART = "charts/nvcre"


def _docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--set", "rbac.scope=namespaced", "--set", "rbac.runNamespaces={team-a,team-b}"],
        ["--set", "serviceMonitor.enabled=true", "--set", "image.digest=sha256:" + "0" * 64],
    ],
)
def test_lint_and_template_are_clean(helm, repo_root, extra):
    lint = helm("lint", repo_root / CHART, "--strict", *extra)
    assert "0 chart(s) failed" in lint.stdout
    assert "[WARNING]" not in lint.stdout and "[ERROR]" not in lint.stdout
    rendered = helm("template", "nvcre", repo_root / CHART, "-n", "nvcre", "--include-crds", *extra).stdout
    kinds = [d["kind"] for d in _docs(rendered)]
    assert kinds.count("CustomResourceDefinition") == 7
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service"} <= set(kinds)
    deployment = next(d for d in _docs(rendered) if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:2] == ["controller", "run"]
    # the metrics Service and the readiness probe reach the pod only on a non-loopback bind
    assert "--metrics-address=0.0.0.0" in container["args"]
    if "serviceMonitor.enabled=true" in extra:
        assert "ServiceMonitor" in kinds
        assert container["image"].endswith("@sha256:" + "0" * 64)
    if "rbac.scope=namespaced" in extra:
        bindings = [d for d in _docs(rendered) if d["kind"] == "RoleBinding"]
        assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
        assert not any(d["kind"] == "ClusterRoleBinding" and d["roleRef"]["name"].endswith("-run-role") for d in _docs(rendered))


def test_bad_scope_is_refused(helm, repo_root):
    result = helm("template", "nvcre", repo_root / CHART, "--set", "rbac.scope=everywhere", check=False)
    assert result.returncode != 0
    assert "rbac.scope must be cluster or namespaced" in result.stderr


@pytest.mark.parametrize("scope", ["cluster", "namespaced"])
def test_controller_cannot_write_nodes(helm, kubectl, namespace, repo_root, scope):
    """Install the rendered ServiceAccount and RBAC, then ask the API server what the SA may do."""
    release = f"rbac-{secrets.token_hex(3)}"
    run_ns = namespace
    rendered = helm(
        "template", release, repo_root / CHART, "-n", namespace,
        "--show-only", "templates/serviceaccount.yaml", "--show-only", "templates/rbac.yaml",
        "--set", f"rbac.scope={scope}", "--set", f"rbac.runNamespaces={{{run_ns}}}",
    ).stdout
    docs = _docs(rendered)
    sa = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"]
    cluster_objects = [f"{d['kind'].lower()}/{d['metadata']['name']}" for d in docs if d["kind"].startswith("Cluster")]
    kubectl("apply", "-f", "-", input=rendered)
    who = f"--as=system:serviceaccount:{namespace}:{sa}"

    def can(*args: str) -> bool:
        result = kubectl("auth", "can-i", *args, who, check=False)
        assert result.stdout.strip() in ("yes", "no"), result.stderr
        return result.stdout.strip() == "yes"

    def allowed(verb: str, group: str, resource: str, namespace: str = "", subresource: str = "") -> bool:
        """A SubjectAccessReview: RBAC's answer by attributes, whether or not the kind is served yet."""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": f"system:serviceaccount:{namespace_of_sa}:{sa}",
                "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace_of_sa}", "system:authenticated"],
                "resourceAttributes": {
                    "verb": verb, "group": group, "resource": resource, "namespace": namespace, "subresource": subresource,
                },
            },
        }
        out = kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review)).stdout
        return bool(json.loads(out)["status"].get("allowed"))

    namespace_of_sa = namespace
    try:
        for verb in ("get", "list", "watch"):
            assert can(verb, "nodes"), f"the controller must be able to {verb} nodes"
        for verb in ("update", "patch", "delete", "create", "deletecollection"):
            assert not can(verb, "nodes"), f"the controller must not {verb} nodes"
        assert not can("patch", "nodes/status")
        assert allowed("create", "nvcre.nvidia.com", "certifications", "anywhere")
        assert allowed("update", "nvcre.nvidia.com", "workflows", "anywhere", subresource="status")
        assert not allowed("update", "", "nodes", subresource="status")
        assert can("create", "selfsubjectaccessreviews.authorization.k8s.io")
        assert can("create", "jobs.batch", "-n", run_ns)  # a run namespace: always allowed
        elsewhere = can("create", "jobs.batch", "-n", "some-other-namespace")
        assert elsewhere is (scope == "cluster")
        # least privilege (issue 13): pods only through batch Jobs, Secrets by name only
        for verb in ("create", "update", "patch", "delete"):
            assert not can(verb, "pods", "-n", run_ns), f"the controller must not {verb} pods"
        for verb in ("list", "watch", "update", "patch"):
            assert not can(verb, "secrets", "-n", run_ns), f"the controller must not {verb} secrets"
        assert can("create", "secrets", "-n", run_ns) and can("get", "secrets", "-n", run_ns)
    finally:
        kubectl("delete", *cluster_objects, "--ignore-not-found")
