"""Integration tests run against a real API server (the ``control_plane`` fixture from
nvcre.testbed.pytest_plugin). They are marked ``integration`` so ``-m 'not integration'``
leaves them out; without the binaries they fail and say to run ``make kube``."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def oci_registry():
    """A real OCI registry on 127.0.0.1 (hack/registry/build.sh, reused from ~/.cache/nvcre)."""
    from nvcre.testbed.registry import start_registry

    with start_registry() as address:
        yield address
