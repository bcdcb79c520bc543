"""`nvcrectl mcp serve`: a read-only MCP server over stdio.

An agent asks whether a certification passed and which nodes failed without scraping
CLI output. Every answer is projected from the same report model the CLI prints
(``nvcre.report``), so the two cannot disagree. The server only ever holds a
``ReadOnlyKube``: it has no method that writes, so no tool can create, change or
delete anything, whatever a client sends. Names and namespaces are checked as the API
server would (DNS subdomain / label) before any request, and every URL segment is escaped
by the one client, so no argument can point a read at another object or namespace.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from nvcre import __version__
from nvcre.errors import UserError
from nvcre.kube.client import ApiError, KubeClient, TransportError, load_configuration
from nvcre.kube.resources import check_name, check_namespace
from nvcre.report import build_report
from nvcre.report.collect import collect

SERVER_NAME = "nvcre"
TOOL_NAMES = ("list_categories", "get_certification_status", "get_certification_report", "list_failed_nodes")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class ReadOnlyKube:
    """The read half of a ``KubeClient`` and nothing else: get and list."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        return self._client.get(api_version, kind, name, namespace)

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: Any) -> list[dict]:
        return self._client.list(api_version, kind, namespace, **selectors)


class Tools:
    """The four tools, as plain methods returning JSON-ready dicts (tested without MCP too)."""

    def __init__(self, reader: ReadOnlyKube) -> None:
        self.reader = reader

    def list_categories(self) -> dict:
        from nvcre.catalog.data import load_catalog

        entries = load_catalog().sorted_entries()
        return {
            "categories": [
                {
                    "domain": e.domain,
                    "variant": e.variant,
                    "summary": e.data.get("summary", ""),
                    "timeoutPerJob": (e.data.get("defaults") or {}).get("timeoutPerJob"),
                    "thresholds": list(e.data.get("thresholds") or []),
                }
                for e in entries
            ]
        }

    def _report(self, name: str, namespace: str):
        try:  # a client's strings never reach a URL unchecked (the kube client escapes them too)
            check_namespace(namespace)
            check_name(name, "Certification")
            return build_report(collect(self.reader, "Certification", name, namespace))
        except UserError as err:
            raise ToolError(err.message) from None
        except ApiError as err:
            raise ToolError(f"the API server refused the read: {err.status} {err.reason}: {err.message}") from None
        except TransportError as err:
            raise ToolError(f"cannot reach the API server: {err}") from None

    def get_certification_status(self, name: str, namespace: str = "default") -> dict:
        report = self._report(name, namespace)
        status: dict[str, Any] = {
            "name": report.name,
            "namespace": report.namespace,
            "result": report.result,
            "conditions": [c.model_dump(by_alias=True) for c in report.conditions],
            "categories": [
                {
                    "domain": c.domain,
                    "variant": c.variant,
                    "status": c.status,
                    "groupsDone": c.groups_done,
                    "groupsTotal": c.groups_total,
                    **({"blocked": c.status_detail} if c.status_detail else {}),
                }
                for c in report.categories
            ],
            "failedNodes": report.failed_nodes,
            "totalNodes": report.total_nodes,
        }
        if report.excluded_nodes:
            status["excludedNodes"] = report.excluded_nodes
            status["exclusionReason"] = report.exclusion_reason
        return status

    def get_certification_report(self, name: str, namespace: str = "default") -> dict:
        return {"report": self._report(name, namespace).to_json_dict()}

    def list_failed_nodes(self, name: str, namespace: str = "default") -> dict:
        report = self._report(name, namespace)
        rows = sorted(
            {(d.name, d.reason, d.message): d for d in report.failed_node_details}.values(),
            key=lambda d: (d.name, d.reason, d.message),
        )
        return {
            "name": report.name,
            "namespace": report.namespace,
            "failedNodes": [
                {"name": d.name, "reason": d.reason, "message": d.message, "category": d.category} for d in rows
            ],
        }


def build_server(reader: ReadOnlyKube) -> MCPServer:
    """The MCP server with the four read-only tools registered."""
    tools = Tools(reader)
    server = MCPServer(
        name=SERVER_NAME,
        title="nvcre cluster readiness engine",
        version=__version__,
        instructions=(
            "Read-only access to nvcre Certifications: whether a certification passed and which "
            "nodes failed, with reasons. Certification tools take name and namespace (default 'default')."
        ),
    )

    def list_categories() -> str:
        """The catalog's categories (domain/variant), their summary, time budget and threshold keys."""
        return json.dumps(tools.list_categories())

    def get_certification_status(name: str, namespace: str = "default") -> str:
        """Result (PASSED, FAILED, INCOMPLETE, RUNNING), conditions, per-category status and failed node names."""
        return json.dumps(tools.get_certification_status(name, namespace))

    def get_certification_report(name: str, namespace: str = "default") -> str:
        """The full report as JSON (schema nvcre.report/v1), the same one `certification report -o json` prints."""
        return json.dumps(tools.get_certification_report(name, namespace))

    def list_failed_nodes(name: str, namespace: str = "default") -> str:
        """Every failed node with its reason (WorkloadFailed, ThresholdViolation, HardwareFailureDetected) and message."""
        return json.dumps(tools.list_failed_nodes(name, namespace))

    for fn in (list_categories, get_certification_status, get_certification_report, list_failed_nodes):
        server.add_tool(fn, annotations=READ_ONLY, structured_output=False)
    return server


def serve(kubeconfig: str | None = None, context: str | None = None) -> None:
    """Run the server on stdin/stdout until the client hangs up."""
    # its own user agent, so audit logs tell the MCP server's reads apart
    client = KubeClient(load_configuration(kubeconfig, context), user_agent="nvcre-mcp")
    build_server(ReadOnlyKube(client)).run("stdio")
