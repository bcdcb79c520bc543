"""Shared pytest configuration: where the repository and ../shared are."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["nvcre.testbed.pytest_plugin", "nvcre.sim.pytest_plugin"]

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"../shared is missing next to the checkout (looked in {SHARED})")
    return SHARED


@pytest.fixture(scope="session")
def fixtures_dir(shared_dir: Path) -> Path:
    return shared_dir / "fixtures"
