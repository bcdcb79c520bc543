"""`nvcrectl nodes`: the node readiness ledger (which nodes cleared which stage).

``nvcrectl nodes --not-ready --stage production -o name`` prints a drain list, one node
a line, for the platform's own quarantine tooling (nvcre never touches a Node).
``select_rows`` is pure, so filters are tested without a cluster.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import typer

from nvcre.cli.apps import app
from nvcre.cli.output import LIST_FORMATS, check_format
from nvcre.cli.report import ContextOpt, KubeconfigOpt, cluster_errors, connect
from nvcre.errors import UserError
# Kept equal to nvcre.judge.stages.STAGES and nvcre.judge.ledger.RESULTS by a test; not
# imported from there so `nvcrectl --help` stays light.
STAGES = ("bring-up", "burn-in", "preproduction", "production")
RESULTS = ("Passed", "Failed", "NotJudged")



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


def _failing(row: Mapping[str, Any]) -> str:
    failed = sorted({r.get("category") or "" for r in row["results"] if r.get("result") == "Failed"} - {""})
    return ", ".join(failed) or "-"


def _passed(row: Mapping[str, Any]) -> str:
    return f"{sum(1 for r in row['results'] if r.get('result') == 'Passed')}/{len(row['results'])}"


# The run comes last so it alone wraps at 80 columns; wide adds when it ran, how many of
# the node's results passed, and the categories it is failing (never cut).
COLUMNS = (
    ("NODE", lambda r: r["node"]),
    ("STAGE", lambda r: r["stageCleared"] or "-"),
    ("LAST RESULT", lambda r: r["lastResult"] or "-"),
    ("GPU-HOURS", lambda r: f"{r['gpuHours']:.2f}"),
    ("LAST RUN", lambda r: r["lastRun"] or "-"),
)
WIDE_COLUMNS = (
    ("LAST RUN TIME", lambda r: r["lastRunTime"] or "-"),
    ("PASSED", _passed),
    ("FAILING", _failing),
)


def write_nodes(rows: Sequence[Mapping[str, Any]], output: str) -> None:
    """The rows in one of the listing formats; ``name`` is one node a line (a drain list)."""
    from nvcre.cli.output import write_rows

    write_rows(rows, output, columns=COLUMNS, wide_columns=WIDE_COLUMNS, name=lambda r: r["node"],
               document=lambda items: {"nodes": list(items)})


@app.command("nodes")
def nodes(
    output: str = typer.Option("table", "--output", "-o", help=f"{', '.join(LIST_FORMATS)} (name: one node a line)."),
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
    from nvcre.controller.runtime.namespaces import ledger_namespace

    check_format(output, LIST_FORMATS)
    select_rows([], stage=stage, result=result)  # bad filters fail before any request
    with cluster_errors():
        from nvcre.kube.resources import NVCRE_API_VERSION

        records = connect(kubeconfig, context).list(NVCRE_API_VERSION, "NodeReadiness", namespace or ledger_namespace())
    rows = select_rows(records, stage=stage, result=result, not_ready=not_ready, node=node)
    write_nodes(rows, output)
