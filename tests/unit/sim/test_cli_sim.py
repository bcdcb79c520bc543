"""nvcrectl sim: bad flags and files are refused with a message and exit code 2, before
anything starts."""

from __future__ import annotations

import pytest

from nvcre.cli.main import main


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--nodes", "0"], "--nodes"),
        (["--gpu", "z900"], "--gpu"),
        (["--platform", "mars"], "--platform"),
        (["--racks", "9", "--nodes", "4"], "--racks"),
        (["--time-scale", "0"], "--time-scale"),
        (["--fault", "meteor:node=gpu-node-01"], "unknown fault type"),
        (["--fault", "degraded-nic:node=gpu-node-99,factor=0.5"], "gpu-node-99"),
        (["--fault", "degraded-nic:node=gpu-node-01,factor=3"], "factor"),
        (["--scenario", "/does/not/exist.yaml"], "--scenario"),
        (["--kubeconfig", "/does/not/exist"], "--kubeconfig"),
    ],
)
def test_bad_input_exits_2_with_a_message(argv, message, capsys, tmp_path):
    code = main(["sim", "up", "--state-dir", str(tmp_path), *argv])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert not (tmp_path / "kubelet.pid").exists()


def test_bad_scenario_field_is_named(capsys, tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("faults:\n  - type: slow-gpu\n    node: gpu-node-01\n    factor: 2\n")
    assert main(["sim", "up", "--state-dir", str(tmp_path), "--scenario", str(bad)]) == 2
    assert "faults[0].factor" in capsys.readouterr().err


def test_status_and_down_with_nothing_running(capsys, tmp_path):
    assert main(["sim", "status", "--state-dir", str(tmp_path)]) == 1
    assert "fleet: not running" in capsys.readouterr().out
    assert main(["sim", "down", "--state-dir", str(tmp_path)]) == 0
    assert "nothing running" in capsys.readouterr().out
