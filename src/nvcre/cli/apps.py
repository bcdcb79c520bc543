"""The Typer command groups of nvcrectl.

Command modules import the group they extend from here and register their commands
on it; ``nvcre.cli.main`` imports every command module once. Keeping the groups in
one small module lets each command live in its own file without import cycles.
"""

from __future__ import annotations

from typing import Optional

import typer

from nvcre.cli import typer_fast
from nvcre.cli.output import exit_code_help

typer_fast.install()

app = typer.Typer(
    name="nvcrectl",
    help="nvcre: prove a GPU cluster is ready by running real workloads on it.",
    epilog=exit_code_help(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from nvcre import API_GROUP_VERSION, __version__

        typer.echo(f"nvcrectl {__version__} (API {API_GROUP_VERSION})")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """nvcre: prove a GPU cluster is ready by running real workloads on it."""

certification_app = typer.Typer(help="Run, watch, render and report Certifications.", no_args_is_help=True)
workloadrun_app = typer.Typer(help="Render and run WorkloadRuns.", no_args_is_help=True)
sim_app = typer.Typer(help="The local test bed: a real control plane and a simulated GPU fleet.", no_args_is_help=True)
setup_app = typer.Typer(help="Install, inspect and remove nvcre on a cluster.", no_args_is_help=True)
cluster_app = typer.Typer(help="What nvcre sees on the cluster.", no_args_is_help=True)
rbac_app = typer.Typer(help="RBAC that nvcre needs.", no_args_is_help=True)
controller_app = typer.Typer(help="The nvcre controller process.", no_args_is_help=True)
mcp_app = typer.Typer(help="Read-only MCP server.", no_args_is_help=True)
workflow_app = typer.Typer(help="Render Workflows and their Jobs as the controller makes them.", no_args_is_help=True)

app.add_typer(certification_app, name="certification")
app.add_typer(workloadrun_app, name="workloadrun")
app.add_typer(sim_app, name="sim")
app.add_typer(setup_app, name="setup")
app.add_typer(cluster_app, name="cluster")
app.add_typer(rbac_app, name="rbac")
app.add_typer(controller_app, name="controller")
app.add_typer(mcp_app, name="mcp")
app.add_typer(workflow_app, name="workflow")

# Every group by the name it is invoked with; "" is the root.
GROUPS: dict[str, typer.Typer] = {
    "": app, "certification": certification_app, "workloadrun": workloadrun_app, "sim": sim_app,
    "setup": setup_app, "cluster": cluster_app, "rbac": rbac_app, "controller": controller_app,
    "mcp": mcp_app, "workflow": workflow_app,
}
