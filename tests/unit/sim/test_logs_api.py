"""The kubelet log API: the query parameters the API server forwards from kubectl."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

from aiohttp.test_utils import TestClient, TestServer

from nvcre.sim.logs import LogStore, make_app, rfc3339nano


def _run(check):
    async def main():
        store = LogStore()
        base = datetime(2026, 11, 30, 7, 0, 0, tzinfo=timezone.utc)
        first = store.new_run("ns", "p", "c")
        first.append("old run", base)
        first.finish()
        log = store.new_run("ns", "p", "c")
        for i in range(5):
            log.append(f"line {i}", base + timedelta(seconds=i))
        app = make_app(store, lambda ns, pod, c: "waiting to start: ContainerCreating" if pod == "w" else None)
        async with TestClient(TestServer(app)) as client:
            await check(client, store, log)

    asyncio.run(main())


def test_plain_tail_timestamps_limit_since_previous():
    async def check(client, store, log):
        base = "/containerLogs/ns/p/c"
        assert await (await client.get(base)).text() == "".join(f"line {i}\n" for i in range(5))
        assert await (await client.get(base + "?tailLines=2")).text() == "line 3\nline 4\n"
        stamped = await (await client.get(base + "?timestamps=true&tailLines=1")).text()
        assert stamped == "2026-11-30T07:00:04.000000000Z line 4\n"
        assert await (await client.get(base + "?limitBytes=7")).text() == "line 0\n"
        since = await (await client.get(base + "?sinceTime=2026-11-30T07:00:03Z")).text()
        assert since == "line 3\nline 4\n"
        assert await (await client.get(base + "?previous=true")).text() == "old run\n"
        assert (await client.get("/containerLogs/ns/w/c")).status == 400
        assert (await client.get("/containerLogs/ns/x/c")).status == 404
        assert await (await client.get("/healthz")).text() == "ok"

    _run(check)


def test_follow_streams_new_lines_until_the_run_ends():
    async def check(client, store, log):
        response = await client.get("/containerLogs/ns/p/c?follow=true&tailLines=1")

        async def produce():
            await asyncio.sleep(0.05)
            log.append("late")
            await asyncio.sleep(0.05)
            log.finish()

        producer = asyncio.create_task(produce())
        body = await response.text()
        await producer
        assert body == "line 4\nlate\n"

    _run(check)


def test_rfc3339nano_has_nine_digits():
    assert rfc3339nano(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)) == "2026-01-02T03:04:05.678901000Z"
