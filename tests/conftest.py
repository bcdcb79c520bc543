"""Shared pytest configuration: where the repository and its test data are.

Everything the tests read lives inside the repository (``tests/data``), so a clone
with nothing beside it runs the whole suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["nvcre.testbed.pytest_plugin", "nvcre.sim.pytest_plugin"]

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "tests" / "data"
FIXTURES = DATA / "fixtures"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``tests/data``: real tool outputs (``fixtures/``) and the product brief (``seeds/``)."""
    return DATA


@pytest.fixture(scope="session")
def fixtures_dir(data_dir: Path) -> Path:
    return data_dir / "fixtures"
