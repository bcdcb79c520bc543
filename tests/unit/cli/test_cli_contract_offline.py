"""The CLI contract for the commands that need no cluster, run through typer's CliRunner:
every machine format is one document on stdout that a parser reads, everything else is
on stderr, and every listing reads at 80 columns (no line longer, no word cut).

The cluster commands' half is tests/e2e/test_cli_contract.py.
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from nvcre.cli.main import app
from nvcre.cli.nodes import write_nodes
from nvcre.judge import ledger as J

PARSE = {"json": json.loads, "yaml": yaml.safe_load}
CERT = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "Certification",
    "metadata": {"name": "demo", "namespace": "team"},
    "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
             "categories": [{"domain": "communication", "variant": "nccl-all-reduce"},
                            {"domain": "diagnostics", "variant": "dcgm-level4"},
                            {"domain": "training", "variant": "nemotron5-8b"}]},
}
OFFLINE = ("--platform", "aws", "--gpu-arch", "h100", "--nodes", "4")


def _invoke(*args: str, columns: int = 80):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, (args, result.output, result.exception)
    assert "Traceback" not in result.stderr
    return result


@pytest.fixture()
def cert_file(tmp_path):
    path = tmp_path / "cert.yaml"
    path.write_text(yaml.safe_dump(CERT))
    return str(path)


def _readable_at_80(text: str, words: list[str]) -> None:
    assert all(len(line) <= 80 for line in text.splitlines()), text
    for word in words:  # every identifier appears whole on one line
        assert word in text, (word, text)


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_render_and_workflow_render_print_one_document(cert_file, fmt):
    for command in (("certification", "render"), ("workflow", "render")):
        out = _invoke(*command, cert_file, *OFFLINE, "-o", fmt)
        doc = PARSE[fmt](out.stdout) if fmt == "json" else list(yaml.safe_load_all(out.stdout))
        objects = doc if isinstance(doc, list) else [doc]
        kinds = {o["kind"] for o in objects if o}
        assert "Job" in kinds or "JobSet" in kinds or "TrainJob" in kinds, (command, kinds)
        assert "BEGIN OPENSSH PRIVATE KEY" not in out.stdout and "PRIVATE KEY-----" not in out.stdout


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_version_document(fmt):
    doc = PARSE[fmt](_invoke("version", "-o", fmt).stdout)
    assert doc["apiVersion"] == "nvcre.nvidia.com/v1alpha1" and doc["version"]


def test_images_every_listing_format(cert_file):
    docs = {fmt: PARSE[fmt](_invoke("certification", "images", cert_file, *OFFLINE, "-o", fmt).stdout)
            for fmt in ("json", "yaml")}
    assert docs["json"] == docs["yaml"]
    images = [i["image"] for i in docs["json"]["images"]]
    assert len(images) == 3 and all(i["categories"] for i in docs["json"]["images"])
    assert _invoke("certification", "images", cert_file, *OFFLINE, "-o", "name").stdout.split() == images
    table = _invoke("certification", "images", cert_file, *OFFLINE).stdout
    _readable_at_80(table, images + ["communication/nccl-all-reduce", "diagnostics/dcgm-level4"])
    wide = _invoke("certification", "images", cert_file, *OFFLINE, "-o", "wide").stdout
    assert wide.splitlines()[0].split() == ["IMAGE", "REGISTRY", "CATEGORIES"]
    assert any(line.split()[:2] == ["nvcr.io/nvidia/pytorch:25.08-py3", "nvcr.io"] for line in wide.splitlines()), wide


def test_baselines_every_listing_format():
    doc = PARSE["json"](_invoke("certification", "baselines", "-o", "json").stdout)
    assert PARSE["yaml"](_invoke("certification", "baselines", "-o", "yaml").stdout) == doc
    names = _invoke("certification", "baselines", "-o", "name").stdout.splitlines()
    assert len(names) == len(doc["baselines"]) and "h100:8x400g:inter-node:communication/nccl-all-reduce" in names
    assert all(" " not in n for n in names)
    table = _invoke("certification", "baselines").stdout
    _readable_at_80(table, ["CATEGORY", "ACCEPTANCE", "communication/nccl-all-reduce", "460 GB/s", "inter-node 2-32"])
    assert "Categor\n" not in table and "│" not in table
    wide = _invoke("certification", "baselines", "-o", "wide").stdout
    assert "SOURCE" in wide.splitlines()[0] and "azurehpc-health-checks" in wide and "8x400g" in wide


def test_list_categories_every_listing_format():
    doc = PARSE["json"](_invoke("certification", "list-categories", "-o", "json").stdout)
    assert PARSE["yaml"](_invoke("certification", "list-categories", "-o", "yaml").stdout) == doc
    keys = [c["category"] for c in doc["categories"]]
    assert _invoke("certification", "list-categories", "-o", "name").stdout.split() == keys
    _readable_at_80(_invoke("certification", "list-categories").stdout, keys)
    assert "THRESHOLDS" in _invoke("certification", "list-categories", "-o", "wide").stdout


def _ledger() -> list[dict]:
    """NodeReadiness objects as the controller writes them (the ledger's own fold)."""
    records = []
    for node, result, value in (("gpu-node-07", J.FAILED, 185.4), ("gpu-node-01", J.PASSED, 371.0)):
        status, _ = J.update(None, [J.NodeResult(
            node=node, category="communication/nccl-all-reduce", scope="4 nodes x 8 GPUs, inter-node", result=result,
            time="2026-12-02T04:00:00Z", run="team/gpu-cluster-cert-with-a-long-name", stage="production",
            value=value, gpu_hours=1.25)])
        records.append({"metadata": {"name": node}, "spec": {"nodeName": node}, "status": status})
    return records


def test_nodes_every_listing_format(capsys, monkeypatch):
    from nvcre.cli.nodes import select_rows

    monkeypatch.setenv("COLUMNS", "80")
    rows = select_rows(_ledger())
    for fmt in ("json", "yaml"):
        write_nodes(rows, fmt)
        out = capsys.readouterr()
        assert [n["node"] for n in PARSE[fmt](out.out)["nodes"]] == ["gpu-node-01", "gpu-node-07"] and out.err == ""
    write_nodes(select_rows(_ledger(), stage="production", not_ready=True), "name")
    assert capsys.readouterr().out == "gpu-node-07\n"
    write_nodes(rows, "table")
    table = capsys.readouterr().out
    # the run's name is too long to sit beside the rest at 80 columns: it goes whole under its row
    assert table.splitlines()[:2] == ["NODE         STAGE       LAST RESULT  GPU-HOURS", "    LAST RUN"], table
    _readable_at_80(table, ["gpu-node-07", "team/gpu-cluster-cert-with-a-long-name", "1.25"])
    write_nodes(rows, "wide")
    wide = capsys.readouterr().out
    assert "FAILING" in wide and "communication/nccl-all-reduce" in wide and "0/1" in wide and "1/1" in wide


def test_nodes_refuses_an_unknown_format_before_any_request(capsys):
    from nvcre.cli.main import main

    assert main(["nodes", "-o", "xml", "--kubeconfig", "/nonexistent"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "table, wide, json, yaml, name" in out.err and "Traceback" not in out.err
