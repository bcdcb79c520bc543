"""Every Certification and WorkloadRun manifest printed in the seeds (tests/data/seeds, copied from the product brief) parses, and was extracted faithfully."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from nvcre.api import Certification, WorkloadRun
from nvcre.api.load import load_file

SEEDS_DIR = Path(__file__).resolve().parents[3] / "examples" / "seeds"
SEED_FILES = sorted(SEEDS_DIR.glob("*.yaml"))
HEADER = re.compile(r"^# From seed: shared/seeds/(\S+?\.txt)")


def _seed_of(path: Path) -> str:
    match = HEADER.match(path.read_text(encoding="utf-8"))
    assert match, f"{path.name}: first line must name its seed file (# From seed: shared/seeds/<file>.txt)"
    return match.group(1)


def _is_fragment(path: Path) -> bool:
    return "prints only" in path.read_text(encoding="utf-8").split("apiVersion:")[0]


def _leaves(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}")
    elif isinstance(node, list):
        for value in node:
            yield from _leaves(value, f"{path}[]")
    else:
        yield path, node


def test_there_are_seed_manifests():
    assert len(SEED_FILES) >= 5


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.name)
def test_seed_manifest_parses(path: Path):
    objects = load_file(path)
    assert len(objects) == 1
    assert isinstance(objects[0], (Certification, WorkloadRun))


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.name)
def test_seed_values_come_from_the_seed(path: Path, data_dir: Path):
    """Every value (except a completed fragment's own name) is printed in the seed it names."""
    seed_text = (data_dir / "seeds" / _seed_of(path)).read_text(encoding="utf-8")
    manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    for where, value in _leaves(manifest):
        if where == ".metadata.name" and _is_fragment(path):
            continue
        assert str(value).lower() in seed_text.lower(), f"{path.name}{where}: {value!r} is not in the seed"


@pytest.mark.parametrize("seed", ["000_20fbe34762fa4fef.txt", "001_d8153ddcc2b4c62f.txt"])
def test_every_full_manifest_in_a_seed_is_extracted(seed: str, data_dir: Path):
    printed = (data_dir / "seeds" / seed).read_text(encoding="utf-8").count("apiVersion: nvcre.nvidia.com/v1alpha1")
    extracted = [p for p in SEED_FILES if _seed_of(p) == seed and not _is_fragment(p)]
    assert len(extracted) == printed


def test_no_seed_prints_a_manifest_we_missed(data_dir: Path):
    for seed in sorted((data_dir / "seeds").glob("*.txt")):
        printed = seed.read_text(encoding="utf-8").count("apiVersion: nvcre.nvidia.com/v1alpha1")
        extracted = [p for p in SEED_FILES if _seed_of(p) == seed.name and not _is_fragment(p)]
        assert len(extracted) == printed, seed.name


def test_seed_defaults_and_merges_are_read_as_documented():
    gang = load_file(SEEDS_DIR / "001-certification-gang-scheduled-cert.yaml")[0]
    assert gang.spec.gang_scheduler.queue == "high-priority"
    assert gang.spec.gang_scheduler.queue_label_key == "kai.scheduler/queue"
    assert gang.spec.enable_mnnvl is True

    env = load_file(SEEDS_DIR / "001-certification-env.yaml")[0]
    merged = env.spec.options_for(0)
    assert [(v.name, v.value) for v in merged.env] == [("NCCL_NVLS_ENABLE", "0"), ("NCCL_IB_HCA", "mlx5_0,mlx5_1")]

    labels = load_file(SEEDS_DIR / "001-certification-workload-metadata.yaml")[0]
    assert labels.spec.options_for(0).workload_metadata.labels == {
        "environment": "burn-in",
        "kueue.x-k8s.io/queue-name": "nccl-queue",
    }

    run = load_file(SEEDS_DIR / "001-workloadrun-nccl-all-reduce-unpinned.yaml")[0]
    assert run.spec.framework.kind == "mpi"
    assert run.spec.framework.mpi.mpi_implementation == "OpenMPI"
    assert run.spec.orchestration.placement == "Unpinned"
