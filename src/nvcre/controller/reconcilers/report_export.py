"""Report export: register a ReportExport per matching policy, snapshot, deliver.

* **Register** (called by the Certification reconciler before its first Workflow is
  created): every ReportExportPolicy whose source matches the Certification gets one
  ReportExport in the policy's namespace, owned by the policy, with frozen copies of the
  policy's webhook, retry and retention and a report ID derived from both UIDs (so a
  restarted controller registers the same object, once).
* **Reconcile** a ReportExport: gather (the export, its source, its policy), decide
  (``export_decide``), write. The snapshot is a ConfigMap owned by the export; it is
  created once and reused, so every attempt, before and after a restart, sends the
  same bytes with the same ``Idempotency-Key``.
* **Deliver** on a small pool of its own, so a slow receiver never holds a reconcile
  worker; one attempt per export at a time.

Tenancy: a policy outside the controller's namespace exports only Certifications of
its own namespace; the bearer-token Secret must carry the label
``nvcre.nvidia.com/report-export-token: "true"``, so a policy author cannot send an
arbitrary Secret of the namespace to a URL of their choosing.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

from nvcre.api.common import parse_duration
from nvcre.api.reportexport import MAX_COMPRESSED_BYTES, MAX_PAYLOAD_BYTES, MAX_POLICIES_PER_SOURCE
from nvcre.controller import conditions as c
from nvcre.controller import export_decide as d
from nvcre.controller import export_delivery as delivery
from nvcre.controller.context import Context, format_time, parse_time, write_status
from nvcre.controller.naming import truncate
from nvcre.kube.client import ApiError
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

log = logging.getLogger(__name__)

SNAPSHOT_KEY = "report.json.gz"
TOKEN_LABEL = "nvcre.nvidia.com/report-export-token"
SOURCE_UID_LABEL = "nvcre.nvidia.com/export-source-uid"
POLICY_LABEL = "nvcre.nvidia.com/export-policy"
SNAPSHOT_READY = "SnapshotReady"


# --------------------------------------------------------------------------- matching


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """A Kubernetes label selector over a label map (absent selector: everything)."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), set(expr.get("values") or [])
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def policy_applies(policy: dict, cert: dict, controller_namespace: str) -> bool:
    spec = policy.get("spec") or {}
    if spec.get("suspend"):
        return False
    source = spec.get("source") or {}
    cert_ns = cert["metadata"]["namespace"]
    if source.get("kind", "Certification") != "Certification" or cert_ns not in (source.get("namespaces") or []):
        return False
    policy_ns = policy["metadata"]["namespace"]
    if policy_ns != cert_ns and policy_ns != controller_namespace:
        return False  # a tenant's policy may not read other namespaces' results
    return selector_matches(source.get("selector"), cert["metadata"].get("labels") or {})


def report_id(cert_uid: str, policy_uid: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"nvcre-report-export:{cert_uid}:{policy_uid}"))


def export_name(cert: str, policy: str) -> str:
    return truncate(f"{cert}-{policy}", 253)


def export_body(cert: dict, policy: dict, cluster_id: str) -> dict:
    pmeta, cmeta, pspec = policy["metadata"], cert["metadata"], policy.get("spec") or {}
    return {
        "apiVersion": NVCRE_API_VERSION,
        "kind": "ReportExport",
        "metadata": {
            "name": export_name(cmeta["name"], pmeta["name"]),
            "namespace": pmeta["namespace"],
            "labels": {SOURCE_UID_LABEL: cmeta["uid"], POLICY_LABEL: truncate(pmeta["name"], 63),
                       "app.kubernetes.io/managed-by": "nvcre"},
            "ownerReferences": [{"apiVersion": NVCRE_API_VERSION, "kind": "ReportExportPolicy", "name": pmeta["name"],
                                 "uid": pmeta["uid"], "controller": True, "blockOwnerDeletion": False}],
        },
        "spec": {
            "sourceRef": {"kind": "Certification", "namespace": cmeta["namespace"], "name": cmeta["name"], "uid": cmeta["uid"]},
            "policyRef": {"name": pmeta["name"], "uid": pmeta["uid"], "generation": int(pmeta.get("generation") or 0)},
            "webhook": dict(pspec.get("webhook") or {}),
            "retry": dict(pspec.get("retry") or {}),
            "retention": dict(pspec.get("retention") or {}),
            "clusterID": cluster_id,
            "reportID": report_id(cmeta["uid"], pmeta["uid"]),
        },
    }


def cluster_id(ctx: Context) -> str:
    """The kube-system namespace's UID: stable for the life of the cluster."""
    try:
        ns = ctx.kube.get("v1", "Namespace", "kube-system")
    except ApiError:
        ns = None
    return dig(ns, "metadata", "uid") or ""


def register(ctx: Context, cert: dict, controller_namespace: str) -> list[str]:
    """Create the ReportExports of every matching policy (idempotent); their names."""
    try:
        policies = ctx.kube.list(NVCRE_API_VERSION, "ReportExportPolicy")
    except ApiError as err:
        if err.not_found or err.forbidden:  # CRD not installed, or no right to read policies
            return []
        raise
    matching = sorted((p for p in policies if policy_applies(p, cert, controller_namespace)),
                      key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    if len(matching) > MAX_POLICIES_PER_SOURCE:
        ctx.events.emit(cert, "Warning", "TooManyExportPolicies",
                        f"{len(matching)} ReportExportPolicies match; only the first {MAX_POLICIES_PER_SOURCE} export it")
        matching = matching[:MAX_POLICIES_PER_SOURCE]
    if not matching:
        return []
    cid = cluster_id(ctx)
    names = []
    for policy in matching:
        body = export_body(cert, policy, cid)
        _, created = ctx.kube.create(body)
        if created:
            log.info("registered ReportExport %s/%s for Certification %s/%s", body["metadata"]["namespace"],
                     body["metadata"]["name"], cert["metadata"]["namespace"], cert["metadata"]["name"])
        names.append(body["metadata"]["name"])
    return names


def exports_of_source(ctx: Context, cert: dict) -> list[tuple[str, str, str]]:
    """Queue keys of the exports whose source is this Certification (from the watch store)."""
    uid = dig(cert, "metadata", "uid")
    return [("ReportExport", e["metadata"]["namespace"], e["metadata"]["name"])
            for e in ctx.cache.of_kind("ReportExport")
            if dig(e, "spec", "sourceRef", "uid") == uid]


# --------------------------------------------------------------------------- reconcile


def _source(ctx: Context, spec: dict) -> d.Source:
    ref = spec.get("sourceRef") or {}
    cert = ctx.kube.get(NVCRE_API_VERSION, "Certification", ref.get("name", ""), ref.get("namespace"))
    if cert is None:
        return d.Source(exists=False)
    if cert["metadata"].get("uid") != ref.get("uid"):
        return d.Source(exists=True, uid_matches=False)
    st = cert.get("status") or {}
    return d.Source(exists=True, terminal=c.is_terminal(st.get("conditions")), result=dig(st, "summary", "result"))


def _suspended(ctx: Context, export: dict) -> bool:
    ref = export["spec"].get("policyRef") or {}
    policy = ctx.kube.get(NVCRE_API_VERSION, "ReportExportPolicy", ref.get("name", ""), export["metadata"]["namespace"])
    return bool(policy and policy["metadata"].get("uid") == ref.get("uid") and dig(policy, "spec", "suspend"))


def _apply_status(ctx: Context, export: dict, fields: dict, event: tuple[str, str, str] | None,
                  snapshot_ready: bool | None = None) -> dict | None:
    def mutate(o: dict) -> bool:
        st = o["status"]
        before = json.dumps(st, sort_keys=True)
        for key, value in fields.items():
            if value is None:
                st.pop(key, None)
            else:
                st[key] = value
        if snapshot_ready is not None:
            st.setdefault("conditions", [])
            c.set_condition(st["conditions"], SNAPSHOT_READY, snapshot_ready,
                            "SnapshotReady" if snapshot_ready else "SnapshotPending", fields.get("message", "") or "",
                            now=ctx.now_text())
        return json.dumps(st, sort_keys=True) != before

    written = write_status(ctx, export, mutate) if fields or snapshot_ready is not None else export
    if written is not None and event is not None:
        ctx.events.emit(written, *event)
    return written


class ReportExporter:
    """The ReportExport reconciler and its delivery pool."""

    def __init__(self, controller_namespace: str = "nvcre-system", delivery_threads: int = 2) -> None:
        self.controller_namespace = controller_namespace
        self._pool = ThreadPoolExecutor(max_workers=delivery_threads, thread_name_prefix="nvcre-export")
        self._in_flight: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def reconcile(self, ctx: Context, namespace: str, name: str) -> float | None:
        export = ctx.kube.get(NVCRE_API_VERSION, "ReportExport", name, namespace)
        if export is None or export["metadata"].get("deletionTimestamp"):
            return None
        with self._lock:
            if (namespace, name) in self._in_flight:
                return None  # the delivery thread requeues when its attempt is recorded
        spec, status = export.get("spec") or {}, export.get("status") or {}
        source = _source(ctx, spec) if not status.get("snapshotRef") else d.Source(exists=True)
        decision = d.decide(spec, status, source, now=ctx.now(), suspended=_suspended(ctx, export),
                            parse_time=parse_time, format_time=format_time)
        if decision.action is d.Action.DELETE:
            ctx.kube.delete(NVCRE_API_VERSION, "ReportExport", name, namespace, uid=export["metadata"].get("uid"))
            log.info("ReportExport %s/%s deleted: its retention ran out", namespace, name)
            return None
        if decision.action is d.Action.SNAPSHOT:
            return self._snapshot(ctx, export, decision)
        written = _apply_status(ctx, export, decision.status, decision.event) if decision.status else export
        if decision.action is d.Action.DELIVER and written is not None:
            self._submit(ctx, written)
            return None
        if decision.action is d.Action.STATUS:
            return 0.0  # look again with the new phase (retention timers, delivery)
        return decision.requeue

    # ------------------------------------------------------------ snapshot
    def _snapshot(self, ctx: Context, export: dict, decision: d.Decision) -> float | None:
        export = _apply_status(ctx, export, decision.status, None, snapshot_ready=False)
        if export is None:
            return None
        try:
            snap = self._stored_or_new_snapshot(ctx, export)
        except Exception as err:  # an unreadable run must not wedge the export: it is retried, then failed
            log.warning("snapshot of ReportExport %s failed: %s", export["metadata"]["name"], err)
            _apply_status(ctx, export, {"message": f"snapshot not built yet: {err}"[:1024]}, None)
            return 10.0
        if snap is None:
            return 0.0
        spec = export["spec"]
        fields = {"phase": d.SNAPSHOT_READY, "reason": "SnapshotReady", "message": "report snapshot stored; delivering",
                  "snapshotRef": {"name": snapshot_name(export)}, "sha256": snap.sha256, "payloadBytes": len(snap.payload),
                  "reportID": spec.get("reportID"), "cycleStartedAt": ctx.now_text(), "cycleAttempts": 0,
                  "observedRetryNonce": spec.get("retryNonce")}
        _apply_status(ctx, export, fields, ("Normal", "SnapshotReady", f"report snapshot stored ({len(snap.payload)} bytes)"),
                      snapshot_ready=True)
        return 0.0

    def _stored_or_new_snapshot(self, ctx: Context, export: dict) -> delivery.Snapshot | None:
        meta, spec = export["metadata"], export["spec"]
        stored = ctx.kube.get("v1", "ConfigMap", snapshot_name(export), meta["namespace"])
        if stored is not None and SNAPSHOT_KEY in (stored.get("binaryData") or {}):
            return delivery.snapshot_from_compressed(base64.b64decode(stored["binaryData"][SNAPSHOT_KEY]))
        from nvcre.report.build import build_report
        from nvcre.report.collect import collect
        from nvcre.report.json_report import render_json

        ref = spec["sourceRef"]
        report = json.loads(render_json(build_report(collect(ctx.kube, "Certification", ref["name"], ref["namespace"]))))
        document = delivery.envelope(report, report_id=spec.get("reportID", ""), cluster_id=spec.get("clusterID", ""),
                                     source=ref, generated_at=ctx.now_text())
        snap = delivery.make_snapshot(document)
        if len(snap.payload) > MAX_PAYLOAD_BYTES or len(snap.compressed) > MAX_COMPRESSED_BYTES:
            message = (f"the report is {len(snap.payload)} bytes ({len(snap.compressed)} compressed); the limits are "
                       f"{MAX_PAYLOAD_BYTES} and {MAX_COMPRESSED_BYTES}")
            _apply_status(ctx, export, {"phase": d.FAILED, "reason": "PayloadTooLarge", "message": message,
                                        "completionTime": ctx.now_text()}, ("Warning", "PayloadTooLarge", message))
            return None
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": snapshot_name(export), "namespace": meta["namespace"],
                             "labels": {"app.kubernetes.io/managed-by": "nvcre"},
                             "ownerReferences": [{"apiVersion": NVCRE_API_VERSION, "kind": "ReportExport", "name": meta["name"],
                                                  "uid": meta["uid"], "controller": True, "blockOwnerDeletion": False}]},
                "binaryData": {SNAPSHOT_KEY: base64.b64encode(snap.compressed).decode()}}
        made, created = ctx.kube.create(body)
        if not created:  # another pass stored one first: that one is the snapshot
            return delivery.snapshot_from_compressed(base64.b64decode(made["binaryData"][SNAPSHOT_KEY]))
        return snap

    # ------------------------------------------------------------ delivery
    def _submit(self, ctx: Context, export: dict) -> None:
        key = (export["metadata"]["namespace"], export["metadata"]["name"])
        with self._lock:
            if key in self._in_flight:
                return
            self._in_flight.add(key)
        self._pool.submit(self._deliver, ctx, export, key)

    def _deliver(self, ctx: Context, export: dict, key: tuple[str, str]) -> None:
        try:
            self._attempt(ctx, export)
        except Exception:  # noqa: BLE001 - a delivery thread must survive anything; the export is retried
            log.exception("delivery of ReportExport %s/%s failed unexpectedly", *key)
        finally:
            with self._lock:
                self._in_flight.discard(key)
            ctx.requeue("ReportExport", key[0], key[1], 0.0)

    def _attempt(self, ctx: Context, export: dict) -> None:
        meta, spec, status = export["metadata"], export["spec"], export.get("status") or {}
        cm = ctx.kube.get("v1", "ConfigMap", status["snapshotRef"]["name"], meta["namespace"])
        if cm is None or SNAPSHOT_KEY not in (cm.get("binaryData") or {}):
            _apply_status(ctx, export, {"snapshotRef": None, "sha256": None, "message": "the snapshot ConfigMap is gone; rebuilding"},
                          None, snapshot_ready=False)
            return
        snap = delivery.snapshot_from_compressed(base64.b64decode(cm["binaryData"][SNAPSHOT_KEY]))
        webhook = spec.get("webhook") or {}
        token, problem = self._token(ctx, meta["namespace"], webhook.get("bearerTokenSecretRef"))
        if problem:
            decision = d.give_up(ctx.now(), format_time, "TokenSecretUnavailable", problem)
            _apply_status(ctx, export, decision.status, decision.event)
            return
        outcome = delivery.post(webhook["url"], snap, report_id=spec.get("reportID") or meta["uid"], token=token,
                                timeout=parse_duration(webhook.get("timeout", "10s")), ca_bundle=webhook.get("caBundle"))
        decision = d.after_attempt(spec, status, outcome, now=ctx.now(), format_time=format_time, parse_time=parse_time)
        _apply_status(ctx, export, decision.status, decision.event)
        if decision.requeue is not None:
            ctx.requeue("ReportExport", meta["namespace"], meta["name"], decision.requeue)

    def _token(self, ctx: Context, namespace: str, ref: dict | None) -> tuple[str | None, str | None]:
        if not ref:
            return None, None
        secret = ctx.kube.get("v1", "Secret", ref["name"], namespace)
        if secret is None:
            return None, f"Secret {namespace}/{ref['name']} (bearerTokenSecretRef) does not exist"
        if dig(secret["metadata"], "labels", TOKEN_LABEL) != "true":
            return None, (f"Secret {namespace}/{ref['name']} lacks the label {TOKEN_LABEL}=\"true\" that allows "
                          "nvcre to send it to a webhook")
        raw = dig(secret, "data", ref.get("key", "token"))
        if raw is None:
            return None, f"Secret {namespace}/{ref['name']} has no key {ref.get('key', 'token')!r}"
        return base64.b64decode(raw).decode().strip(), None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def snapshot_name(export: dict) -> str:
    return truncate(f"{export['metadata']['name']}-report", 253)
