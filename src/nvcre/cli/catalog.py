"""`nvcrectl certification list-categories`: what the catalog can run."""

from __future__ import annotations

import typer

from nvcre.cli.apps import certification_app
from nvcre.cli.output import LIST_FORMATS, write_rows


def catalog_rows() -> list[dict]:
    """One row per category, as the table and ``-o json`` show it."""
    from nvcre.catalog.data import load_catalog

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


def _measured(row: dict) -> str:
    return f"{row['measurement']} ({row['logProfile']})" if row["measurement"] else "exit code"


# The table keeps the identifier whole (it is what --category takes) and wraps only the
# summary, so it reads at 80 columns; wide adds what it runs and how it is judged.
COLUMNS = (
    ("CATEGORY", lambda r: r["category"]),
    ("TIMEOUT", lambda r: r["timeoutPerJob"] or "-"),
    ("SUMMARY", lambda r: r["summary"]),
)
WIDE_COLUMNS = (
    ("LAUNCH", lambda r: r["launch"]),
    ("MEASUREMENT", _measured),
    ("THRESHOLDS", lambda r: ", ".join(r["thresholds"]) or "-"),
    ("IMAGE", lambda r: r["image"]),
)


@certification_app.command("list-categories")
def list_categories(
    output: str = typer.Option("table", "--output", "-o", help=f"{', '.join(LIST_FORMATS)}."),
) -> None:
    """List the catalog's categories: how each runs, what it measures, its thresholds."""
    from nvcre.catalog.data import load_catalog
    from nvcre.cli.output import check_format

    check_format(output, LIST_FORMATS)
    catalog = load_catalog()
    rows = catalog_rows()
    # wide puts the summary last again so only it wraps
    wide = WIDE_COLUMNS + (COLUMNS[2],)
    write_rows(
        rows, output,
        columns=COLUMNS if output != "wide" else COLUMNS[:2] + wide,
        name=lambda r: r["category"],
        document=lambda items: {"categories": list(items), "platforms": list(catalog.platforms),
                                "gpuArchitectures": list(catalog.architectures)},
    )
    if output in ("table", "wide"):
        import textwrap

        from nvcre.cli.output import terminal_width

        width = terminal_width() if output == "table" else 10_000
        typer.echo("")
        for label, values in (("platforms", catalog.platforms), ("GPU architectures", catalog.architectures)):
            typer.echo(textwrap.fill(", ".join(values), width, initial_indent=f"{label}: ",
                                     subsequent_indent="  ", break_on_hyphens=False))
