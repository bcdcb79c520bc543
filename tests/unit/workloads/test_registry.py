"""Workload registry mirror: the rewrite rule, and `certification images` over the whole catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from nvcre.api.load import load_file
from nvcre.catalog.data import load_catalog
from nvcre.catalog.resolve import resolve_category
from nvcre.workloads.render import render_workload
from nvcre.cli.main import main
from nvcre.workloads.registry import check_mirror, images_of, mirror_image, split_image

PAIRS = [("aws", "h100"), ("gcp", "h100"), ("azure", "h100"), ("oci", "gb200"), ("onprem", "gb300"),
         ("nscale", "b200"), ("nscale", "gb300")]
MIRROR = "mirror.local:5000"


@pytest.mark.parametrize("image,expected", [
    ("nvcr.io/nvidia/pytorch:25.06-py3", "mirror.local:5000/nvidia/pytorch:25.06-py3"),
    ("us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
     "mirror.local:5000/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"),
    ("ubuntu:22.04", "mirror.local:5000/library/ubuntu:22.04"),
    ("busybox", "mirror.local:5000/library/busybox"),
    ("bitnami/kubectl:1.30", "mirror.local:5000/bitnami/kubectl:1.30"),
    ("docker.io/library/ubuntu", "mirror.local:5000/library/ubuntu"),
    ("localhost/x/y:1", "mirror.local:5000/x/y:1"),
    ("reg:5000/x@sha256:" + "a" * 64, "mirror.local:5000/x@sha256:" + "a" * 64),
    ("mirror.local:5000/nvidia/pytorch:1", "mirror.local:5000/nvidia/pytorch:1"),  # already mirrored
])
def test_mirror_rule(image, expected):
    assert mirror_image(image, MIRROR) == expected


def test_mirror_with_path_prefix_is_idempotent():
    once = mirror_image("nvcr.io/nvidia/pytorch:25.06-py3", "mirror.local/nvcr")
    assert once == "mirror.local/nvcr/nvidia/pytorch:25.06-py3"
    assert mirror_image(once, "mirror.local/nvcr") == once


@pytest.mark.parametrize("bad", ["", "https://mirror.local", "mirror.local/", "mirror.local:5000/Upper",
                                 "mirror local", "mirror.local/x:tag", "a" * 300])
def test_bad_mirror_is_refused_by_name(bad):
    problem = check_mirror(bad)
    assert problem and problem.startswith("workloadRegistry:")


_component = st.from_regex(r"[a-z0-9]{1,8}([._-][a-z0-9]{1,6})?", fullmatch=True)
_host = st.one_of(st.just(""), st.from_regex(r"[a-z0-9]{1,8}\.[a-z]{2,4}(:[0-9]{2,5})?", fullmatch=True),
                  st.just("localhost"))
_suffix = st.one_of(st.just(""), st.from_regex(r":[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True),
                    st.from_regex(r"@sha256:[0-9a-f]{64}", fullmatch=True))
_mirror = st.from_regex(r"[a-z0-9]{1,8}(\.[a-z0-9]{1,6}){0,2}(:[0-9]{2,5})?(/[a-z0-9]{1,6}){0,2}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(host=_host, path=st.lists(_component, min_size=1, max_size=4), suffix=_suffix, mirror=_mirror)
def test_property_rewrite_keeps_path_and_tag_under_the_mirror(host, path, suffix, mirror):
    assume(host or "." not in path[0])  # Docker's rule: a first component with a dot is a registry host
    repo = "/".join(path)
    image = f"{host}/{repo}{suffix}" if host else f"{repo}{suffix}"
    out = mirror_image(image, mirror)
    assert check_mirror(mirror) is None
    assert out.startswith(mirror + "/")
    assert out.endswith(repo + suffix)
    assert mirror_image(out, mirror) == out
    if host:
        assert out == f"{mirror}/{repo}{suffix}"
        assert split_image(image) == (host, repo + suffix)


def _all_entries_cert(tmp_path: Path, options: dict | None = None) -> Path:
    categories = [{"domain": e.domain, "variant": e.variant} for e in load_catalog().sorted_entries()]
    spec = {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, "categories": categories, **(options or {})}
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification",
                                    "metadata": {"name": "all"}, "spec": spec}))
    return path


def _every_image_field(node, found: set[str]) -> set[str]:
    """An independent walk: every string under a key named ``image`` (Secrets/ConfigMaps aside)."""
    if isinstance(node, dict):
        if node.get("kind") in ("Secret", "ConfigMap"):
            return found
        for key, value in node.items():
            if key == "image" and isinstance(value, str):
                found.add(value)
            else:
                _every_image_field(value, found)
    elif isinstance(node, list):
        for value in node:
            _every_image_field(value, found)
    return found


def _run_json(argv, capsys):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("adapter", ["native", "trainjob"])
@pytest.mark.parametrize("platform,arch", PAIRS)
def test_images_equal_the_images_of_the_rendered_objects(tmp_path, capsys, platform, arch, adapter):
    cert = str(_all_entries_cert(tmp_path))
    common = [cert, "--platform", platform, "--gpu-arch", arch, "--nodes", "16", "--adapter", adapter, "-o", "json"]
    rendered = _run_json(["certification", "render", *common], capsys)
    listed = _run_json(["certification", "images", *common], capsys)["images"]
    images = [i["image"] for i in listed]
    assert images == sorted(set(images))  # deduplicated and sorted
    assert set(images) == _every_image_field(rendered, set())
    assert len(images) >= 2
    assert all(i["categories"] for i in listed)


@pytest.mark.parametrize("platform,arch", PAIRS)
def test_property_every_rendered_image_is_under_the_mirror(tmp_path, capsys, platform, arch):
    cert = str(_all_entries_cert(tmp_path))
    common = [cert, "--platform", platform, "--gpu-arch", arch, "--nodes", "16", "--workload-registry", MIRROR]
    for adapter in ("native", "trainjob"):
        rendered = _run_json(["certification", "render", *common, "--adapter", adapter, "-o", "json"], capsys)
        found = _every_image_field(rendered, set())
        assert found and all(i.startswith(MIRROR + "/") for i in found), found
        listed = _run_json(["certification", "images", *common, "--adapter", adapter, "-o", "json"], capsys)
        assert {i["image"] for i in listed["images"]} == found


def test_spec_option_is_what_the_controller_path_honours(tmp_path):
    """The option in the Certification itself (what the controller reads) rewrites every image,
    through the same resolve_category + render_workload the controller's compose step calls."""
    path = _all_entries_cert(tmp_path, {"workloadRegistry": "mirror.example.com/airgap"})
    (cert,) = load_file(path)
    for index, category in enumerate(cert.spec.categories):
        resolved = resolve_category(category, cert.spec, platform="gcp", gpu_arch="h100",
                                    gang_scheduler=cert.spec.gang_scheduler, target=cert.spec.target, index=index)
        nodes = [f"n{i}" for i in range(resolved.valid_node_count(16) or 16)] if resolved.min_gpus else ["n1", "n2"]
        objects = render_workload(resolved, name=f"w{index}", namespace="ns", nodes=nodes, adapter="trainjob")
        images = images_of(objects)
        assert images and all(i.startswith("mirror.example.com/airgap/") for i in images), (category.variant, images)


def test_bad_registry_value_in_a_manifest_is_named(tmp_path):
    from nvcre.api.load import parse_object
    from nvcre.errors import UserError

    body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "x"},
            "spec": {"target": {}, "workloadRegistry": "https://bad/",
                     "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}}
    with pytest.raises(Exception) as err:
        parse_object(body, source="t.yaml")
    assert "workloadRegistry" in str(getattr(err.value, "message", err.value)) or "workloadRegistry" in str(err.value)
    assert isinstance(err.value, (UserError, ValueError))


def test_images_cli_formats_and_bad_input(tmp_path, capsys):
    cert = str(_all_entries_cert(tmp_path))
    assert main(["certification", "images", cert, "--platform", "aws", "--gpu-arch", "h100", "--nodes", "16", "-o", "name"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == sorted(set(lines)) and "nvcr.io/nvidia/pytorch:25.08-py3" in lines
    assert main(["certification", "images", cert, "--platform", "aws", "--gpu-arch", "h100", "--nodes", "16"]) == 0
    assert capsys.readouterr().out.startswith("IMAGE")
    assert main(["certification", "images", cert, "--platform", "aws", "--gpu-arch", "h100", "--nodes", "16", "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["images"]
    code = main(["certification", "images", cert, "--platform", "aws", "--gpu-arch", "h100", "-o", "junit"])
    captured = capsys.readouterr()
    assert code != 0 and captured.out == "" and "-o/--output" in captured.err
    code = main(["certification", "images", cert, "--platform", "aws", "--gpu-arch", "h100", "--nodes", "16",
                 "--workload-registry", "http://m/"])
    captured = capsys.readouterr()
    assert code != 0 and captured.out == "" and "--workload-registry" in captured.err


# ---------------------------------------------------------------- WorkloadRuns

_FRAMEWORKS = {
    "exec": {"exec": {"command": ["true"]}},
    "torch": {"torch": {"script": "/config/train.py"}},
    "mpi": {"mpi": {"binary": "/usr/local/bin/all_reduce_perf_mpi", "mpirunPath": "/usr/local/mpi/bin/mpirun"}},
}
_RUN_PAIRS = [("gcp", "h100"), ("aws", "h100"), ("aws", "gb200"), ("azure", "h100"), ("oci", "gb300"), ("onprem", "h100")]


def _workloadrun(image: str, framework: str, registry: str | None, init_image: str | None) -> dict:
    spec: dict = {"image": image, "numNodes": 2, "framework": _FRAMEWORKS[framework]}
    if registry:
        spec["workloadRegistry"] = registry
    if init_image:
        spec["initContainers"] = [{"name": "prep", "image": init_image, "command": ["true"]}]
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun", "metadata": {"name": "r"}, "spec": spec}


def test_workloadrun_tcpxo_daemon_goes_under_the_mirror():
    """GCP H100 adds the TCPXO daemon sidecar: with workloadRegistry it is pulled from the mirror too
    (before the option existed only the run's own image could be rewritten, by the CLI)."""
    from nvcre.api.load import parse_object
    from nvcre.catalog.resolve import resolve_workloadrun

    body = _workloadrun("nvcr.io/nvidia/pytorch:25.06-py3", "exec", MIRROR, None)
    run = parse_object(body, source="t.yaml")  # the API model takes the field
    resolved = resolve_workloadrun(run, platform="gcp", gpu_arch="h100")
    for adapter in ("native", "trainjob"):
        images = images_of(render_workload(resolved, name="r-0", namespace="ns", nodes=["a", "b"], adapter=adapter))
        assert any("tcpgpudmarxd" in i for i in images), images  # the platform's sidecar is there
        assert images and all(i.startswith(MIRROR + "/") for i in images), images


@settings(max_examples=60, deadline=None)
@given(host=_host, path=st.lists(_component, min_size=1, max_size=3), suffix=_suffix, mirror=_mirror,
       framework=st.sampled_from(sorted(_FRAMEWORKS)), pair=st.sampled_from(_RUN_PAIRS),
       adapter=st.sampled_from(["native", "trainjob"]), with_init=st.booleans())
def test_property_every_workloadrun_image_is_under_the_mirror(host, path, suffix, mirror, framework, pair, adapter, with_init):
    """Whatever the image, framework, platform and adapter, every image a WorkloadRun with
    workloadRegistry renders (its image, init containers, platform sidecars) is under the mirror."""
    from nvcre.catalog.resolve import resolve_workloadrun

    assume(host or "." not in path[0])
    image = (f"{host}/" if host else "") + "/".join(path) + suffix
    run = _workloadrun(image, framework, mirror, "busybox:1.36" if with_init else None)
    resolved = resolve_workloadrun(run, platform=pair[0], gpu_arch=pair[1])
    objects = render_workload(resolved, name="r-0", namespace="ns", nodes=["a", "b"], adapter=adapter)
    found = _every_image_field(objects, set())
    assert found and all(i.startswith(mirror + "/") for i in found), found
    assert set(images_of(objects)) == found


def test_workloadrun_registry_flag_sets_the_option_the_controller_reads():
    from nvcre.cli.workloadrun_ops import apply_registry
    from nvcre.catalog.resolve import resolve_workloadrun

    run = _workloadrun("nvcr.io/nvidia/pytorch:25.06-py3", "exec", None, None)
    apply_registry(run, MIRROR, None)
    assert run["spec"]["workloadRegistry"] == MIRROR
    resolved = resolve_workloadrun(run, platform="gcp", gpu_arch="h100")
    images = images_of(render_workload(resolved, name="r-0", namespace="ns", nodes=["a", "b"]))
    assert all(i.startswith(MIRROR + "/") for i in images), images


def test_workloadrun_bad_registry_in_a_manifest_is_named():
    from nvcre.api.load import parse_object

    with pytest.raises(Exception) as err:
        parse_object(_workloadrun("img", "exec", "https://bad/", None), source="run.yaml")
    assert "workloadRegistry" in str(getattr(err.value, "message", err.value)) or "workloadRegistry" in str(err.value)
