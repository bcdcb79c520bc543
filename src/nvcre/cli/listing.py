"""`nvcrectl certification list` and `workloadrun list`: the runs on the cluster, at a glance.

Read from the objects' statuses alone (no children), so listing a busy cluster is one
request per kind. Formats are the listing set: table, wide, json, yaml, name.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, Optional

import typer

from nvcre.cli.apps import certification_app, workloadrun_app
from nvcre.cli.output import LIST_FORMATS, check_format, write_rows
from nvcre.cli.report import ContextOpt, KubeconfigOpt

NamespaceOpt = typer.Option(None, "--namespace", "-n", help="Only this namespace (default: every namespace you may list).")
OutputOpt = typer.Option("table", "--output", "-o", help=f"{', '.join(LIST_FORMATS)}.")


def _true(conditions: list[dict], ctype: str) -> dict | None:
    return next((c for c in conditions if c.get("type") == ctype and c.get("status") == "True"), None)


def run_row(obj: Mapping[str, Any], now: datetime | None = None) -> dict:
    """One run as a listing row: its result as the report would name it, and counts."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    conds = status.get("conditions") or []
    excluded = status.get("excludedNodes") or []
    if _true(conds, "Failed"):
        result = "FAILED"
    elif _true(conds, "Succeeded"):
        result = "INCOMPLETE" if excluded else "PASSED"
    else:
        result = "RUNNING"
    cats = status.get("categoryStatuses") or []
    failed = {n.get("name") if isinstance(n, dict) else n for n in status.get("failedNodes") or []}
    return {
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "kind": obj.get("kind", ""),
        "result": result,
        "categoriesPassed": sum(1 for c in cats if c.get("status") == "Succeeded"),
        "categoriesTotal": len(cats) or len(((obj.get("spec") or {}).get("categories")) or []),
        "failedNodes": sorted(n for n in failed if n),
        "excludedNodes": len(excluded),
        "platform": status.get("platform") or "",
        "gpu": status.get("gpuArchitecture") or "",
        "totalNodes": status.get("totalNodes") if isinstance(status.get("totalNodes"), int) else None,
        "age": _age(meta.get("creationTimestamp"), now),
    }


def _age(stamp: str | None, now: datetime | None) -> str:
    if not stamp:
        return ""
    try:
        born = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return ""
    secs = int(((now or datetime.now(timezone.utc)) - born).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{max(secs, 0)}s"


COLUMNS = (
    ("NAMESPACE", lambda r: r["namespace"]),
    ("NAME", lambda r: r["name"]),
    ("RESULT", lambda r: r["result"]),
    ("CATEGORIES", lambda r: f"{r['categoriesPassed']}/{r['categoriesTotal']}"),
    ("FAILED", lambda r: str(len(r["failedNodes"]))),
    ("AGE", lambda r: r["age"]),
)
WIDE = (
    ("PLATFORM", lambda r: r["platform"] or "-"),
    ("GPU", lambda r: r["gpu"] or "-"),
    ("NODES", lambda r: "-" if r["totalNodes"] is None else str(r["totalNodes"])),
    ("EXCLUDED", lambda r: str(r["excludedNodes"])),
    ("FAILED NODES", lambda r: ", ".join(r["failedNodes"]) or "-"),
)


def _list(kind: str, namespace: str | None, output: str, kubeconfig: str | None, context: str | None) -> None:
    from nvcre import API_GROUP_VERSION
    from nvcre.cli.connection import cluster_errors, connect

    check_format(output, LIST_FORMATS)
    with cluster_errors():
        items = connect(kubeconfig, context).list(API_GROUP_VERSION, kind, namespace)
    rows = sorted((run_row({**i, "kind": kind}) for i in items), key=lambda r: (r["namespace"], r["name"]))
    plural = kind.lower() + "s"
    write_rows(rows, output, columns=COLUMNS, wide_columns=WIDE,
               name=lambda r: f"{kind.lower()}.nvcre.nvidia.com/{r['name']}",
               document=lambda items: {"kind": f"{kind}List", "items": list(items)})
    if not rows and output in ("table", "wide"):
        typer.echo(f"no {plural} found" + (f" in namespace {namespace}" if namespace else ""), err=True)


@certification_app.command("list")
def certification_list(namespace: Optional[str] = NamespaceOpt, output: str = OutputOpt,
                       kubeconfig: Optional[str] = KubeconfigOpt, context: Optional[str] = ContextOpt) -> None:
    """List Certifications: result, categories passed, failed nodes, age."""
    _list("Certification", namespace, output, kubeconfig, context)


@workloadrun_app.command("list")
def workloadrun_list(namespace: Optional[str] = NamespaceOpt, output: str = OutputOpt,
                     kubeconfig: Optional[str] = KubeconfigOpt, context: Optional[str] = ContextOpt) -> None:
    """List WorkloadRuns: result, failed nodes, age."""
    _list("WorkloadRun", namespace, output, kubeconfig, context)
