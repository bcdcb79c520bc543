"""`setup init` phase deps against a real API server, with the real Kubeflow Trainer chart
served by a real OCI registry.

The chart is the one Kubeflow publishes (``oci://ghcr.io/kubeflow/charts/kubeflow-trainer``),
taken from the Trainer Go module with its JobSet and LWS subcharts vendored from their own
modules (``nvcre.testbed.trainer_chart``), packaged and pushed to the test bed's registry.
Everything runs on a control plane of this test's own: the session's control plane has
Trainer and JobSet CRDs of the test bed (``nvcre.testbed.trainer``) that other tests rely on.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from nvcre.cli.chart_source import DEFAULT_TRAINER_CHART_VERSION
from nvcre.cli.deps_plan import INSTALLED_BY, INSTALLED_BY_LABEL, JOBSET_CRD, TRAINER_CRDS
from nvcre.cli.main import main
from nvcre.testbed.trainer_chart import trainer_chart

TRAINER_NS = "kubeflow-system"


class Cluster:
    """kubectl and helm on the test's own control plane, and nvcrectl pointed at it."""

    def __init__(self, plane, capsys):
        self.plane, self.capsys = plane, capsys
        self.env = {"KUBECONFIG": str(plane.kubeconfig), "PATH": "/usr/bin:/bin"}

    def _run(self, binary, *args, check=True, input=None):
        done = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, env=self.env,
                              input=input, timeout=300)
        if check and done.returncode != 0:
            raise AssertionError(f"{binary.name} {' '.join(map(str, args))}: {done.stderr}")
        return done

    def kubectl(self, *args, **kw):
        return self._run(self.plane.kubectl_path, *args, **kw)

    def helm(self, *args, **kw):
        return self._run(self.plane.helm_path, *args, **kw)

    def nvcrectl(self, *args) -> tuple[int, str, str]:
        self.capsys.readouterr()
        helm = ["--helm", str(self.plane.helm_path)] if args[1] in ("init", "reset") else []
        code = main([*args, "--kubeconfig", str(self.plane.kubeconfig), *helm])
        out, err = self.capsys.readouterr()
        assert "Traceback" not in err, err
        return code, out, err

    def crds(self) -> dict[str, dict]:
        items = json.loads(self.kubectl("get", "crd", "-o", "json").stdout)["items"]
        return {c["metadata"]["name"]: c for c in items}

    def releases(self) -> list[dict]:
        return json.loads(self.helm("list", "-A", "-o", "json").stdout)

    def snapshot(self) -> tuple:
        """Everything deps could change: CRDs (spec generation, labels and who wrote them; not the
        resourceVersion, which the API server's own status updates move), releases, Deployments."""
        deployments = json.loads(self.kubectl("get", "deployments", "-A", "-o", "json").stdout)["items"]
        return ({n: (c["metadata"]["generation"], c["metadata"].get("labels"),
                     sorted(f["manager"] for f in c["metadata"].get("managedFields", [])))
                 for n, c in self.crds().items()},
                sorted((r["name"], r["namespace"], r["revision"]) for r in self.releases()),
                sorted((d["metadata"]["namespace"], d["metadata"]["name"], d["metadata"]["resourceVersion"])
                       for d in deployments))


def _wait(condition, what: str, timeout_s: float = 60):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def _bystander_chart(tmp_path: Path) -> Path:
    """A chart of someone else's, installed beside Trainer: reset must leave it."""
    chart = tmp_path / "bystander"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: bystander\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bystander\ndata: {}\n")
    return chart


def _external_jobset(namespace: str) -> dict:
    """A JobSet controller Deployment installed by someone else (as its Helm chart labels it)."""
    labels = {"app.kubernetes.io/name": "jobset", "app.kubernetes.io/instance": "jobset"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "jobset-controller-manager", "namespace": namespace, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "manager", "image": "registry.k8s.io/jobset/jobset:v0.11.0",
                                     "command": ["/manager"]}]}}},
    }


# 2.2.1: what the reference installs (the default); 2.3.0: the newest Trainer 2.x the Go proxy
# serves, whose chart ships the Trainer CRDs as templates (Helm's) instead of crds/ (ours to apply)
@pytest.mark.parametrize("version", [DEFAULT_TRAINER_CHART_VERSION, "2.3.0"])
def test_setup_init_deps_installs_trainer_refuses_ambiguity_and_reset_removes_only_its_own(
        fresh_control_plane, oci_registry, tmp_path, capsys, version):
    from nvcre.sim.pytest_plugin import _factory

    cluster = Cluster(fresh_control_plane, capsys)
    chart = trainer_chart(f"v{version}")
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert meta["version"] == version
    assert {d["name"] for d in meta["dependencies"]} <= {p.name for p in (chart / "charts").iterdir()}
    cluster.helm("package", chart, "-d", tmp_path)
    cluster.helm("push", tmp_path / f"kubeflow-trainer-{meta['version']}.tgz", f"oci://{oci_registry}/kubeflow", "--plain-http")
    ref = f"oci://{oci_registry}/kubeflow/kubeflow-trainer"
    init = ("setup", "init", "-y", "--skip-phases", "helm", "--plain-http", "--trainer-chart-version", version)
    crds_dir = (chart / "crds").is_dir()  # 2.2: Trainer's CRDs in crds/, applied by setup init

    # a chart reference that is not there: exit 2 naming the flag, nothing changed
    before = cluster.snapshot()
    code, _, err = cluster.nvcrectl(*init, "--trainer-chart-ref", f"oci://{oci_registry}/kubeflow/absent")
    assert code == 2 and "--trainer-chart-ref" in err and "helm pull failed" in err, err
    assert cluster.snapshot() == before

    # an empty cluster: Trainer with its bundled JobSet, CRDs applied and labelled, the release labelled
    code, out, err = cluster.nvcrectl(*init, "--trainer-chart-ref", ref)
    assert code == 0, err
    assert "install Kubeflow Trainer with its bundled JobSet: no JobSet in the cluster" in out
    assert f"chart {ref} (version {version})" in out
    applied = 4 if crds_dir else 1
    assert f"deps: release kubeflow-trainer in kubeflow-system with its bundled JobSet; {applied} CRDs applied" in out
    crds = cluster.crds()
    assert crds[JOBSET_CRD]["metadata"]["labels"][INSTALLED_BY_LABEL] == INSTALLED_BY
    for name in TRAINER_CRDS:
        meta_of = crds[name]["metadata"]
        if crds_dir:
            assert meta_of["labels"][INSTALLED_BY_LABEL] == INSTALLED_BY, name
        else:
            assert meta_of["annotations"]["meta.helm.sh/release-name"] == "kubeflow-trainer", name
    [release] = [r for r in cluster.releases() if r["name"] == "kubeflow-trainer"]
    assert release["namespace"] == TRAINER_NS and release["status"] == "deployed"
    assert json.loads(cluster.helm("get", "values", "kubeflow-trainer", "-n", TRAINER_NS, "-o", "json").stdout) == {
        "jobset": {"install": True}}
    assert cluster.kubectl("get", "deployments", "-n", TRAINER_NS, "-l", "app.kubernetes.io/name=jobset",
                           "-o", "name").stdout.strip()  # the bundled JobSet controller
    assert "trainer" in cluster.kubectl("get", "deployments", "-n", TRAINER_NS, "-o", "name").stdout

    # again: an upgrade that keeps the bundled JobSet (its controller is this install's own)
    code, out, err = cluster.nvcrectl(*init, "--trainer-chart-ref", ref)
    assert code == 0 and "it stays bundled" in out, err + out
    assert json.loads(cluster.helm("status", "kubeflow-trainer", "-n", TRAINER_NS, "-o", "json").stdout)["version"] == 2

    code, out, _ = cluster.nvcrectl("setup", "status")
    assert "Kubeflow Trainer" in out and "installed by setup init (helm release kubeflow-trainer in kubeflow-system)" in out
    assert "JobSet" in out and "CRD installed by setup init" in out

    # reset removes the release and CRDs init recorded, and nothing else
    cluster.helm("install", "bystander", _bystander_chart(tmp_path), "-n", TRAINER_NS)
    code, out, err = cluster.nvcrectl("setup", "reset", "-y", "--skip-phases", "cr,helm")
    assert code == 0, err
    assert "deps: helm release kubeflow-trainer in kubeflow-system uninstalled (installed by setup init)" in out
    crds = cluster.crds()
    assert not set(TRAINER_CRDS) & set(crds) and JOBSET_CRD not in crds
    assert [r["name"] for r in cluster.releases()] == ["bystander"]
    assert cluster.kubectl("get", "configmap", "bystander", "-n", TRAINER_NS, check=False).returncode == 0

    # a JobSet CRD nobody runs a controller for: ambiguous, refused before anything changes
    cluster.kubectl("apply", "--server-side", "-f", chart / "charts" / "jobset" / "crds")
    before = cluster.snapshot()
    code, out, err = cluster.nvcrectl(*init, "--trainer-chart-ref", ref)
    assert code == 2 and "JobSet ownership is ambiguous, nothing was changed" in err, err
    assert "no JobSet controller was found" in err and "--skip-phases deps" in err
    assert cluster.snapshot() == before

    # the same CRD with its controller running (someone else's): Trainer without the bundled JobSet
    start_fleet, fleets = _factory(fresh_control_plane, tmp_path / "fleet")
    try:
        start_fleet(1, racks=1)
        cluster.kubectl("create", "namespace", "jobset-system")
        cluster.kubectl("apply", "-f", "-", input=json.dumps(_external_jobset("jobset-system")))

        def ready() -> bool:
            got = cluster.kubectl("get", "deployment", "jobset-controller-manager", "-n", "jobset-system",
                                  "-o", "jsonpath={.status.readyReplicas}").stdout
            return got == "1"

        _wait(ready, "the external JobSet controller to be ready")
        code, out, err = cluster.nvcrectl(*init, "--trainer-chart-ref", ref)
        assert code == 0, err
        assert "external JobSet verified" in out and "without JobSet (the external one is used)" in out
        assert json.loads(cluster.helm("get", "values", "kubeflow-trainer", "-n", TRAINER_NS, "-o", "json").stdout) == {
            "jobset": {"install": False}}
        crds = cluster.crds()
        assert INSTALLED_BY_LABEL not in (crds[JOBSET_CRD]["metadata"].get("labels") or {})  # still someone else's
        assert cluster.kubectl("get", "deployments", "-n", TRAINER_NS, "-l", "app.kubernetes.io/name=jobset",
                               "-o", "name").stdout.strip() == ""

        code, out, err = cluster.nvcrectl("setup", "reset", "-y", "--skip-phases", "cr,helm")
        assert code == 0, err
        crds = cluster.crds()
        assert JOBSET_CRD in crds and not set(TRAINER_CRDS) & set(crds)
        assert cluster.kubectl("get", "deployment", "jobset-controller-manager", "-n", "jobset-system",
                               check=False).returncode == 0
    finally:
        for handle in reversed(fleets):
            handle.stop(delete=True)
