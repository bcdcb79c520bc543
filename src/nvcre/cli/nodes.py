"""`nvcrectl nodes`: the node readiness ledger (which nodes cleared which stage).

``nvcrectl nodes --not-ready --stage production -o name`` prints a drain list, one node
a line, for the platform's own quarantine tooling (nvcre never touches a Node).
``select_rows`` is pure, so filters are tested without a cluster.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Sequence

import typer

from nvcre.cli.apps import app
from nvcre.cli.report import ContextOpt, KubeconfigOpt, cluster_errors, connect
from nvcre.errors import UserError
# Kept equal to nvcre.judge.stages.STAGES and nvcre.judge.ledger.RESULTS by a test; not
# imported from there so `nvcrectl --help` stays light.
STAGES = ("bring-up", "burn-in", "preproduction", "production")
RESULTS = ("Passed", "Failed", "NotJudged")

FORMATS = ("table", "json", "yaml", "name")


def row_of(record: Mapping[str, Any]) -> dict[str, Any]:
    st = record.get("status") or {}
    node = (record.get("spec") or {}).get("nodeName") or (record.get("metadata") or {}).get("name", "")
    results = st.get("results") or []
    return {
        "node": node,
        "stageCleared": st.get("stageCleared"),
        "lastResult": st.get("lastResult"),
        "lastRun": st.get("lastRun"),
        "lastRunTime": st.get("lastRunTime"),
        "results": results,
        "gpuHours": round(sum(float(r.get("gpuHours") or 0) for r in results), 3),
    }


def select_rows(records: Sequence[Mapping[str, Any]], *, stage: str | None = None, result: str | None = None,
                not_ready: bool = False, node: str | None = None) -> list[dict[str, Any]]:
    """Rows for the records, filtered. ``stage`` alone: cleared at that stage or above;
    with ``not_ready``: NOT cleared at it (the drain list)."""
    if stage is not None and stage not in STAGES:
        raise UserError(f"--stage: unknown stage {stage!r}; valid: {', '.join(STAGES)}")
    if result is not None and result not in RESULTS:
        raise UserError(f"--result: unknown result {result!r}; valid: {', '.join(RESULTS)}")
    rows = []
    for record in records:
        row = row_of(record)
        if node and row["node"] != node:
            continue
        if result and row["lastResult"] != result:
            continue
        from nvcre.judge.ledger import is_ready

        ready = is_ready(record.get("status") or {}, stage)
        if not_ready and ready:
            continue
        if stage and not not_ready and not ready:
            continue
        rows.append(row)
    return sorted(rows, key=lambda r: r["node"])


def render_table(rows: list[dict[str, Any]]) -> str:
    header = ("NODE", "STAGE", "LAST RESULT", "LAST RUN", "GPU-HOURS")
    body = [(r["node"], r["stageCleared"] or "-", r["lastResult"] or "-", r["lastRun"] or "-", f"{r['gpuHours']:.2f}")
            for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)] if body else [len(h) for h in header]
    lines = ["   ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in (header, *body)]
    return "\n".join(lines) + "\n"


@app.command("nodes")
def nodes(
    output: str = typer.Option("table", "--output", "-o", help="table, json, yaml or name (one node a line)."),
    stage: Optional[str] = typer.Option(None, "--stage", help=f"Cleared at this stage or above ({', '.join(STAGES)})."),
    result: Optional[str] = typer.Option(None, "--result", help=f"Last result: {', '.join(RESULTS)}."),
    not_ready: bool = typer.Option(False, "--not-ready", help="Only nodes NOT cleared (at --stage, else at any stage)."),
    node: Optional[str] = typer.Option(None, "--node", help="Only this node."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="The controller's namespace (default nvcre-system)."),
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """List the node readiness ledger: the stage each node cleared and what it last measured."""
    import yaml
    from nvcre.controller.ledger import ledger_namespace

    if output not in FORMATS:
        raise UserError(f"-o/--output: unknown format {output!r}; choose one of {', '.join(FORMATS)}")
    select_rows([], stage=stage, result=result)  # bad filters fail before any request
    with cluster_errors():
        from nvcre.kube.resources import NVCRE_API_VERSION

        records = connect(kubeconfig, context).list(NVCRE_API_VERSION, "NodeReadiness", namespace or ledger_namespace())
    rows = select_rows(records, stage=stage, result=result, not_ready=not_ready, node=node)
    if output == "name":
        for row in rows:
            typer.echo(row["node"])
    elif output == "json":
        typer.echo(json.dumps({"nodes": rows}, indent=2))
    elif output == "yaml":
        typer.echo(yaml.safe_dump({"nodes": rows}, sort_keys=False), nl=False)
    else:
        typer.echo(render_table(rows), nl=False)
