"""The simulated kubelet rides out an API server outage like a real one: steps that need
the API (volume files, container environment) are retried with the container waiting and
the reason recorded, and pod statuses that could not be written are marked for the resync."""

from __future__ import annotations

import asyncio

from nvcre.sim.podrunner import PodRunner


class FlakyApi:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.patches: list[dict] = []

    async def merge_patch(self, path, body, **kw):
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("connection refused")
        self.patches.append(body)


class Node:
    def pod_ip(self, serial):
        return f"10.0.0.{serial}"


class Kubelet:
    def __init__(self, api) -> None:
        self.api = api
        self.facts = {"n1": Node()}
        self.time_scale = 1.0


POD = {"metadata": {"uid": "u1", "namespace": "ns", "name": "p"},
       "spec": {"nodeName": "n1", "restartPolicy": "Never", "containers": [{"name": "rank", "image": "x"}]}}


def test_an_api_step_is_retried_until_the_server_is_back():
    api = FlakyApi(failures=0)
    runner = PodRunner(Kubelet(api), POD, 1)
    calls = {"n": 0}
    seen = []

    async def fetch():
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("the API server is restarting")
        return {"/etc/x": "y"}

    def waiting(exc):
        runner._waiting(runner.main, "ContainerCreating", f"MountVolume failed: {exc}")
        seen.append(runner.main[0].state)

    assert asyncio.run(runner.until_ok(fetch, waiting)) == {"/etc/x": "y"}
    assert calls["n"] == 3 and len(seen) == 2
    assert seen[0]["waiting"]["reason"] == "ContainerCreating" and "restarting" in seen[0]["waiting"]["message"]
    # each waiting state was written, so the pod shows why it is not starting
    assert [p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] for p in api.patches] == ["ContainerCreating"] * 2


def test_a_deleted_pod_stops_retrying():
    runner = PodRunner(Kubelet(FlakyApi(0)), POD, 1)

    async def fail():
        runner.deleting = True
        raise ConnectionError("down")

    assert asyncio.run(runner.until_ok(fail, lambda exc: None)) is None


def test_a_lost_status_write_is_marked_dirty_until_written():
    api = FlakyApi(failures=1)
    runner = PodRunner(Kubelet(api), POD, 1)
    asyncio.run(runner.push())
    assert runner.dirty and api.patches == []
    asyncio.run(runner.push())
    assert not runner.dirty and len(api.patches) == 1


def test_the_launchers_wait_for_its_workers_does_not_shrink_with_the_time_scale():
    """At a high time scale a scaled wait (1200 s / 6000 = 0.2 s) would give up before the
    workers run; the control plane's start-up is not compressed, so the wait is wall time."""
    from nvcre.sim.kubelet import MPI_WAIT_S
    from nvcre.sim.kubelet import Kubelet as RealKubelet

    assert MPI_WAIT_S >= 600

    class Launcher:
        ns, uid = "ns", "launcher"

    class Worker:
        def __init__(self, uid):
            self.uid = uid

    class Host:
        time_scale = 6000.0
        groups: dict = {}
        running: dict = {}

        def _host_index(self, namespace):
            return dict(self.running)

        def _lookup(self, index, name):
            return index.get(name)

    host = Host()

    async def scenario():
        async def workers_start_late():
            await asyncio.sleep(0.6)
            host.running.update({"w0": Worker("u0"), "w1": Worker("u1")})
        starter = asyncio.create_task(workers_start_late())
        await asyncio.wait_for(RealKubelet.wait_for_hosts(host, Launcher(), ["w0", "w1"], None), timeout=5)
        await starter

    asyncio.run(scenario())
    assert host.groups["launcher"] == {"u0", "u1"}
