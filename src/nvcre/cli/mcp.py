"""`nvcrectl mcp serve`: the read-only MCP server over stdio."""

from __future__ import annotations

from typing import Optional

import typer

from nvcre.cli.apps import mcp_app


@mcp_app.command("serve")
def serve(
    kubeconfig: Optional[str] = typer.Option(None, "--kubeconfig", help="Kubeconfig to read with (default: $KUBECONFIG or ~/.kube/config)."),
    context: Optional[str] = typer.Option(None, "--context", help="Kubeconfig context."),
) -> None:
    """Serve list_categories, get_certification_status, get_certification_report and
    list_failed_nodes over stdio. Reads only; uses the caller's kubeconfig."""
    from nvcre.mcp.server import serve as run_server

    run_server(kubeconfig, context)
