"""KubeClient's paginated list and watch stream against a local HTTP server speaking the API's wire format."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from kubernetes.client import Configuration

from nvcre.controller.runtime.cache import WatchCache
from nvcre.kube.client import ApiError, KubeClient, TransportError
from nvcre.kube.watch import Reflector, WatchSpec

NODES = [{"metadata": {"name": f"n{i}", "resourceVersion": str(10 + i)}} for i in range(5)]


class Handler(BaseHTTPRequestHandler):
    seen: list[dict] = []
    watch_rounds: list[list[dict]] = []

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 - http.server's name
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        Handler.seen.append(q)
        if q.get("watch") == "true":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            events = Handler.watch_rounds.pop(0) if Handler.watch_rounds else []
            for event in events:
                line = (json.dumps(event) + "\n").encode()
                # split each event across two chunks: the client must join lines itself
                for part in (line[:7], line[7:]):
                    self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        start = int(q.get("continue") or 0)
        limit = int(q.get("limit") or 500)
        items = NODES[start:start + limit]
        meta = {"resourceVersion": "100"}
        if start + limit < len(NODES):
            meta["continue"] = str(start + limit)
        body = json.dumps({"kind": "NodeList", "metadata": meta, "items": items}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def kube():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Handler.seen, Handler.watch_rounds = [], []
    config = Configuration()
    config.host = f"http://127.0.0.1:{server.server_port}"
    try:
        yield KubeClient(config)
    finally:
        server.shutdown()


def test_list_pages_carry_limit_and_continue(kube):
    items, rv, token = kube.list_page("v1", "Node", label_selector="nvidia.com/gpu.present", limit=2)
    assert [i["metadata"]["name"] for i in items] == ["n0", "n1"] and rv == "100" and token == "2"
    assert Handler.seen[-1] == {"labelSelector": "nvidia.com/gpu.present", "limit": "2"}
    assert items[0]["kind"] == "Node" and items[0]["apiVersion"] == "v1"


def test_watch_stream_events_and_a_410_error_event(kube):
    Handler.watch_rounds = [[
        {"type": "MODIFIED", "object": {"metadata": {"name": "n1", "resourceVersion": "120"}}},
        {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}},
    ]]
    events = kube.watch("v1", "Node", resource_version="100", timeout_seconds=5)
    first = next(events)
    assert first["type"] == "MODIFIED" and first["object"]["kind"] == "Node"
    with pytest.raises(ApiError) as err:
        next(events)
    assert err.value.gone
    q = Handler.seen[-1]
    assert q["watch"] == "true" and q["resourceVersion"] == "100" and q["allowWatchBookmarks"] == "true"


def test_a_reflector_over_http_syncs_the_cache(kube):
    Handler.watch_rounds = [[{"type": "DELETED", "object": {"metadata": {"name": "n4", "resourceVersion": "130"}}}]]
    cache = WatchCache()
    reflector = Reflector(kube, WatchSpec("v1", "Node", "Node"), cache, page_size=2, watch_timeout_s=5)
    calls = {"n": 0}
    original = kube.watch

    def watch_then_stop(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 1:
            reflector.stop.set()
            return iter(())
        return original(*args, **kwargs)

    kube.watch = watch_then_stop
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert cache.synced("Node") and sorted(n["metadata"]["name"] for n in cache.of_kind("Node")) == ["n0", "n1", "n2", "n3"]


def test_an_unreachable_server_is_a_transport_error():
    config = Configuration()
    config.host = "http://127.0.0.1:9"  # discard port: nothing listens
    with pytest.raises(TransportError):
        KubeClient(config).get("v1", "Node", "x")
