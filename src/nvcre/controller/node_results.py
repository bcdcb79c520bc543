"""The reference's node-result ConfigMaps: who passed and who failed, outside the status.

Tools written against the reference read ``failedNodesRef`` / ``succeededNodesRef``
(Workflow status, mirrored into the Certification's categoryStatuses and the
WorkloadRun) and open the ConfigMaps they point to:

* ``failed-nodes-<workflowUID[:8]>``: ``binaryData["failed-nodes.json.gz"]``, gzip of
  a JSON list ``[{name, reason, message}]``, one entry per (name, reason), sorted;
* ``succeeded-nodes-<workflowUID[:8]>``: ``binaryData["succeeded-nodes.csv.gz"]``,
  gzip of ``a,b,c`` (sorted, deduplicated).

Both are owned by the Workflow. The names follow from the UID, so the references are
set in the same status write that makes the Workflow terminal and the ConfigMaps are
written right after it; a terminal Workflow whose ConfigMaps are missing (a crash in
between) gets them on its next reconcile. The status keeps the same data inline.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable

from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller.context import Context, write_status
from nvcre.objpath import dig

FAILED_KEY = "failed-nodes.json.gz"
SUCCEEDED_KEY = "succeeded-nodes.csv.gz"


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: the same input, the same bytes


def encode_failed(entries: list[dict]) -> bytes:
    unique: dict[tuple[str, str], dict] = {}
    for n in entries:
        if not n.get("name"):
            continue
        key = (n["name"], n.get("reason") or "")
        unique.setdefault(key, {"name": n["name"], "reason": n.get("reason") or "", "message": n.get("message") or ""})
    rows = [unique[k] for k in sorted(unique)]
    return _gzip(json.dumps(rows, separators=(",", ":")).encode())


def encode_succeeded(names: list[str]) -> bytes:
    return _gzip(",".join(sorted({n for n in names if n})).encode())


def decode_failed(configmap: dict) -> list[dict]:
    return json.loads(gzip.decompress(base64.b64decode(configmap["binaryData"][FAILED_KEY])))


def decode_succeeded(configmap: dict) -> list[str]:
    text = gzip.decompress(base64.b64decode(configmap["binaryData"][SUCCEEDED_KEY])).decode()
    return [n for n in text.split(",") if n]


def refs_for(wf: dict) -> tuple[dict, dict]:
    succeeded, failed = naming.node_results_names(wf["metadata"].get("uid", ""))
    return {"apiGroup": "", "kind": "ConfigMap", "name": succeeded}, {"apiGroup": "", "kind": "ConfigMap", "name": failed}


def succeeded_nodes(wf: dict) -> list[str]:
    """Nodes proven good, as the reference counts them: the nodes of groups that
    succeeded (Unpinned: where its pods ran), every node a diagnosis judged, the nodes a
    decided isolation cleared; minus every node named failed."""
    st = wf.get("status") or {}
    orch = st.get("orchestration") or {}
    groups = orch.get("groups") or []
    passed = {n for g in groups if g.get("phase") == "Succeeded" for n in g.get("nodes") or []}
    if any(g.get("phase") == "Succeeded" and not g.get("nodes") for g in groups):
        passed |= set(orch.get("exercisedNodes") or [])
    if orch.get("diagnose"):
        from nvcre.planning.diagnose import DiagnoseState

        try:
            passed |= set(DiagnoseState.from_dict(orch["diagnose"]).names)
        except Exception:  # a state from an older planner: the groups are all we know
            pass
    if dig(orch, "isolation", "phase") == "Succeeded":
        passed |= set(orch["isolation"].get("nodes") or [])
    failed = {n["name"] for n in st.get("failedNodes") or []}
    return sorted(passed - failed)


def write_workflow_status(ctx: Context, wf: dict, mutate: Callable[[dict], bool]) -> dict | None:
    """``write_status`` for Workflows: the write that makes one terminal also sets its
    node-result references, and the ConfigMaps follow."""

    def with_refs(o: dict) -> bool:
        changed = mutate(o)
        st = o.get("status") or {}
        if changed and c.is_terminal(st.get("conditions")) and not st.get("failedNodesRef"):
            st["succeededNodesRef"], st["failedNodesRef"] = refs_for(o)
        return changed

    written = write_status(ctx, wf, with_refs)
    if written is not None and c.is_terminal(dig(written, "status", "conditions")):
        ensure(ctx, written)
    return written


def ensure(ctx: Context, wf: dict) -> None:
    """Create or update both ConfigMaps of a terminal Workflow (idempotent)."""
    st = wf.get("status") or {}
    if not st.get("failedNodesRef"):
        return
    meta = wf["metadata"]
    succeeded_ref, failed_ref = refs_for(wf)
    for ref, key, data in (
        (failed_ref, FAILED_KEY, encode_failed(st.get("failedNodes") or [])),
        (succeeded_ref, SUCCEEDED_KEY, encode_succeeded(succeeded_nodes(wf))),
    ):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": ref["name"],
                "namespace": meta["namespace"],
                "labels": {**L.managed_labels(workflow=meta["name"]), L.WORKFLOW_UID: meta.get("uid", "")},
                "ownerReferences": [L.owner_reference(wf)],
            },
            "binaryData": {key: base64.b64encode(data).decode()},
        }
        existing, created = ctx.kube.create(body)
        if not created and dig(existing.get("binaryData"), key) != body["binaryData"][key]:
            if L.controlled_by(existing, wf):
                ctx.kube.merge_patch("v1", "ConfigMap", ref["name"], meta["namespace"], {"binaryData": body["binaryData"]})
