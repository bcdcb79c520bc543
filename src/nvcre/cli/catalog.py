"""`nvcrectl certification list-categories`: what the catalog can run."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from nvcre.catalog.data import load_catalog
from nvcre.cli.apps import certification_app
from nvcre.errors import UserError


def catalog_rows() -> list[dict]:
    """One row per category, as the table and ``-o json`` show it."""
    rows = []
    for entry in load_catalog().sorted_entries():
        data = entry.data
        defaults = data.get("defaults") or {}
        measurement = data.get("measurement") or {}
        rows.append({
            "category": entry.key,
            "domain": entry.domain,
            "variant": entry.variant,
            "aliases": list(data.get("aliases") or []),
            "summary": data["summary"],
            "launch": entry.launch,
            "image": data["image"],
            "testScales": list(data.get("testScales") or []),
            "timeoutPerJob": defaults.get("timeoutPerJob"),
            "measurement": measurement.get("kind"),
            "logProfile": measurement.get("logProfile"),
            "thresholds": list(data.get("thresholds") or []),
        })
    return rows


@certification_app.command("list-categories")
def list_categories(
    output: str = typer.Option("table", "--output", "-o", help="table or json"),
) -> None:
    """List the catalog's categories: how each runs, what it measures, its thresholds."""
    rows = catalog_rows()
    if output == "json":
        typer.echo(json.dumps({"categories": rows, "platforms": list(load_catalog().platforms),
                               "gpuArchitectures": list(load_catalog().architectures)}, indent=2))
        return
    if output != "table":
        raise UserError(f"--output: unknown format {output!r}; valid: table, json")
    table = Table(title="nvcre catalog", show_lines=False)
    for column in ("Category", "Launch", "Timeout", "Measurement", "Thresholds", "Summary"):
        table.add_column(column, overflow="fold")
    for row in rows:
        measured = f"{row['measurement']} ({row['logProfile']})" if row["measurement"] else "exit code"
        table.add_row(row["category"], row["launch"], row["timeoutPerJob"] or "", measured,
                      ", ".join(row["thresholds"]) or "-", row["summary"])
    console = Console()
    console.print(table)
    console.print(f"platforms: {', '.join(load_catalog().platforms)}")
    console.print(f"GPU architectures: {', '.join(load_catalog().architectures)}")
