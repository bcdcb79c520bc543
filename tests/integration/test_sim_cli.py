"""nvcrectl sim up/status/down against a cluster given by --kubeconfig: the fleet comes
up in the background, status reports it, down leaves nothing running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.sim.process import read_pid


def _nvcrectl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nvcre.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ})


def test_sim_up_status_down(kubeconfig, kubectl, tmp_path: Path):
    state = str(tmp_path / "sim")
    up = _nvcrectl("sim", "up", "--kubeconfig", kubeconfig, "--state-dir", state, "--nodes", "3", "--racks", "1",
                   "--platform", "gcp", "--gpu", "gb200", "--fault", "degraded-nic:node=gpu-node-02,factor=0.5")
    try:
        assert up.returncode == 0, up.stderr
        assert f"export KUBECONFIG={Path(kubeconfig).resolve()}" in up.stdout
        assert "gpu-node-02: degraded-nic" in up.stdout
        pid = read_pid(Path(state))
        assert pid is not None
        nodes = json.loads(kubectl("get", "nodes", "-l", "sim.nvcre.nvidia.com/fleet=sim", "-o", "json").stdout)["items"]
        assert len(nodes) == 3
        assert nodes[0]["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-GB200"
        assert nodes[0]["spec"]["providerID"].startswith("gce://")
        status = _nvcrectl("sim", "status", "--state-dir", state)
        assert status.returncode == 0, status.stdout + status.stderr
        assert "nodes: 3/3 Ready" in status.stdout
        again = _nvcrectl("sim", "up", "--kubeconfig", kubeconfig, "--state-dir", state)
        assert again.returncode == 2 and "already running" in again.stderr
        truth = json.loads((Path(state) / "ground-truth.json").read_text())
        assert list(truth["faultyNodes"]) == ["gpu-node-02"]
    finally:
        down = _nvcrectl("sim", "down", "--state-dir", state)
    assert down.returncode == 0, down.stderr
    assert not Path(f"/proc/{pid}").exists() or "nvcre.sim.kubelet" not in Path(f"/proc/{pid}/cmdline").read_text()
    left = json.loads(kubectl("get", "nodes", "-l", "sim.nvcre.nvidia.com/fleet=sim", "-o", "json").stdout)["items"]
    assert left == []
    status = _nvcrectl("sim", "status", "--state-dir", state)
    assert status.returncode == 1 and "fleet: not running" in status.stdout
