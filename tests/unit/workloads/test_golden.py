"""Golden renders: all eight categories for several platform/GPU pairs, both adapters.

The files under tests/golden/ are reviewed by people; regenerate them on purpose with
``NVCRE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/workloads`` and read the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nvcre.catalog.resolve import resolve_category
from nvcre.workloads.render import render_workload
from nvcre.workloads.output import dump_yaml

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
PAIRS = [("aws", "h100"), ("aws", "gb200"), ("aws", "gb300"), ("gcp", "h100"), ("gcp", "gb200"),
         ("azure", "h100"), ("oci", "gb300"), ("onprem", "b200")]
CATEGORIES = [
    "communication/nccl-all-reduce", "communication/nccl-all-gather", "communication/nccl-alltoall",
    "communication/nccl-loopback", "communication/nccl-loopback-nvswitch", "diagnostics/dcgm-level4",
    "training/nemotron5-8b", "training/nemotron5-56b",
]


def render_pair(platform: str, arch: str, adapter: str) -> str:
    parts = []
    for key in CATEGORIES:
        domain, variant = key.split("/")
        r = resolve_category({"domain": domain, "variant": variant}, None, platform=platform, gpu_arch=arch)
        per_node = r.nodes_per_job == 1
        nodes = ["node-001"] if per_node else ["node-001", "node-002"]
        if r.min_gpus and not per_node:
            nodes = [f"node-{i:03d}" for i in range(1, r.valid_node_count(8) + 1)]
        name = f"golden-{variant}"
        objects = render_workload(r, name=name, namespace="nvcre-golden", nodes=nodes, adapter=adapter,
                                  job=name, group="group-0")
        parts.append(f"# ===== {key} on {platform}/{arch} ({adapter}); overrides: "
                     f"{', '.join(r.applied_overrides) or 'none'}\n" + dump_yaml(objects))
    return "".join(parts)


@pytest.mark.parametrize("adapter", ["native", "trainjob"])
@pytest.mark.parametrize("platform, arch", PAIRS)
def test_golden(platform, arch, adapter):
    path = GOLDEN / f"{platform}-{arch}-{adapter}.yaml"
    text = render_pair(platform, arch, adapter)
    if os.environ.get("NVCRE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing {path}; run NVCRE_UPDATE_GOLDEN=1 pytest tests/unit/workloads"
    assert text == path.read_text(), f"{path.name} differs from a fresh render; review and regenerate"
