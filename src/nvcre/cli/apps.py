"""The Typer command groups of nvcrectl.

Command modules import the group they extend from here and register their commands
on it; ``nvcre.cli.main`` imports every command module once. Keeping the groups in
one small module lets each command live in its own file without import cycles.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="nvcrectl",
    help="nvcre: prove a GPU cluster is ready by running real workloads on it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

certification_app = typer.Typer(help="Run, watch, render and report Certifications.", no_args_is_help=True)
workloadrun_app = typer.Typer(help="Render and run WorkloadRuns.", no_args_is_help=True)
sim_app = typer.Typer(help="The local test bed: a real control plane and a simulated GPU fleet.", no_args_is_help=True)
setup_app = typer.Typer(help="Install, inspect and remove nvcre on a cluster.", no_args_is_help=True)
cluster_app = typer.Typer(help="What nvcre sees on the cluster.", no_args_is_help=True)
rbac_app = typer.Typer(help="RBAC that nvcre needs.", no_args_is_help=True)
controller_app = typer.Typer(help="The nvcre controller process.", no_args_is_help=True)
mcp_app = typer.Typer(help="Read-only MCP server.", no_args_is_help=True)

app.add_typer(certification_app, name="certification")
app.add_typer(workloadrun_app, name="workloadrun")
app.add_typer(sim_app, name="sim")
app.add_typer(setup_app, name="setup")
app.add_typer(cluster_app, name="cluster")
app.add_typer(rbac_app, name="rbac")
app.add_typer(controller_app, name="controller")
app.add_typer(mcp_app, name="mcp")
