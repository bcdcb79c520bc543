"""Node fixtures: the real Node objects in tests/data/fixtures/nodes, by file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml


def load_nodes(fixtures_dir: Path, name: str) -> list[dict]:
    docs = yaml.safe_load_all((fixtures_dir / "nodes" / name).read_text())
    return [d for d in docs if d and d.get("kind") == "Node"]


@pytest.fixture(scope="session")
def nodes_of(fixtures_dir):
    return lambda name: load_nodes(fixtures_dir, name)
