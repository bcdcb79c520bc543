"""`nvcrectl certification baselines`: the shipped expected figures, each with its source."""

from __future__ import annotations

from typing import Optional

import typer

from nvcre.cli.apps import certification_app
from nvcre.cli.output import LIST_FORMATS
from nvcre.errors import UserError

# The unit each metric's figures are in, shown beside the number in the table.
UNITS = {"busBandwidthGBps": "GB/s", "algBandwidthGBps": "GB/s", "avgTFLOPsPerGPU": "TFLOPs/GPU", "avgStepTimeSec": "s"}


def baseline_document(arch: str | None = None) -> dict:
    """Stages, fabrics and entries as ``-o json|yaml`` print them (unknown stays 'unknown')."""
    from nvcre.judge.baselines import load_baselines

    data = load_baselines()
    entries = [e for e in data.entries if not arch or e.arch == arch.lower()]
    return {
        "stages": [{"name": s.name, "fraction": s.fraction, "why": s.why} for s in data.stages.values()],
        "fabrics": [{"name": f.name, **({"platforms": list(f.platforms)} if f.platforms else
                                           {"nicsPerNode": f.nics_per_node}), "description": f.description}
                    for f in data.fabrics.values()],
        "baselines": [e.to_dict() for e in entries],
    }


def _num(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _figure(row: dict, key: str) -> str:
    """A figure with its metric's unit; 'unknown' stays bare."""
    value = row[key]
    if not isinstance(value, (int, float)):
        return str(value)
    unit = UNITS.get(row["metric"], "")
    return f"{_num(value)} {unit}".strip()


def _scope(row: dict) -> str:
    nodes = row.get("nodes")
    return row["scope"] + (f" {nodes[0]}-{nodes[1]}" if nodes else "")


def baseline_name(row: dict) -> str:
    """One baseline as a single token (``-o name``): arch, fabric, scope and category."""
    return f"{row['arch']}:{row['fabric']}:{row['scope']}:{row['category']}"


# The table fits 80 columns: the unit beside each figure stands in for the metric;
# wide adds the fabric, the metric's name and the source (never cut).
COLUMNS = (
    ("GPU", lambda r: r["arch"]),
    ("CATEGORY", lambda r: r["category"]),
    ("SCOPE (NODES)", _scope),
    ("EXPECTED", lambda r: _figure(r, "expected")),
    ("ACCEPTANCE", lambda r: _figure(r, "acceptance")),
)
WIDE_COLUMNS = (
    ("FABRIC", lambda r: r["fabric"]),
    ("METRIC", lambda r: r["metric"]),
    ("SOURCE", lambda r: " ".join(str(r.get("source") or "-").split())),
)


@certification_app.command("baselines")
def baselines(
    output: str = typer.Option("table", "--output", "-o", help=f"{', '.join(LIST_FORMATS)}."),
    gpu_arch: Optional[str] = typer.Option(None, "--gpu-arch", help="only this GPU architecture (e.g. h100)"),
) -> None:
    """List the expected figures that readiness stages derive thresholds from, with sources."""
    from nvcre.cli.output import check_format, write_document, write_rows
    from nvcre.judge.baselines import load_baselines

    check_format(output, LIST_FORMATS)
    doc = baseline_document(gpu_arch)
    if gpu_arch and not doc["baselines"]:
        known = sorted({e.arch for e in load_baselines().entries})
        raise UserError(f"--gpu-arch: no baselines for {gpu_arch!r}; architectures with baselines: {', '.join(known)}")
    if output in ("json", "yaml"):
        write_document(doc, output)
        return
    write_rows(doc["baselines"], output, columns=COLUMNS, wide_columns=WIDE_COLUMNS, name=baseline_name)
    if output in ("table", "wide"):
        import textwrap

        from nvcre.cli.output import terminal_width

        stages = ", ".join(f"{s['name']} {s['fraction']:g}" for s in doc["stages"])
        typer.echo("")
        typer.echo(textwrap.fill(f"stage bar = fraction x acceptance; stages: {stages}",
                                 terminal_width() if output == "table" else 10_000, break_on_hyphens=False))
