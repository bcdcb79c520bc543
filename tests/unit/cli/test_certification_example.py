"""`nvcrectl certification example`: the README's walk-through works from the wheel alone,
so the sample Certification ships in the package and prints to stdout."""

from __future__ import annotations

from pathlib import Path

import yaml

from nvcre.api.load import load_file
from nvcre.cli.main import main

REPO = Path(__file__).resolve().parents[3]


def test_example_prints_the_packaged_sample_equal_to_the_checkouts(capsys):
    assert main(["certification", "example"]) == 0
    out = capsys.readouterr()
    assert out.out == (REPO / "examples/certification.yaml").read_text()  # one sample, two places
    assert out.err == ""
    doc = yaml.safe_load(out.out)
    assert doc["kind"] == "Certification" and doc["metadata"]["name"] == "gpu-cluster-cert"


def test_the_printed_sample_loads_and_renders_offline(capsys, tmp_path):
    """What the README does next with it: a valid Certification that renders."""
    assert main(["certification", "example"]) == 0
    path = tmp_path / "certification.yaml"
    path.write_text(capsys.readouterr().out)
    (cert,) = [o for o in load_file(path) if o.kind == "Certification"]
    assert [c.variant for c in cert.spec.categories] == ["nccl-all-reduce", "nemotron5-8b"]
    assert main(["certification", "render", str(path), "--platform", "aws", "--gpu-arch", "h100", "--nodes", "16"]) == 0
    assert [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out) if d].count("Job") == 3

