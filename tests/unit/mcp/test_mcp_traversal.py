"""Hostile names and namespaces against every MCP tool, through the real KubeClient and a
local HTTP server that records every request: a payload is refused with a clear tool
error before any request is sent, and a valid one reads only its own namespace's objects."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import pytest
from mcp import Client

from nvcre.kube.client import KubeClient
from nvcre.kube.resources import InvalidName, resource_for
from nvcre.mcp.server import TOOL_NAMES, ReadOnlyKube, build_server

PAYLOADS = [
    "../secrets", "..", ".", "%2F", "a%2Fb", "kube-system/secrets/x", "x/../../api/v1/namespaces/kube-system/secrets",
    "..%2F..%2Fsecrets", "x?watch=true", "x#frag", "x;y", "X-Upper", "a b", "", "a" * 254, "é", "x\n", "-x", "x.",
    "/etc/passwd", "\\..\\x", "%00", "\u2215secrets",
]
NAMESPACE_ONLY = ["a.b", "a" * 64]  # valid names, invalid namespaces


class Recorder(BaseHTTPRequestHandler):
    paths: list[str] = []

    def do_GET(self):  # noqa: N802
        type(self).paths.append(self.path)
        body = json.dumps({"kind": "Status", "status": "Failure", "reason": "NotFound", "message": "not found", "code": 404})
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Recorder.paths = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    from kubernetes.client import Configuration

    config = Configuration()
    config.host = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield ReadOnlyKube(KubeClient(config))
    httpd.shutdown()


def _calls(reader, args_list):
    async def session():
        out = []
        async with Client(build_server(reader)) as client:
            for tool, args in args_list:
                out.append((tool, args, await client.call_tool(tool, args)))
        return out
    return anyio.run(session)


NAMED_TOOLS = [t for t in TOOL_NAMES if t != "list_categories"]


def test_every_payload_against_every_tool_is_refused_before_any_request(server):
    cases = [(tool, {"name": p, "namespace": "team-a"}) for tool in NAMED_TOOLS for p in PAYLOADS]
    cases += [(tool, {"name": "cert", "namespace": p}) for tool in NAMED_TOOLS for p in PAYLOADS + NAMESPACE_ONLY]
    for tool, args, result in _calls(server, cases):
        assert result.is_error, (tool, args)
        text = result.content[0].text
        assert "not a valid" in text or "must not be empty" in text, (tool, args, text)
    assert Recorder.paths == []
    # the tool without arguments takes none that could reach a URL
    (_, _, listed), = _calls(server, [("list_categories", {})])
    assert not listed.is_error and Recorder.paths == []


def test_a_valid_name_reads_only_its_namespace(server):
    results = _calls(server, [(tool, {"name": "gpu-cert.v2", "namespace": "team-a"}) for tool in NAMED_TOOLS])
    assert all(r.is_error and "not found" in r.content[0].text for _, _, r in results)
    # the item in its namespace, and the Certification list behind the "found in namespace ..." hint
    # (governed by the reader's RBAC), nothing else
    allowed = {"/apis/nvcre.nvidia.com/v1alpha1/namespaces/team-a/certifications/gpu-cert.v2",
               "/apis/nvcre.nvidia.com/v1alpha1/certifications"}
    assert Recorder.paths and set(Recorder.paths) <= allowed, Recorder.paths


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_client_refuses_or_escapes_every_url_segment(payload):
    for api_version, kind in (("v1", "Secret"), ("v1", "Pod"), ("nvcre.nvidia.com/v1alpha1", "Certification"), ("v1", "Node")):
        res = resource_for(api_version, kind)
        with pytest.raises(InvalidName):
            res.item_path(payload, "team-a")
        if payload:
            with pytest.raises(InvalidName):
                res.item_path("ok", payload) if res.namespaced else check_ns(payload)


def check_ns(value):
    from nvcre.kube.resources import check_namespace

    check_namespace(value)


def test_rbac_names_may_hold_colons_but_never_slashes():
    res = resource_for("rbac.authorization.k8s.io/v1", "RoleBinding")
    assert res.item_path("system:controller:x", "ns").endswith("/rolebindings/system%3Acontroller%3Ax")
    for bad in ("..", "a/b", "a%2Fb", ""):
        with pytest.raises(InvalidName):
            res.item_path(bad, "ns")


@pytest.mark.parametrize("api_version, kind", [("v1/../../x", "Pod"), ("a/b/c", "X"), ("v1", "Pod/../x"), ("V1", "Pod"), ("", "Pod")])
def test_api_versions_and_kinds_from_a_spec_cannot_bend_the_path(api_version, kind):
    with pytest.raises(InvalidName):
        resource_for(api_version, kind).collection_path("ns")
