"""`nvcrectl mcp serve`: the read-only MCP server over stdio."""

from __future__ import annotations

from typing import Optional

import typer

from nvcre.cli.apps import mcp_app
from nvcre.errors import UserError


@mcp_app.command("serve")
def serve(
    kubeconfig: Optional[str] = typer.Option(None, "--kubeconfig", help="Kubeconfig to read with (default: $KUBECONFIG or ~/.kube/config)."),
    context: Optional[str] = typer.Option(None, "--context", help="Kubeconfig context."),
) -> None:
    """Serve list_categories, get_certification_status, get_certification_report and
    list_failed_nodes over stdio. Reads only; uses the caller's kubeconfig."""
    try:
        from nvcre.mcp.server import serve as run_server
    except ModuleNotFoundError as err:
        if (err.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        raise UserError(
            "nvcrectl mcp needs the MCP SDK, an optional extra: pip install 'nvcre[mcp]' "
            f"(missing module {err.name!r})"
        ) from None

    run_server(kubeconfig, context)
