"""Shared helpers for the simulator's unit tests: a fleet and a run context."""

from __future__ import annotations

import pytest

from nvcre.sim.emulators.base import GroupHost, PodView, RunContext
from nvcre.sim.faults import FaultModel, parse_fault_flag
from nvcre.sim.fleet import FleetSpec, build_fleet


@pytest.fixture
def make_ctx():
    """make_ctx(argv, faults=[...], nodes=4, gpu="h100", node="gpu-node-01", env={}, files={}, ...)."""

    def make(argv, *, faults=(), nodes=4, gpu="h100", platform="aws", racks=2, node="gpu-node-01", env=None,
             files=None, gpus=8, rdma=True, off_bus=frozenset(), checkpoints=None, noise=0.01, restart=0):
        model = FaultModel(tuple(parse_fault_flag(f) for f in faults), seed=3, noise=noise)
        fleet = build_fleet(FleetSpec(nodes=nodes, gpu=gpu, platform=platform, racks=racks), model)
        hosts = {
            f"{name}-worker": GroupHost(f"{name}-worker", f"{name}-worker", fleet.facts[name], rdma)
            for name in fleet.names
        }
        hosts.update({f"{name}-worker.svc.ns.svc": hosts[f"{name}-worker"] for name in fleet.names})
        ctx = RunContext(
            command=list(argv[:1]),
            args=list(argv[1:]),
            env=dict(env or {}),
            pod=PodView("launcher-0", "ns", uid="ns/launcher-0", gpus_requested=gpus, rdma_requested=rdma,
                        restart_count=restart),
            node=fleet.facts[node],
            faults=model,
            seed="3",
            time_scale=100.0,
            checkpoints=dict(checkpoints or {}),
            off_bus=off_bus,
            read_file=(files or {}).get,
            resolve_host=hosts.get,
        )
        ctx.fleet = fleet
        return ctx

    return make
