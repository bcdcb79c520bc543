"""How many status writes an ending pod costs the API server.

A real kubelet computes the pod phase from its containers' states in the same status
update that reports them terminated, so a pod that ends is one write. The simulated
kubelet used to write the container end and then, separately, the terminal phase: at
1024 nodes that was 2048 writes when a full-scale group ended together, and the API
server on a small test host takes them at ~50 a second, so the last pod's end reached
the controller tens of seconds late (bench/controller.py, docs/design/120)."""

from __future__ import annotations

import asyncio

import pytest

from nvcre.sim.logs import LogStore
from nvcre.sim.podrunner import PodRunner


class RecordingApi:
    def __init__(self) -> None:
        self.patches: list[dict] = []

    async def merge_patch(self, path, body, **kw):
        self.patches.append(body["status"])


class Host:
    """The kubelet side a pod needs, with a real emulator context."""

    def __init__(self, make_ctx) -> None:
        self.api = RecordingApi()
        self.logs = LogStore()
        self.time_scale = 100.0
        self._make_ctx = make_ctx
        ctx = make_ctx(["true"])
        self.facts = {ctx.node.name: ctx.node}

    async def fetch_files(self, pod):
        return {}

    async def make_context(self, runner, c):
        return self._make_ctx(list(c.spec["command"]), node=runner.node.name)

    def emit_event(self, *a, **kw) -> None:
        pass

    async def apply_effect(self, effect, runner=None) -> None:
        pass


def _pod(node: str, policy: str, commands: list[list[str]]) -> dict:
    return {"metadata": {"uid": "u1", "namespace": "ns", "name": "p"},
            "spec": {"nodeName": node, "restartPolicy": policy,
                     "containers": [{"name": f"c{i}", "image": "x", "command": cmd} for i, cmd in enumerate(commands)]}}


def _run(make_ctx, policy: str, commands: list[list[str]], *, until: float = 5.0) -> list[dict]:
    host = Host(make_ctx)
    runner = PodRunner(host, _pod(next(iter(host.facts)), policy, commands), 1)

    async def scenario():
        runner.start()
        try:
            await asyncio.wait_for(asyncio.shield(runner.task), timeout=until)
        except asyncio.TimeoutError:
            runner.task.cancel()

    asyncio.run(scenario())
    return host.api.patches


def _ended(status: dict) -> list[str]:
    return [c["name"] for c in status["containerStatuses"] if "terminated" in c["state"]]


@pytest.mark.parametrize("command, phase", [(["true"], "Succeeded"), (["false"], "Failed")])
def test_an_ending_pod_reports_its_end_and_phase_in_one_write(make_ctx, command, phase):
    patches = _run(make_ctx, "Never", [command])
    ends = [p for p in patches if _ended(p)]
    assert len(ends) == 1, [(p["phase"], _ended(p)) for p in patches]
    assert ends[0]["phase"] == phase
    assert patches[-1] is ends[0]  # nothing after it: the final write carried everything


def test_the_phase_waits_for_every_main_container(make_ctx):
    """Two containers: the first to end is reported with the pod still Running."""
    patches = _run(make_ctx, "Never", [["true"], ["sleep", "2"]])
    ends = [(p["phase"], _ended(p)) for p in patches if _ended(p)]
    assert ends == [("Running", ["c0"]), ("Succeeded", ["c0", "c1"])]


def test_a_container_that_will_restart_leaves_the_pod_running(make_ctx):
    """OnFailure and a failing container: its end is written with the pod Running (it restarts)."""
    patches = _run(make_ctx, "OnFailure", [["false"]], until=0.5)
    ends = [p for p in patches if _ended(p)]
    assert ends and all(p["phase"] == "Running" for p in ends)


def test_watch_lines_splits_events_across_and_within_chunks():
    from nvcre.sim.apiclient import watch_lines

    big = b'{"type":"MODIFIED","object":{"x":"' + b"y" * 70000 + b'"}}'
    stream = b'{"a":1}\n\n' + big + b"\n" + b'{"b":2}\n{"c":3}\n'
    chunks = [stream[i:i + 4096] for i in range(0, len(stream), 4096)] + [b'{"partial"']

    async def source():
        for chunk in chunks:
            yield chunk

    async def collect():
        return [line async for line in watch_lines(source())]

    assert asyncio.run(collect()) == [b'{"a":1}', big, b'{"b":2}', b'{"c":3}']
