"""The shipped baselines: every number has a source, unknown stays unknown, bad data is named."""

from __future__ import annotations

import json
import typing

import pytest
import yaml

from nvcre.api.options import Stage
from nvcre.catalog.template import CatalogError
from nvcre.cli.main import main
from nvcre.judge.baselines import BASELINES_FILE, load_baselines, parse_baselines
from nvcre.judge.stages import STAGES


def test_every_entry_has_a_source_and_published_lines_are_the_reference_figures():
    data = load_baselines()
    assert all(e.source for e in data.entries)
    h100 = data.find(arch="h100", category="communication/nccl-all-reduce", scope="intra-node",
                     metric="busBandwidthGBps", nodes=1, platform="azure", nics_per_node=8)
    assert (h100.expected, h100.acceptance) == (476, 460) and "nccl-tests/issues/290" in h100.source
    inter = data.find(arch="h100", category="communication/nccl-all-reduce", scope="inter-node",
                      metric="busBandwidthGBps", nodes=4, platform="azure", nics_per_node=8)
    assert inter.acceptance == 370
    assert data.find(arch="h200", category="communication/nccl-all-reduce", scope="intra-node",
                     metric="busBandwidthGBps", nodes=1, platform="azure", nics_per_node=8).acceptance == 431
    gb300 = data.find(arch="gb300", category="communication/nccl-all-reduce", scope="mnnvl",
                      metric="busBandwidthGBps", nodes=18, platform="azure", nics_per_node=4)
    assert gb300.expected == 937
    loop = data.find(arch="h100", category="communication/nccl-loopback", scope="intra-node",
                     metric="busBandwidthGBps", nodes=1, platform="azure", nics_per_node=8)
    assert loop.acceptance == 40


def test_h20_is_a_measured_report_without_a_pass_line():
    h20 = load_baselines().find(arch="h20", category="communication/nccl-all-reduce", scope="inter-node",
                                metric="busBandwidthGBps", nodes=2, platform="onprem", nics_per_node=8)
    assert h20.expected == 427.58 and h20.acceptance is None and "seed 003" in h20.source


def test_no_entry_for_a_fabric_or_size_it_was_not_measured_on():
    data = load_baselines()
    kwargs = dict(arch="h100", category="communication/nccl-all-reduce", scope="inter-node", metric="busBandwidthGBps")
    assert data.find(**kwargs, nodes=64, platform="azure", nics_per_node=8) is None  # above the stated group sizes
    assert data.find(**kwargs, nodes=4, platform="azure", nics_per_node=4) is None  # another fabric
    assert data.find(**kwargs, nodes=4, platform="azure", nics_per_node=None) is None  # NIC count unknown


@pytest.mark.parametrize("platform", ["onprem", "azure", "oci", "nscale", "togetherai", "mistral", "forge"])
def test_ib_and_roce_platforms_get_the_8x400g_inter_node_line(platform):
    inter = load_baselines().find(arch="h100", category="communication/nccl-all-reduce", scope="inter-node",
                                  metric="busBandwidthGBps", nodes=4, platform=platform, nics_per_node=8)
    assert inter.fabric == "8x400g" and inter.acceptance == 370


@pytest.mark.parametrize("arch", ["h100", "h200"])
@pytest.mark.parametrize("platform, fabric", [("aws", "efa"), ("gcp", "gpudirect-tcpx")])
def test_a_platform_fabric_never_borrows_the_ib_line(arch, platform, fabric):
    """AWS (EFA) and GCP (TCPX/TCPXO) report 8 NICs from gpu-defaults, yet the NDR line is not theirs."""
    data = load_baselines()
    assert data.platform_fabric(platform).name == fabric
    inter = data.find(arch=arch, category="communication/nccl-all-reduce", scope="inter-node",
                      metric="busBandwidthGBps", nodes=4, platform=platform, nics_per_node=8)
    assert inter.fabric == fabric and inter.acceptance is None and inter.expected is None  # "unknown"
    loop = data.find(arch="h100", category="communication/nccl-loopback", scope="intra-node",
                     metric="busBandwidthGBps", nodes=1, platform=platform, nics_per_node=8)
    assert loop is None  # the IB loopback line is an IB figure
    intra = data.find(arch=arch, category="communication/nccl-all-reduce", scope="intra-node",
                      metric="busBandwidthGBps", nodes=1, platform=platform, nics_per_node=8)
    assert intra.acceptance in (460, 431)  # NVLink: the same on every platform


@pytest.mark.parametrize(
    "fabrics, field",
    [
        ({"efa": {"platforms": ["aws"], "nicsPerNode": 8}}, "fabrics.efa: set nicsPerNode"),
        ({"efa": {"description": "x"}}, "fabrics.efa: set nicsPerNode"),
        ({"efa": {"platforms": ["amazon"]}}, "'amazon' is not one of"),
        ({"a": {"platforms": ["aws"]}, "b": {"platforms": ["aws"]}}, "already the platform of fabric a"),
        ({"x": {"nicsPerNode": 0}}, "fabrics.x.nicsPerNode"),
    ],
)
def test_bad_fabrics_are_named(fabrics, field):
    data = yaml.safe_load(BASELINES_FILE.read_text())
    data["fabrics"] = fabrics
    data["baselines"] = []
    with pytest.raises(CatalogError) as err:
        parse_baselines(data)
    assert field in str(err.value)


def test_stages_in_data_match_the_api_enum():
    assert tuple(load_baselines().stages) == STAGES == typing.get_args(Stage)
    fractions = [load_baselines().stages[s].fraction for s in STAGES]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0  # production is the line itself


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["baselines"][0].update(acceptance=-3), "acceptance"),
        (lambda d: d["baselines"][0].update(expected="about 470"), "expected"),
        (lambda d: d["baselines"][0].pop("source"), "source"),
        (lambda d: d["baselines"][0].update(scope="rack"), "scope"),
        (lambda d: d["baselines"][0].update(colour="red"), "colour"),
        (lambda d: d["baselines"][1].update(nodes=[8, 2]), "nodes"),
        (lambda d: d["baselines"][1].update(fabric="16x800g"), "fabric"),
        (lambda d: d["stages"]["production"].update(fraction=1.5), "fraction"),
        (lambda d: d["baselines"].append(dict(d["baselines"][0])), "duplicate"),
    ],
)
def test_bad_baseline_data_names_the_entry_and_key(mutate, field):
    data = yaml.safe_load(BASELINES_FILE.read_text())
    mutate(data)
    with pytest.raises(CatalogError) as err:
        parse_baselines(data)
    assert field in str(err.value)


def test_cli_lists_baselines_as_json_and_yaml(capsys):
    assert main(["certification", "baselines", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"stages", "fabrics", "baselines"} <= set(doc)
    h20 = [b for b in doc["baselines"] if b["arch"] == "h20"]
    assert h20 and all(b["acceptance"] == "unknown" for b in h20)
    assert main(["certification", "baselines", "-o", "yaml", "--gpu-arch", "h100"]) == 0
    rows = yaml.safe_load(capsys.readouterr().out)["baselines"]
    assert rows and {r["arch"] for r in rows} == {"h100"}


def test_cli_refuses_bad_format_and_unknown_arch(capsys):
    assert main(["certification", "baselines", "-o", "xml"]) == 2
    assert "--output" in capsys.readouterr().err
    assert main(["certification", "baselines", "--gpu-arch", "z9"]) == 2
    assert "--gpu-arch" in capsys.readouterr().err
