"""Scenario files and --fault flags: validation that names the field, and ground truth."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre.errors import ManifestError, UserError
from nvcre.sim.faults import FaultModel, load_scenario, parse_fault_flag, parse_scenario

REPO = Path(__file__).resolve().parents[3]


def test_seed_failure_sample_loads():
    scenario = load_scenario(REPO / "examples" / "scenarios" / "seed-failure-sample.yaml")
    assert scenario.fleet.nodes == 16
    model = FaultModel.from_scenario(scenario)
    assert model.nic_factor("gpu-node-07") < 1.0
    assert model.gpu_off_bus("gpu-node-12") is not None
    truth = model.ground_truth([f"gpu-node-{i:02d}" for i in range(1, 17)])
    assert set(truth["faultyNodes"]) == {"gpu-node-07", "gpu-node-12"}
    assert "gpu-node-01" in truth["healthyNodes"]


def test_every_packaged_scenario_is_valid():
    for path in (REPO / "src" / "nvcre" / "sim" / "scenarios").glob("*.yaml"):
        load_scenario(path)


def test_unknown_fault_type_is_named():
    with pytest.raises(ManifestError, match=r"faults\[0\].*unknown fault type"):
        parse_scenario({"faults": [{"type": "cosmic-ray", "node": "gpu-node-01"}]}, source="s.yaml")


def test_factor_out_of_range_names_the_field():
    with pytest.raises(ManifestError, match=r"faults\[1\]\.factor"):
        parse_scenario(
            {"faults": [{"type": "slow-gpu", "node": "a", "factor": 0.5},
                        {"type": "degraded-nic", "node": "a", "factor": 1.5}]},
            source="s.yaml",
        )


def test_unknown_field_is_refused():
    with pytest.raises(ManifestError, match="fleet.colour"):
        parse_scenario({"fleet": {"colour": "green"}})


def test_fault_flags():
    fault = parse_fault_flag("bad-link:nodes=gpu-node-01+gpu-node-02,factor=0.3")
    model = FaultModel((fault,))
    assert model.link_factor("gpu-node-02", "gpu-node-01") == 0.3
    assert model.link_factor("gpu-node-01", "gpu-node-03") == 1.0
    with pytest.raises(UserError, match="unknown fault type"):
        parse_fault_flag("meteor:node=x")
    with pytest.raises(UserError, match="key=value"):
        parse_fault_flag("slow-gpu:node")


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="cannot read"):
        load_scenario(tmp_path / "nope.yaml")


def test_flaky_probabilities_combine():
    model = FaultModel((parse_fault_flag("flaky-node:node=a,probability=0.5"),
                        parse_fault_flag("flaky-node:node=a,probability=0.5")))
    assert model.flaky_probability("a") == pytest.approx(0.75)
