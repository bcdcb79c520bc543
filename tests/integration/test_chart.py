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


def _chart_crd_count(repo_root) -> int:
    """Every CRD the chart ships, counted from its crds/ folder, so a new kind needs no test edit."""
    return len(list((repo_root / CHART / "crds").glob("*.yaml")))


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
    assert kinds.count("CustomResourceDefinition") == _chart_crd_count(repo_root) >= 10
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
    # the values schema refuses it first, naming the field and the allowed values
    assert "/rbac/scope" in result.stderr and "'namespaced'" in result.stderr and "'cluster'" in result.stderr


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
        # RoleBindings are watched everywhere (a waiting Workflow is woken by one), never written
        for verb in ("list", "watch"):
            assert can(verb, "rolebindings.rbac.authorization.k8s.io", "-n", "some-other-namespace")
        for verb in ("create", "update", "patch", "delete", "bind", "escalate"):
            assert not can(verb, "rolebindings.rbac.authorization.k8s.io", "-n", run_ns)
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


class _StrictLoader(yaml.SafeLoader):
    """YAML that refuses a mapping with the same key twice (what a strict client does)."""


def _strict_mapping(loader, node, deep=False):
    keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise yaml.constructor.ConstructorError(None, None, f"duplicate keys {dupes}", node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)

KNOBS = [
    "--set", "serviceMonitor.enabled=true",
    "--set", "controller.podLabels.team=gpu-infra",
    "--set", "controller.priorityClassName=system-cluster-critical",
    "--set", "controller.logFormat=json",
    "--set", "metrics.nodeDetailLimit=64",
    "--set", "metrics.referenceCompatible=true",
    "--set-json", 'controller.strategy={"type":"Recreate"}',
    "--set-json", 'controller.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway"}]',
]


def test_every_render_is_strict_yaml_and_has_the_knobs(helm, repo_root):
    for extra in ([], KNOBS, ["--set", "rbac.scope=namespaced", "--set", "rbac.runNamespaces={a,b}"]):
        rendered = helm("template", "nvcre", repo_root / CHART, "-n", "nvcre", "--include-crds", *extra).stdout
        docs = [d for d in yaml.load_all(rendered, Loader=_StrictLoader) if d]
        assert docs
    docs = [d for d in yaml.load_all(helm("template", "nvcre", repo_root / CHART, "-n", "nvcre", *KNOBS).stdout, Loader=_StrictLoader) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["labels"]["team"] == "gpu-infra"
    assert pod["spec"]["priorityClassName"] == "system-cluster-critical"
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert pod["spec"]["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    args = pod["spec"]["containers"][0]["args"]
    assert "--log-format=json" in args and "--metrics-node-detail-limit=64" in args and "--reference-metrics" in args
    monitor = next(d for d in docs if d["kind"] == "ServiceMonitor")
    service = next(d for d in docs if d["kind"] == "Service")
    # the ServiceMonitor selects the metrics Service (and only by labels it has)
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "metrics"


@pytest.mark.parametrize(
    "bad,where",
    [
        (["--set", "controller.logLevel=verbose"], "/controller/logLevel"),
        (["--set", "controller.logFormat=xml"], "/controller/logFormat"),
        (["--set", "metrics.port=0"], "/metrics/port"),
        (["--set", "controller.replicsa=2"], "replicsa"),
        (["--set", "serviceMonitorr.enabled=true"], "serviceMonitorr"),
    ],
)
def test_bad_value_fails_lint_template_and_install(helm, repo_root, namespace, bad, where):
    lint = helm("lint", repo_root / CHART, "--strict", *bad, check=False)
    assert lint.returncode != 0 and where in lint.stdout + lint.stderr
    template = helm("template", "nvcre", repo_root / CHART, *bad, check=False)
    assert template.returncode != 0 and where in template.stderr
    release = f"bad-{secrets.token_hex(3)}"
    install = helm("install", release, repo_root / CHART, "-n", namespace, "--skip-crds", *bad, check=False)
    assert install.returncode != 0 and where in install.stderr
    assert helm("status", release, "-n", namespace, check=False).returncode != 0  # nothing was installed


def test_package_push_and_pull_from_an_oci_registry(helm, repo_root, oci_registry, tmp_path):
    """helm package + helm push to a real registry on 127.0.0.1, then pull and render it back."""
    chart = yaml.safe_load((repo_root / CHART / "Chart.yaml").read_text())
    packaged = helm("package", repo_root / CHART, "-d", tmp_path).stdout
    archive = tmp_path / f"nvcre-{chart['version']}.tgz"
    assert archive.is_file(), packaged
    pushed = helm("push", archive, f"oci://{oci_registry}/charts", "--plain-http")
    assert "sha256:" in pushed.stdout + pushed.stderr
    ref = f"oci://{oci_registry}/charts/nvcre"
    shown = yaml.safe_load(helm("show", "chart", ref, "--version", chart["version"], "--plain-http").stdout)
    assert shown["version"] == chart["version"] and shown["appVersion"] == chart["appVersion"]
    rendered = helm("template", "nvcre", ref, "--version", chart["version"], "--plain-http", "-n", "nvcre", "--include-crds").stdout
    kinds = [d["kind"] for d in yaml.load_all(rendered, Loader=_StrictLoader) if d]
    assert kinds.count("CustomResourceDefinition") == _chart_crd_count(repo_root) and "Deployment" in kinds
    missing = helm("show", "chart", f"oci://{oci_registry}/charts/absent", "--plain-http", check=False)
    assert missing.returncode != 0


@pytest.fixture
def deployment_template(helm, repo_root):
    """``helm template`` of the chart's Deployment with extra arguments (unchecked: some must fail)."""
    return lambda *args: helm("template", "nvcre", repo_root / CHART, "-s", "templates/deployment.yaml", *args, check=False)


@pytest.mark.parametrize("key", ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"])
def test_a_pod_label_equal_to_a_selector_label_fails_the_render(deployment_template, key):
    """It would render a duplicate key into the pod template's labels (or move it off the selector)."""
    result = deployment_template("--set-json", f'controller.podLabels={{"team": "gpu", "{key}": "other"}}')
    assert result.returncode != 0
    assert f'controller.podLabels: "{key}" is one of the chart\'s selector labels' in result.stderr


def test_other_pod_labels_and_reference_metrics_render(deployment_template):
    result = deployment_template("--set-json", 'controller.podLabels={"team": "gpu", "app.kubernetes.io/part-of": "platform"}',
                                 "--set", "metrics.referenceCompatible=true")
    assert result.returncode == 0, result.stderr
    deployment = yaml.safe_load(result.stdout)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels.items() >= deployment["spec"]["selector"]["matchLabels"].items()
    assert labels["team"] == "gpu" and labels["app.kubernetes.io/part-of"] == "platform"
    assert "--reference-metrics" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    default = yaml.safe_load(deployment_template().stdout)
    assert "--reference-metrics" not in default["spec"]["template"]["spec"]["containers"][0]["args"]
