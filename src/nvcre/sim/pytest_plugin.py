"""pytest fixtures for a simulated GPU fleet on the session's control plane.

Registered in tests/conftest.py next to ``nvcre.testbed.pytest_plugin``.

- ``fleet`` (function): a factory. ``fleet(nodes=4, platform="aws", gpu="h100",
  racks=1, dra=False, faults=("degraded-nic:node=gpu-node-02,factor=0.5",),
  scenario=None, time_scale=100.0, name_prefix="gpu-node")`` starts the fake kubelet
  for that fleet, waits until every node is registered and Ready, and returns a
  :class:`~nvcre.sim.process.FleetHandle` (``.nodes``, ``.ground_truth()``,
  ``.expected_busbw(...)``, ``.log_file``). Every fleet it started is stopped and its
  nodes (and their pods) deleted when the test ends.
- ``module_fleet`` (module): the same factory, torn down after the module.

Fleets share node names (``gpu-node-01``...) unless ``name_prefix`` differs, so run
one at a time or give each its own prefix.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nvcre.sim.faults import load_scenario
from nvcre.sim.kubelet import KubeletConfig
from nvcre.sim.process import FleetError, FleetHandle, self_signed_kubelet_cert, start_fleet

_counter = itertools.count(1)


def _factory(control_plane, base: Path) -> tuple[Callable[..., FleetHandle], list[FleetHandle]]:
    started: list[FleetHandle] = []

    def start(
        nodes: int = 4,
        *,
        platform: str = "aws",
        gpu: str = "h100",
        racks: int = 1,
        dra: bool = False,
        faults: tuple[str, ...] | list[str] = (),
        scenario: str | Path | dict[str, Any] | None = None,
        time_scale: float = 100.0,
        name_prefix: str = "gpu-node",
        fleet_name: str | None = None,
    ) -> FleetHandle:
        number = next(_counter)
        state_dir = base / f"fleet-{number}"
        state_dir.mkdir(parents=True, exist_ok=True)
        if isinstance(scenario, (str, Path)):
            scenario_data = load_scenario(scenario).model_dump(by_alias=True, exclude_none=True)
        else:
            scenario_data = dict(scenario or {})
        if control_plane.kubelet_serving_cert is not None:
            cert, key = str(control_plane.kubelet_serving_cert), str(control_plane.kubelet_serving_key)
            client_ca = str(control_plane.kubelet_client_ca)
        else:
            cert, key = self_signed_kubelet_cert(state_dir)
            client_ca = None
        config = KubeletConfig(
            kubeconfig=str(control_plane.kubeconfig), state_dir=str(state_dir), nodes=nodes, platform=platform,
            gpu=gpu, racks=racks, dra=dra, name_prefix=name_prefix, fleet_name=fleet_name or f"test{number}",
            time_scale=time_scale, scenario=scenario_data, faults=list(faults), tls_cert=cert, tls_key=key,
            client_ca=client_ca,
        )
        try:
            handle = start_fleet(config)
        except FleetError as exc:
            pytest.fail(exc.message, pytrace=False)
        started.append(handle)
        return handle

    return start, started


def _stop_all(started: list[FleetHandle]) -> None:
    for handle in reversed(started):
        handle.stop(delete=True)


@pytest.fixture
def fleet(control_plane, tmp_path_factory) -> Iterator[Callable[..., FleetHandle]]:
    start, started = _factory(control_plane, tmp_path_factory.mktemp("fleet"))
    try:
        yield start
    finally:
        _stop_all(started)


@pytest.fixture(scope="module")
def module_fleet(control_plane, tmp_path_factory) -> Iterator[Callable[..., FleetHandle]]:
    start, started = _factory(control_plane, tmp_path_factory.mktemp("module-fleet"))
    try:
        yield start
    finally:
        _stop_all(started)
