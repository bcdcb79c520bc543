"""The MCP tools answer from the report model and never write.

A recording reader stands in for the API server here; tests/e2e/test_mcp_*.py runs
the same server over stdio against the real test bed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
import report_samples as samples  # noqa: E402

from nvcre.mcp.server import TOOL_NAMES, ReadOnlyKube, Tools, build_server  # noqa: E402
from nvcre.report import build_report  # noqa: E402
from nvcre.report.text import render_text  # noqa: E402


class RecordingKube:
    """Serves run objects like an API server would and records every call by method."""

    def __init__(self, objects) -> None:
        self.calls: list[str] = []
        self.store: dict[str, list[dict]] = {
            "Certification": [objects.root],
            "Workflow": objects.workflows,
            "Job": objects.jobs,
            "BandwidthMeasurement": objects.bandwidth_measurements,
            "GoodputMeasurement": objects.goodput_measurements,
            "Node": objects.nodes,
        }

    def get(self, api_version, kind, name, namespace=None):
        self.calls.append(f"get {kind}")
        for obj in self.store.get(kind, []):
            meta = obj["metadata"]
            if meta["name"] == name and (namespace is None or meta.get("namespace") == namespace):
                return json.loads(json.dumps(obj))
        return None

    def list(self, api_version, kind, namespace=None, **selectors):
        self.calls.append(f"list {kind}")
        items = [o for o in self.store.get(kind, []) if namespace is None or o["metadata"].get("namespace") == namespace]
        return json.loads(json.dumps(items))

    # What a client that could write would offer; the server must never reach these.
    def create(self, *a, **k):
        self.calls.append("create")

    def merge_patch(self, *a, **k):
        self.calls.append("patch")

    def delete(self, *a, **k):
        self.calls.append("delete")

    def update_status(self, *a, **k):
        self.calls.append("update")


@pytest.fixture
def kube():
    return RecordingKube(samples.seeds_failure())


def test_read_only_wrapper_exposes_no_write_method(kube):
    reader = ReadOnlyKube(kube)
    public = {name for name in dir(reader) if not name.startswith("_")}
    assert public == {"get", "list"}


def test_tools_agree_with_the_cli_report(kube):
    tools = Tools(ReadOnlyKube(kube))
    status = tools.get_certification_status("gpu-cluster-cert", "burn-in")
    assert status["result"] == "FAILED"
    assert status["failedNodes"] == ["gpu-node-07", "gpu-node-12"]
    assert [c["status"] for c in status["categories"]] == ["Failed", "Succeeded"]
    failed = tools.list_failed_nodes("gpu-cluster-cert", "burn-in")["failedNodes"]
    assert [(f["name"], f["reason"]) for f in failed] == [
        ("gpu-node-07", "ThresholdViolation"),
        ("gpu-node-12", "HardwareFailureDetected"),
    ]
    report = tools.get_certification_report("gpu-cluster-cert", "burn-in")["report"]
    cli_report = build_report(samples.seeds_failure())
    assert report == json.loads(json.dumps(cli_report.to_json_dict()))
    assert "FAILED" in render_text(cli_report)
    assert all(c.split()[0] in ("get", "list") for c in kube.calls)


def test_not_found_names_the_namespaces_that_hold_it(kube):
    from mcp.server.mcpserver.exceptions import ToolError

    with pytest.raises(ToolError) as err:
        Tools(ReadOnlyKube(kube)).get_certification_status("gpu-cluster-cert", "default")
    text = str(err.value)
    assert "not found in namespace 'default'" in text
    assert "add -n burn-in" in text and "burn-in/gpu-cluster-cert" in text


def test_mcp_session_lists_read_only_tools_and_answers(kube):
    async def session():
        async with Client(build_server(ReadOnlyKube(kube))) as client:
            listed = await client.list_tools()
            result = await client.call_tool("list_failed_nodes", {"name": "gpu-cluster-cert", "namespace": "burn-in"})
            missing = await client.call_tool("get_certification_report", {"name": "nope", "namespace": "burn-in"})
            return listed, result, missing

    listed, result, missing = anyio.run(session)
    assert sorted(t.name for t in listed.tools) == sorted(TOOL_NAMES)
    assert all(t.annotations.read_only_hint and not t.annotations.destructive_hint for t in listed.tools)
    assert not result.is_error
    rows = json.loads(result.content[0].text)["failedNodes"]
    assert {r["name"] for r in rows} == {"gpu-node-07", "gpu-node-12"}
    assert missing.is_error and "'nope' not found" in missing.content[0].text
    assert not any(c in ("create", "patch", "delete", "update") for c in kube.calls)
