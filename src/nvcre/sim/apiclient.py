"""A small asyncio client for the Kubernetes API: raw JSON over aiohttp.

The fake kubelet sends thousands of lease renewals and status patches for a large
fleet; raw JSON with one connection pool keeps that under a fraction of a core,
where the generated model classes of the official client would not. This module is
the simulator's own I/O (``nvcre.kube`` belongs to the product, which never runs
inside the simulator).
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

import aiohttp
import yaml

from nvcre.errors import UserError


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, body: str, method: str, path: str):
        super().__init__(f"{method} {path}: {status} {body[:300]}")
        self.status = status
        self.body = body


@dataclass
class Kubeconfig:
    """Where the API server is and how to authenticate to it."""

    server: str
    ssl_context: ssl.SSLContext | bool
    token: str | None = None


def _materialize(entry: dict[str, Any], key: str, base: Path, scratch: Path) -> str | None:
    """A path for ``key`` (file) or ``key-data`` (inline base64) of a kubeconfig entry."""
    if entry.get(f"{key}-data"):
        path = scratch / key
        path.write_bytes(base64.b64decode(entry[f"{key}-data"]))
        return str(path)
    if entry.get(key):
        path = Path(entry[key])
        return str(path if path.is_absolute() else base / path)
    return None


def load_kubeconfig(path: str | Path) -> Kubeconfig:
    """Read the current context of a kubeconfig (client certificates or a token)."""
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"--kubeconfig: cannot read {path}: {exc}") from None
    try:
        contexts = {c["name"]: c["context"] for c in config.get("contexts", [])}
        clusters = {c["name"]: c["cluster"] for c in config.get("clusters", [])}
        users = {u["name"]: u.get("user", {}) for u in config.get("users", [])}
        context = contexts[config["current-context"]]
        cluster = clusters[context["cluster"]]
        user = users.get(context.get("user", ""), {})
    except (KeyError, TypeError) as exc:
        raise UserError(f"--kubeconfig: {path} has no usable current context ({exc})") from None
    scratch = Path(tempfile.mkdtemp(prefix="nvcre-sim-kc-"))
    if cluster.get("insecure-skip-tls-verify"):
        context_ssl: ssl.SSLContext | bool = False
    else:
        ca = _materialize(cluster, "certificate-authority", path.parent, scratch)
        context_ssl = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    cert = _materialize(user, "client-certificate", path.parent, scratch)
    key = _materialize(user, "client-key", path.parent, scratch)
    if cert and key:
        if context_ssl is False:
            context_ssl = ssl.create_default_context()
            context_ssl.check_hostname = False
            context_ssl.verify_mode = ssl.CERT_NONE
        assert isinstance(context_ssl, ssl.SSLContext)
        context_ssl.load_cert_chain(cert, key)
    return Kubeconfig(server=cluster["server"].rstrip("/"), ssl_context=context_ssl, token=user.get("token"))


class ApiClient:
    """JSON requests and watches against one API server."""

    def __init__(self, config: Kubeconfig, *, limit: int = 64):
        self.config = config
        headers = {"Accept": "application/json", "User-Agent": "nvcre-sim-kubelet/0.1"}
        if config.token:
            headers["Authorization"] = f"Bearer {config.token}"
        self._session = aiohttp.ClientSession(
            headers=headers,
            connector=aiohttp.TCPConnector(ssl=config.ssl_context, limit=limit),
            json_serialize=json.dumps,
        )
        self.requests = 0

    async def close(self) -> None:
        await self._session.close()

    async def request(self, method: str, path: str, body: Any = None, *, params: dict[str, str] | None = None,
                      content_type: str = "application/json", ok_missing: bool = False, decode: bool = True) -> Any:
        """One call; returns the decoded JSON, None for a tolerated 404. ``decode=False``
        reads the answer without parsing it (a status write's answer is the whole object,
        64 KiB for a full-scale pod at 1024 nodes, and the writer does not need it)."""
        self.requests += 1
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else None
        async with self._session.request(method, self.config.server + path, data=data, params=params,
                                         headers=headers, timeout=aiohttp.ClientTimeout(total=60)) as resp:
            if decode or resp.status >= 300:
                text = await resp.text()
            else:
                await resp.read()
                text = ""
            if resp.status == 404 and ok_missing:
                return None
            if resp.status >= 300:
                raise ApiError(resp.status, text, method, path)
            return json.loads(text) if text else None

    async def get(self, path: str, **kw: Any) -> Any:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> Any:
        return await self.request("POST", path, body, **kw)

    async def merge_patch(self, path: str, body: Any, **kw: Any) -> Any:
        return await self.request("PATCH", path, body, content_type="application/merge-patch+json", **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> Any:
        return await self.request("DELETE", path, body, ok_missing=True, **kw)

    async def watch(self, path: str, resource_version: str) -> AsyncIterator[dict[str, Any]]:
        """Events of a watch from ``resource_version`` until the server ends it."""
        params = {"watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": "300"}
        async with self._session.get(self.config.server + path, params=params,
                                     timeout=aiohttp.ClientTimeout(total=None, sock_read=330)) as resp:
            if resp.status >= 300:
                raise ApiError(resp.status, await resp.text(), "WATCH", path)
            async for line in watch_lines(resp.content.iter_any()):
                yield json.loads(line)


async def watch_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The non-blank lines of a watch stream, in time linear in its length.

    One watch event of a full-scale pod is 64 KiB and arrives in many chunks, and a
    busy process finds many events buffered at once: re-joining the buffer for every
    chunk and copying its rest for every line was quadratic in what had piled up."""
    pending = bytearray()
    async for chunk in chunks:
        start = 0
        end = chunk.find(b"\n")
        while end >= 0:
            if pending:
                pending += chunk[start:end]
                line = bytes(pending)
                pending.clear()
            else:
                line = chunk[start:end]
            if line.strip():
                yield line
            start = end + 1
            end = chunk.find(b"\n", start)
        pending += chunk[start:]
