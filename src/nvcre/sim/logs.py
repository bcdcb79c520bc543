"""Container logs held by the fake kubelet, and the kubelet API that serves them.

The API server proxies ``kubectl logs`` (and every client's ``pods/log`` read) to
``https://<node InternalIP>:<kubelet port>/containerLogs/{ns}/{pod}/{container}``;
this serves that path with the kubelet's query parameters: ``follow``,
``tailLines``, ``timestamps``, ``previous``, ``sinceSeconds``, ``sinceTime`` and
``limitBytes``. One instance is kept per container run, so ``previous`` returns the
run before a restart.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable

from aiohttp import web

from nvcre.measure.logtext import parse_timestamp


def rfc3339nano(moment: datetime) -> str:
    """Kubelet log timestamps: RFC3339 with nine fractional digits, UTC."""
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"


@dataclass
class ContainerLog:
    """The output of one run of one container."""

    lines: list[tuple[datetime, str]] = field(default_factory=list)
    done: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def append(self, text: str, moment: datetime | None = None) -> None:
        self.lines.append((moment or datetime.now(timezone.utc), text))
        self._poke()

    def finish(self) -> None:
        self.done = True
        self._poke()

    def _poke(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def tail(self, lines: int = 80, max_bytes: int = 2048) -> str:
        text = "\n".join(t for _, t in self.lines[-lines:])
        return text[-max_bytes:]


class LogStore:
    """Logs by (namespace, pod, container): a list of runs, newest last."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, str, str], list[ContainerLog]] = {}

    def new_run(self, namespace: str, pod: str, container: str) -> ContainerLog:
        log = ContainerLog()
        runs = self._logs.setdefault((namespace, pod, container), [])
        runs.append(log)
        del runs[:-2]  # the kubelet keeps the current and the previous run
        return log

    def runs(self, namespace: str, pod: str, container: str) -> list[ContainerLog]:
        return self._logs.get((namespace, pod, container), [])

    def forget(self, namespace: str, pod: str) -> None:
        for key in [k for k in self._logs if k[0] == namespace and k[1] == pod]:
            del self._logs[key]


def _format(moment: datetime, text: str, timestamps: bool) -> bytes:
    return ((rfc3339nano(moment) + " " if timestamps else "") + text + "\n").encode()


def _since(request: web.Request) -> datetime | None:
    if "sinceSeconds" in request.query:
        try:
            return datetime.now(timezone.utc) - timedelta(seconds=int(request.query["sinceSeconds"]))
        except ValueError:
            return None
    if "sinceTime" in request.query:
        return parse_timestamp(request.query["sinceTime"])
    return None


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() in ("true", "1")


def make_app(store: LogStore, describe: Callable[[str, str, str], str | None]) -> web.Application:
    """The kubelet API: ``/containerLogs``, ``/healthz``.

    ``describe(ns, pod, container)`` returns why there are no logs yet (e.g. the
    container is waiting to start), or None when the container is unknown.
    """

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def container_logs(request: web.Request) -> web.StreamResponse:
        ns, pod, container = request.match_info["ns"], request.match_info["pod"], request.match_info["container"]
        runs = store.runs(ns, pod, container)
        previous = _flag(request, "previous")
        if previous:
            if len(runs) < 2:
                return web.Response(status=400, text=f'previous terminated container "{container}" in pod "{pod}" not found')
            log = runs[-2]
        elif runs:
            log = runs[-1]
        else:
            why = describe(ns, pod, container)
            if why is None:
                return web.Response(status=404, text=f'container "{container}" in pod "{pod}" not found')
            return web.Response(status=400, text=why)
        timestamps = _flag(request, "timestamps")
        follow = _flag(request, "follow") and not previous
        since = _since(request)
        limit = int(request.query["limitBytes"]) if request.query.get("limitBytes", "").isdigit() else None
        lines = [(m, t) for m, t in log.lines if since is None or m >= since]
        if request.query.get("tailLines", "").lstrip("-").isdigit():
            tail = int(request.query["tailLines"])
            lines = lines[-tail:] if tail > 0 else ([] if tail == 0 else lines)
        body = b"".join(_format(m, t, timestamps) for m, t in lines)
        if limit is not None:
            body = body[:limit]
        if not follow:
            return web.Response(body=body, content_type="text/plain")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        sent = len(body)
        await response.write(body)
        position = len(log.lines)
        while True:
            if limit is not None and sent >= limit:
                break
            while position < len(log.lines):
                chunk = _format(*log.lines[position], timestamps)
                position += 1
                if limit is not None:
                    chunk = chunk[: max(0, limit - sent)]
                sent += len(chunk)
                await response.write(chunk)
            if log.done:
                break
            waiter = log.changed
            try:
                await asyncio.wait_for(waiter.wait(), timeout=30)
            except asyncio.TimeoutError:
                pass
        await response.write_eof()
        return response

    async def not_supported(request: web.Request) -> web.Response:
        return web.Response(status=501, text=f"{request.path}: not supported by the simulated kubelet")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/containerLogs/{ns}/{pod}/{container}", container_logs)
    for prefix in ("/exec", "/attach", "/portForward", "/run"):
        app.router.add_route("*", prefix + "/{tail:.*}", not_supported)
    return app


def server_ssl(cert: str, key: str, client_ca: str | None) -> ssl.SSLContext:
    """TLS for the kubelet API; with ``client_ca`` callers must show a certificate it signed."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
