"""`workflow render` plans with the controller's own functions, and `--dry-run` judges
the rendered objects server-side (the cluster part is tests/e2e/test_cli_workloadrun_ops.py)."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from nvcre.cli.dry_run import INVALID, OK, SKIPPED, WARN, classify, judge, submittable
from nvcre.cli.main import app
from nvcre.controller import naming
from nvcre.kube.client import ApiError

CERT = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "Certification",
    "metadata": {"name": "demo", "namespace": "team"},
    "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
             "categories": [{"domain": "communication", "variant": "nccl-all-reduce"},
                            {"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}}]},
}
RUN = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "WorkloadRun",
    "metadata": {"name": "wr1", "namespace": "team"},
    "spec": {"image": "nvcr.io/nvidia/pytorch:26.01-py3", "numNodes": 2, "framework": {"exec": {"command": ["true"]}},
             "orchestration": {"repeatCount": 2}},
}


def _render(tmp_path, obj, *args):
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(obj))
    result = CliRunner().invoke(app, ["workflow", "render", str(path), "-o", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_certification_workflows_and_jobs_carry_the_controllers_names(tmp_path):
    objects = _render(tmp_path, CERT, "--platform", "aws", "--gpu-arch", "h100", "--nodes", "4")
    workflows = [o for o in objects if o["kind"] == "Workflow"]
    cats = CERT["spec"]["categories"]
    assert [w["metadata"]["name"] for w in workflows] == [naming.category_workflow_name("demo", cats, i) for i in range(2)]
    first, second = workflows
    assert first["metadata"]["annotations"]["nvcrectl.nvidia.com/detected-platform"] == "aws"
    assert first["metadata"]["annotations"]["nvcrectl.nvidia.com/detected-gpu-architecture"] == "h100"
    assert "platform/aws#efa-p5" in json.loads(first["metadata"]["annotations"]["nvcrectl.nvidia.com/applied-overrides"])
    jobs = [o for o in objects if o["kind"] == "Job"]
    # one group of 4 (a single Job), then two groups of 2 (one Job each, per iteration naming)
    assert [j["metadata"]["name"] for j in jobs] == [
        naming.job_name(first["metadata"]["name"], "group-0", 1, single=True),
        naming.job_name(second["metadata"]["name"], "group-0", 1, single=False),
        naming.job_name(second["metadata"]["name"], "group-1", 1, single=False),
    ]
    assert second["status"]["orchestration"]["totalGroups"] == 2
    job = jobs[0]
    assert job["metadata"]["ownerReferences"][0]["name"] == first["metadata"]["name"]
    workload = [o["metadata"]["name"] for o in job["spec"]["workload"]["native"]["objects"]]
    assert naming.workload_name(job["metadata"]["name"]) in workload
    assert all(o["metadata"]["namespace"] == "team" for o in objects)


def test_the_embedded_workload_is_what_certification_render_prints(tmp_path):
    single = {**CERT, "spec": {**CERT["spec"], "categories": CERT["spec"]["categories"][:1]}}
    objects = _render(tmp_path, single, "--platform", "aws", "--gpu-arch", "h100", "--nodes", "4")
    embedded = [o for o in objects if o["kind"] == "Job"][0]["spec"]["workload"]["native"]["objects"]
    path = tmp_path / "in.yaml"
    offline = CliRunner().invoke(app, ["certification", "render", str(path), "-o", "json", "--platform", "aws",
                                       "--gpu-arch", "h100", "--nodes", "4"])
    assert offline.exit_code == 0, offline.output
    printed = json.loads(offline.stdout)
    assert [(o["kind"], o["metadata"]["name"]) for o in embedded] == [(o["kind"], o["metadata"]["name"]) for o in printed]


def test_workloadrun_workflow_is_named_after_the_run(tmp_path):
    result_objects = _render(tmp_path, RUN, "--platform", "onprem", "--gpu-arch", "h100", "--nodes", "4")
    assert [(o["kind"], o["metadata"]["name"]) for o in result_objects] == [
        ("Workflow", "wr1"), ("Job", "wr1-group-0-iter-1"), ("Job", "wr1-group-1-iter-1")]
    assert result_objects[0]["metadata"]["labels"]["nvcre.nvidia.com/workload-run"] == "wr1"


def test_category_flags_render_what_certification_run_would(tmp_path):
    result = CliRunner().invoke(app, ["workflow", "render", "-c", "communication/nccl-all-reduce", "--name", "night",
                                      "--platform", "gcp", "--gpu-arch", "gb200", "-o", "json"])
    assert result.exit_code == 0, result.output
    names = [o["metadata"]["name"] for o in json.loads(result.stdout) if o["kind"] == "Workflow"]
    assert names == [naming.workflow_name("night", "communication", "nccl-all-reduce")]


@pytest.mark.parametrize("args, message", [
    (["--dry-run", "--platform", "aws"], "cannot be combined with --platform"),
    ([], "--platform and --gpu-arch required"),
])
def test_refused_flag_combinations_exit_2(tmp_path, capsys, args, message):
    from nvcre.cli.main import main

    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(CERT))
    for group in (["workflow"], ["certification"], ["workloadrun"]):
        if group == ["workloadrun"]:
            path.write_text(yaml.safe_dump(RUN))
        assert main([*group, "render", str(path), *args]) == 2
        assert message in capsys.readouterr().err


def test_submittable_drops_what_the_server_sets():
    body = submittable({"apiVersion": "v1", "kind": "ConfigMap", "status": {"x": 1},
                        "metadata": {"name": "a", "uid": "", "ownerReferences": [{"name": "o"}], "labels": {"k": "v"}}})
    assert body == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"k": "v"}}}


def test_classify_refusals():
    rbac = ApiError(403, "Forbidden", 'jobs.nvcre.nvidia.com "x" is forbidden: User "u" cannot create resource "jobs"')
    assert classify(rbac, set())[0] == SKIPPED
    policy = ApiError(403, "Forbidden", 'ValidatingAdmissionPolicy "p" denied request: User "u" cannot use image')
    assert classify(policy, set())[0] == INVALID
    assert classify(ApiError(422, "Invalid", "spec.numNodes: Invalid value"), set())[0] == INVALID
    assert classify(ApiError(404, "NotFound", 'trainingruntimes "wr1-runtime" not found'), {"wr1-runtime"})[0] == WARN


class _Judged:
    def __init__(self, refuse):
        self.refuse = refuse
        self.applied = []

    def get(self, api_version, kind, name, namespace=None):
        return {"metadata": {"name": name}}

    def apply(self, obj, namespace=None, *, dry_run=False, **_):
        assert dry_run, "a dry-run render never writes"
        self.applied.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] in self.refuse:
            raise ApiError(422, "Invalid", "spec.image: Required value")
        return obj


def _objs(*names):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": "team"}} for n in names]


def test_judge_exits_2_when_an_object_is_refused(capsys):
    import typer

    judge(_Judged(set()), _objs("a", "b"))
    assert "ConfigMap/a  OK" in capsys.readouterr().err
    kube = _Judged({"b"})
    with pytest.raises(typer.Exit) as stop:
        judge(kube, _objs("a", "b", "c"))
    assert stop.value.exit_code == 2 and kube.applied == ["a", "b", "c"]  # every object is judged
    err = capsys.readouterr().err
    assert "ConfigMap/b  INVALID  422 Invalid: spec.image: Required value" in err
    assert "refused 1 of 3 object(s): ConfigMap/b" in err and OK == "OK"


def test_dry_run_against_an_unreachable_cluster_exits_3(tmp_path, capsys):
    from nvcre.cli.main import main

    dead = tmp_path / "kubeconfig"
    dead.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }))
    cert, run = tmp_path / "cert.yaml", tmp_path / "run.yaml"
    cert.write_text(yaml.safe_dump(CERT))
    run.write_text(yaml.safe_dump(RUN))
    for args in (["certification", "render", str(cert)], ["workloadrun", "render", str(run)], ["workflow", "render", str(cert)]):
        assert main([*args, "--dry-run", "--kubeconfig", str(dead)]) == 3, args
        err = capsys.readouterr().err
        assert "cannot reach the API server: connection refused" in err and "Traceback" not in err


def _fleet(platform, gpu):
    from nvcre.sim.fleet import FleetSpec, build_fleet

    return build_fleet(FleetSpec(nodes=2, platform=platform, gpu=gpu, racks=1)).nodes


class _Nodes:
    def __init__(self, nodes):
        self.nodes = nodes

    def list(self, api_version, kind, namespace=None, **_):
        return self.nodes if kind == "Node" else []


def _cert_file(tmp_path):
    path = tmp_path / "cert.yaml"
    path.write_text(yaml.safe_dump({**CERT, "spec": {**CERT["spec"], "categories": CERT["spec"]["categories"][:1]}}))
    return str(path)


def test_dry_run_discovery_reads_the_gke_networks_from_allocatable(tmp_path):
    from nvcre.cli.dry_run import discover
    from nvcre.cli.render import certification_objects

    nodes = _fleet("gcp", "h100")
    for node in nodes:
        allocatable = node["status"]["allocatable"]
        for key in [k for k in allocatable if "gpu-nic" in k]:
            allocatable[key.replace("gpu-nic", "tcpxo-net")] = allocatable.pop(key)
    found = discover(_Nodes(nodes), CERT["spec"]["target"])
    assert (found.platform, found.arch, found.names) == ("gcp", "h100", [n["metadata"]["name"] for n in nodes])
    live, _ = certification_objects(_cert_file(tmp_path), platform=None, gpu_arch=None, nodes=None, adapter="native",
                                    namespace=None, discovered=lambda target: discover(_Nodes(nodes), target))
    offline, _ = certification_objects(_cert_file(tmp_path), platform="gcp", gpu_arch="h100", nodes=2, adapter="native",
                                       namespace=None)
    assert "tcpxo-net0" in json.dumps(live) and "tcpxo-net0" not in json.dumps(offline)


def test_dry_run_discovery_finds_the_on_prem_nic_resource(tmp_path):
    from nvcre.cli.dry_run import discover
    from nvcre.cli.render import certification_objects

    nodes = _fleet("onprem", "gb300")
    assert nodes[0]["status"]["allocatable"]["rdma/ib"] == "1k"
    live, _ = certification_objects(_cert_file(tmp_path), platform=None, gpu_arch=None, nodes=None, adapter="native",
                                    namespace=None, discovered=lambda target: discover(_Nodes(nodes), target))
    offline, _ = certification_objects(_cert_file(tmp_path), platform="onprem", gpu_arch="gb300", nodes=2,
                                       adapter="native", namespace=None)
    assert '"rdma/ib"' in json.dumps(live) and '"rdma/ib"' not in json.dumps(offline)


@pytest.mark.parametrize("platform, judged", [
    ("gcp", "not judged: no baseline for h100/gcp (communication/nccl-all-reduce, inter-node 4-node); set thresholds"),
    ("aws", "not judged: no baseline for h100/aws (communication/nccl-all-reduce, inter-node 4-node); set thresholds"),
    ("azure", "busBandwidthGBps >= 370 (production: H100 inter-node 2-32 nodes acceptance line"),
])
def test_render_keys_the_inter_node_bar_by_the_platform_fabric(tmp_path, platform, judged):
    """GCP (TCPX) and AWS (EFA) have no published line: render says so rather than showing the IB 370."""
    cert = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "fab"},
            "spec": {"stage": "production", "target": {}, "categories": [
                {"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 4}}]}}
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(cert))
    result = CliRunner().invoke(app, ["certification", "render", str(path), "--platform", platform,
                                      "--gpu-arch", "h100", "--nodes", "16"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if "judged:" in x)
    assert line.startswith(f"# fab communication/nccl-all-reduce judged: {judged}")
