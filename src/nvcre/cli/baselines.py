"""`nvcrectl certification baselines`: the shipped expected figures, each with its source."""

from __future__ import annotations

import json
from typing import Optional

import typer

from nvcre.cli.apps import certification_app
from nvcre.errors import UserError

FORMATS = ("table", "json", "yaml")


def baseline_document(arch: str | None = None) -> dict:
    """Stages, fabrics and entries as ``-o json|yaml`` print them (unknown stays 'unknown')."""
    from nvcre.judge.baselines import load_baselines

    data = load_baselines()
    entries = [e for e in data.entries if not arch or e.arch == arch.lower()]
    return {
        "stages": [{"name": s.name, "fraction": s.fraction, "why": s.why} for s in data.stages.values()],
        "fabrics": [{"name": f.name, "nicsPerNode": f.nics_per_node, "description": f.description}
                    for f in data.fabrics.values()],
        "baselines": [e.to_dict() for e in entries],
    }


def _num(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@certification_app.command("baselines")
def baselines(
    output: str = typer.Option("table", "--output", "-o", help="table, json or yaml"),
    gpu_arch: Optional[str] = typer.Option(None, "--gpu-arch", help="only this GPU architecture (e.g. h100)"),
) -> None:
    """List the expected figures that readiness stages derive thresholds from, with sources."""
    import yaml
    from rich.console import Console
    from rich.table import Table

    from nvcre.judge.baselines import load_baselines

    if output not in FORMATS:
        raise UserError(f"--output: unknown format {output!r}; valid: {', '.join(FORMATS)}")
    doc = baseline_document(gpu_arch)
    if gpu_arch and not doc["baselines"]:
        known = sorted({e.arch for e in load_baselines().entries})
        raise UserError(f"--gpu-arch: no baselines for {gpu_arch!r}; architectures with baselines: {', '.join(known)}")
    if output == "json":
        typer.echo(json.dumps(doc, indent=2))
        return
    if output == "yaml":
        typer.echo(yaml.safe_dump(doc, sort_keys=False), nl=False)
        return
    table = Table(title="nvcre baselines (stage bar = fraction x acceptance)")
    for column in ("GPU", "Fabric", "Category", "Scope", "Metric", "Expected", "Acceptance", "Source"):
        table.add_column(column, overflow="fold")
    for row in doc["baselines"]:
        scope = row["scope"] + (f" {row['nodes'][0]}-{row['nodes'][1]} nodes" if row.get("nodes") else "")
        table.add_row(row["arch"], row["fabric"], row["category"], scope, row["metric"],
                      _num(row["expected"]), _num(row["acceptance"]), row["source"])
    console = Console()
    console.print(table)
    console.print("stages: " + ", ".join(f"{s['name']} {s['fraction']:g}" for s in doc["stages"]))
