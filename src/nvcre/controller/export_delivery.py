"""One HTTPS POST of a report snapshot, and the envelope it carries.

Kept apart from the decision (``export_decide``) and the reconciler so the only
network code of report export is here: TLS verified against the system roots or the
policy's ``caBundle``, never disabled; a bearer token in ``Authorization``; the
report ID as ``Idempotency-Key`` on every attempt, so a receiver can drop the copy a
restarted controller may send again; no redirects followed (a 3xx is an answer).
"""

from __future__ import annotations

import email.utils
import gzip
import hashlib
import http.client
import json
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass

from nvcre.controller.export_decide import Outcome

SCHEMA_VERSION = "v1"
USER_AGENT = "nvcre-report-export/1"


@dataclass(frozen=True)
class Snapshot:
    """The bytes sent on every attempt, fixed when the run ended."""

    payload: bytes  # the JSON envelope
    compressed: bytes  # its gzip form, as stored in the snapshot ConfigMap
    sha256: str


def envelope(report: dict, *, report_id: str, cluster_id: str, source: dict, generated_at: str) -> dict:
    """The document a receiver gets: the reference's envelope around the JSON report."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "reportID": report_id,
        "source": {"clusterID": cluster_id, "kind": source.get("kind", "Certification"),
                   "namespace": source["namespace"], "name": source["name"], "uid": source["uid"]},
        "generatedAt": generated_at,
        "report": report,
    }


def make_snapshot(document: dict) -> Snapshot:
    payload = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
    return Snapshot(payload, gzip.compress(payload, compresslevel=9, mtime=0), hashlib.sha256(payload).hexdigest())


def snapshot_from_compressed(compressed: bytes) -> Snapshot:
    payload = gzip.decompress(compressed)
    return Snapshot(payload, compressed, hashlib.sha256(payload).hexdigest())


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After``: delay-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


def tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_bundle:
        context.load_verify_locations(cadata=ca_bundle)
    return context


def post(url: str, snapshot: Snapshot, *, report_id: str, token: str | None, timeout: float,
         ca_bundle: str | None) -> Outcome:
    """POST the snapshot once; never raises for a network or TLS problem (it is an Outcome)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return Outcome(None, f"not an https URL: {url[:200]}")
    headers = {
        "Content-Type": "application/json",
        "Content-Length": str(len(snapshot.payload)),
        "Idempotency-Key": report_id,
        "User-Agent": USER_AGENT,
        "X-Nvcre-Report-Sha256": snapshot.sha256,
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    try:
        conn = http.client.HTTPSConnection(parts.hostname, parts.port or 443, timeout=timeout,
                                           context=tls_context(ca_bundle))
        try:
            conn.request("POST", path, body=snapshot.payload, headers=headers)
            response = conn.getresponse()
            response.read(65536)  # a bounded read: the body is not used
            return Outcome(response.status, None, retry_after_seconds(response.getheader("Retry-After")))
        finally:
            conn.close()
    except ssl.SSLError as err:
        return Outcome(None, f"TLS error: {err.reason or err}"[:300])
    except (socket.timeout, TimeoutError):
        return Outcome(None, f"no answer within {timeout:g}s")
    except (OSError, http.client.HTTPException) as err:
        return Outcome(None, f"{type(err).__name__}: {err}"[:300])
