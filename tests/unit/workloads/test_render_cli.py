"""`nvcrectl certification render` / `workloadrun render`, and every seed manifest renders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nvcre.api.load import load_file
from nvcre.catalog.resolve import resolve_category, resolve_workloadrun
from nvcre.workloads.render import render_workload
from nvcre.cli.main import main
from nvcre.discovery.gpu import PRODUCT_LABEL, parse_product

REPO = Path(__file__).resolve().parents[3]
SEEDS = sorted((REPO / "examples" / "seeds").glob("*.yaml"))


def _seed_objects():
    for path in SEEDS:
        for obj in load_file(path):
            if obj.kind in ("Certification", "WorkloadRun"):
                yield path.name, obj


def test_there_are_seed_manifests_of_both_kinds():
    kinds = {obj.kind for _, obj in _seed_objects()}
    assert kinds == {"Certification", "WorkloadRun"}


@pytest.mark.parametrize("adapter", ["native", "trainjob"])
def test_every_seed_manifest_renders(adapter):
    count = 0
    for name, obj in _seed_objects():
        spec = obj.spec
        selector = (spec.target.node_selector or {}) if spec.target else {}
        arch = parse_product(selector.get(PRODUCT_LABEL, "")) or "h100"
        nodes = list(spec.target.node_names or []) if spec.target and spec.target.node_names else ["n1", "n2", "n3", "n4"]
        if obj.kind == "Certification":
            for i, category in enumerate(spec.categories):
                r = resolve_category(category, spec, platform="aws", gpu_arch=arch, gang_scheduler=spec.gang_scheduler,
                                     target=spec.target, index=i, source=name)
                group = nodes[:1] if r.nodes_per_job == 1 else nodes[: (r.valid_node_count(len(nodes)) or len(nodes))]
                objects = render_workload(r, name=f"seed-{i}", namespace="ns", nodes=group, adapter=adapter,
                                          target=spec.target)
                assert objects, name
                count += 1
        else:
            r = resolve_workloadrun(obj, platform="aws", gpu_arch=arch)
            objects = render_workload(r, name=obj.name, namespace="ns", nodes=nodes[: spec.num_nodes], adapter=adapter,
                                      target=spec.target)
            assert objects, name
            count += 1
    assert count >= 10


def test_cli_render_demo(capsys):
    code = main(["certification", "render", str(REPO / "examples/certification.yaml"), "--platform", "aws",
                 "--gpu-arch", "h100", "--nodes", "16"])
    out = capsys.readouterr().out
    assert code == 0
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds.count("Job") == 3  # nccl worker + launcher, training ranks
    # the names the controller gives them (nvcre.controller.naming), not a render-only scheme
    from nvcre.api.load import load_file
    from nvcre.controller import naming

    cert = next(o for o in load_file(REPO / "examples/certification.yaml") if o.kind == "Certification")
    cat = cert.spec.categories[0].model_dump(by_alias=True, exclude_none=True, mode="json")
    wf = naming.workflow_name(cert.name, cat["domain"], cat["variant"], cat.get("options"))
    job = naming.job_name(wf, "group-0", 1, single=True)
    worker = [d for d in docs if d["metadata"]["name"] == naming.workload_name(job) + "-worker"][0]
    assert worker["spec"]["completions"] == 16
    assert f"Workflow {wf}" in out
    # no secret material: the MPI key pair is generated in the cluster when the Job is created
    assert "PRIVATE KEY" not in out
    secrets = [d for d in docs if d["kind"] == "Secret"]
    assert secrets and all("nvcre.nvidia.com/generate-ssh-keypair" in d["metadata"]["annotations"] and not d.get("stringData")
                           for d in secrets), secrets
    assert "# gpu-cluster-cert communication/nccl-all-reduce on aws/h100" in out


def test_cli_render_json_trainjob(capsys):
    code = main(["certification", "render", str(REPO / "examples/certification.yaml"), "--platform", "oci",
                 "--gpu-arch", "NVIDIA-GB300", "--adapter", "trainjob", "-o", "json"])
    objects = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {"TrainJob", "TrainingRuntime", "ComputeDomain"} <= {o["kind"] for o in objects}


def test_cli_missing_flags_are_named(capsys):
    code = main(["certification", "render", str(REPO / "examples/certification.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "--platform and --gpu-arch required" in err and "Traceback" not in err


def test_cli_arch_from_product_selector(tmp_path, capsys):
    manifest = tmp_path / "c.yaml"
    manifest.write_text(yaml.safe_dump({
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
        "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-GB200"}},
                 "categories": [{"domain": "communication", "variant": "nccl-loopback"}]}}))
    code = main(["certification", "render", str(manifest), "--platform", "gcp", "--nodes", "3"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("kind: Job") == 3 and "gcp/gb200" in out


def test_cli_invalid_manifest_names_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
        "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                                "options": {"testScale": "galaxy"}}]}}))
    code = main(["certification", "render", str(bad), "--platform", "aws", "--gpu-arch", "h100"])
    err = capsys.readouterr().err
    assert code == 2 and "testScale" in err and "Traceback" not in err
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(yaml.safe_dump({
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
        "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-bogus"}]}}))
    code = main(["certification", "render", str(unknown), "--platform", "aws", "--gpu-arch", "h100"])
    err = capsys.readouterr().err
    assert code == 2 and "spec.categories[0].variant" in err and "communication/nccl-all-reduce" in err


def test_cli_unknown_platform_and_adapter(capsys):
    path = str(REPO / "examples/certification.yaml")
    assert main(["certification", "render", path, "--platform", "ibm", "--gpu-arch", "h100"]) == 2
    assert "--platform: unknown platform 'ibm'" in capsys.readouterr().err
    assert main(["certification", "render", path, "--platform", "aws", "--gpu-arch", "h100", "--adapter", "jobset"]) == 2
    assert "--adapter" in capsys.readouterr().err


def test_cli_workloadrun_render(capsys):
    path = REPO / "examples/seeds/000-workloadrun-nccl-all-reduce.yaml"
    code = main(["workloadrun", "render", str(path), "--platform", "aws", "--gpu-arch", "gb200"])
    out = capsys.readouterr().out
    assert code == 0 and "all_reduce_perf_mpi" in out and "ComputeDomain" in out


def test_cli_list_categories(capsys):
    assert main(["certification", "list-categories", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["categories"]) == 8 and "aws" in data["platforms"]
    assert main(["certification", "list-categories"]) == 0
    assert "dcgm-level4" in capsys.readouterr().out
