"""The simulated kubelet's API traffic under a slow API server.

At 1024 nodes on a loaded test host the API server takes ~50 writes a second while the
fleet's leases alone ask for 102; one FIFO connection pool for everything let renewals
(a new one every round, the last not yet answered) and start-up Events pile up ahead of
pod status writes until those took ~50 s and renewals timed out. A real kubelet renews
its lease one request at a time and has its own connection, so neither piles up."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

import nvcre.sim.kubelet as kubelet_module
from nvcre.sim.fleet import build_fleet
from nvcre.sim.kubelet import Kubelet, KubeletConfig
from nvcre.sim.podrunner import PodRunner


class SlowApi:
    """Answers after ``delay`` seconds, at most ``limit`` requests at a time (a connection pool)."""

    def __init__(self, delay: float, limit: int = 1000) -> None:
        self.delay = delay
        self.pool = asyncio.Semaphore(limit)
        self.inflight: Counter[str] = Counter()
        self.most_per_path = 0
        self.calls: Counter[str] = Counter()

    async def _call(self, path: str) -> None:
        async with self.pool:
            self.inflight[path] += 1
            self.calls[path] += 1
            self.most_per_path = max(self.most_per_path, self.inflight[path])
            try:
                await asyncio.sleep(self.delay)
            finally:
                self.inflight[path] -= 1

    async def merge_patch(self, path, body, **kw):
        await self._call(path)

    async def post(self, path, body, **kw):
        await self._call(path)


def _kubelet(tmp_path, nodes: int = 4, **config) -> Kubelet:
    kubelet = Kubelet(KubeletConfig(kubeconfig="unused", state_dir=str(tmp_path), nodes=nodes, racks=1, **config))
    kubelet.fleet = build_fleet(kubelet.config.fleet_spec(0), kubelet.faults)
    kubelet.facts = kubelet.fleet.facts
    return kubelet


def test_a_node_never_has_two_lease_renewals_in_flight(tmp_path):
    kubelet = _kubelet(tmp_path, lease_renew_s=0.05)
    kubelet.api = kubelet.lease_api = api = SlowApi(delay=0.3)

    async def scenario():
        task = asyncio.create_task(kubelet._lease_loop())
        await asyncio.sleep(1.0)
        task.cancel()

    asyncio.run(scenario())
    assert api.most_per_path == 1
    assert len(api.calls) == 4 and all(n >= 3 for n in api.calls.values())  # still renewed as often as answered
    assert kubelet.lease_skips > 0


def test_a_backlog_of_events_does_not_hold_back_a_pod_status_write(tmp_path):
    kubelet = _kubelet(tmp_path)
    node = kubelet.fleet.names[0]
    pod = {"metadata": {"uid": "u1", "namespace": "ns", "name": "p"},
           "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}

    async def scenario() -> float:
        kubelet.api = SlowApi(delay=0.02, limit=4)
        kubelet.event_api = SlowApi(delay=0.02, limit=4)
        runner = PodRunner(kubelet, pod, 1)
        for i in range(200):  # 1 s of Events at 4 at a time
            kubelet.emit_event({"kind": "Pod", "name": "p", "namespace": "ns"}, "Started", f"event {i}", node=node)
        await asyncio.sleep(0)
        begin = time.monotonic()
        await runner.push()
        took = time.monotonic() - begin
        await asyncio.gather(*kubelet._inflight)
        return took

    assert asyncio.run(scenario()) < 0.3


def test_a_fleet_that_renews_less_often_holds_its_leases_longer(tmp_path):
    """A very large simulated fleet renews less often; its Leases must outlive the gap."""
    assert _kubelet(tmp_path).lease_duration_s == kubelet_module.LEASE_DURATION_S
    assert _kubelet(tmp_path, lease_renew_s=40.0).lease_duration_s == 160


def test_a_lease_interval_that_is_not_positive_is_refused(tmp_path):
    with pytest.raises(ValueError, match="lease_renew_s"):
        _kubelet(tmp_path, lease_renew_s=0)


def test_node_status_heartbeats_are_spread_over_the_interval(tmp_path, monkeypatch):
    """One node at a time, as each kubelet has its own timer: never the whole fleet at once."""
    monkeypatch.setattr(kubelet_module, "STATUS_HEARTBEAT_S", 0.4)
    kubelet = _kubelet(tmp_path, nodes=4)
    kubelet.node_conditions = {n: [{"type": "Ready", "status": "True"}] for n in kubelet.fleet.names}
    kubelet.node_allocatable = {n: {} for n in kubelet.fleet.names}
    pushed: list[tuple[float, str]] = []

    async def push(name: str) -> None:
        pushed.append((time.monotonic(), name))

    kubelet._push_node = push

    async def scenario():
        task = asyncio.create_task(kubelet._status_loop())
        await asyncio.sleep(0.45)
        task.cancel()

    asyncio.run(scenario())
    assert sorted(n for _, n in pushed) == sorted(kubelet.fleet.names)  # each node once per interval
    gaps = [b - a for (a, _), (b, _) in zip(pushed, pushed[1:])]
    assert min(gaps) >= 0.07, gaps
