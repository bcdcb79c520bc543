"""Report export pieces that need no cluster: matching, names, the envelope, Retry-After."""

from __future__ import annotations

import gzip
import hashlib
import json

from nvcre.controller import export_delivery as delivery
from nvcre.controller.reconcilers import report_export as rx


def _cert(ns="team-a", labels=None):
    return {"metadata": {"name": "gpu-cert", "namespace": ns, "uid": "c-uid", "labels": labels or {}}}


def _policy(ns="team-a", namespaces=("team-a",), selector=None, suspend=False):
    source = {"namespaces": list(namespaces)}
    if selector:
        source["selector"] = selector
    return {"metadata": {"name": "tracker", "namespace": ns, "uid": "p-uid", "generation": 2},
            "spec": {"source": source, "webhook": {"url": "https://tracker.example.com/in"}, "suspend": suspend}}


def test_selector_semantics():
    labels = {"stage": "burn-in", "site": "a"}
    assert rx.selector_matches(None, labels)
    assert rx.selector_matches({"matchLabels": {"stage": "burn-in"}}, labels)
    assert not rx.selector_matches({"matchLabels": {"stage": "production"}}, labels)
    assert rx.selector_matches({"matchExpressions": [{"key": "site", "operator": "In", "values": ["a", "b"]}]}, labels)
    assert not rx.selector_matches({"matchExpressions": [{"key": "site", "operator": "NotIn", "values": ["a"]}]}, labels)
    assert rx.selector_matches({"matchExpressions": [{"key": "rack", "operator": "DoesNotExist"}]}, labels)
    assert not rx.selector_matches({"matchExpressions": [{"key": "rack", "operator": "Exists"}]}, labels)


def test_which_policies_apply():
    assert rx.policy_applies(_policy(), _cert(), "nvcre-system")
    assert not rx.policy_applies(_policy(suspend=True), _cert(), "nvcre-system")
    assert not rx.policy_applies(_policy(namespaces=("team-b",)), _cert(), "nvcre-system")
    # a tenant's policy cannot export another namespace; the controller namespace's can
    assert not rx.policy_applies(_policy(ns="team-b", namespaces=("team-a",)), _cert(), "nvcre-system")
    assert rx.policy_applies(_policy(ns="nvcre-system", namespaces=("team-a",)), _cert(), "nvcre-system")
    assert not rx.policy_applies(_policy(selector={"matchLabels": {"stage": "x"}}), _cert(), "nvcre-system")


def test_export_body_freezes_the_policy_and_is_stable():
    body = rx.export_body(_cert(), _policy(), "cluster-1")
    assert body["metadata"]["name"] == "gpu-cert-tracker" and body["metadata"]["namespace"] == "team-a"
    assert body["metadata"]["ownerReferences"][0]["uid"] == "p-uid"
    assert body["spec"]["sourceRef"] == {"kind": "Certification", "namespace": "team-a", "name": "gpu-cert", "uid": "c-uid"}
    assert body["spec"]["policyRef"] == {"name": "tracker", "uid": "p-uid", "generation": 2}
    assert body["spec"]["webhook"]["url"] == "https://tracker.example.com/in"
    assert body == rx.export_body(_cert(), _policy(), "cluster-1")
    assert rx.report_id("c", "p") != rx.report_id("c", "q")
    long = rx.export_name("c" * 200, "p" * 100)
    assert len(long) <= 253 and long != rx.export_name("c" * 200, "p" * 99)


def test_envelope_and_snapshot_bytes():
    doc = delivery.envelope({"result": "FAILED"}, report_id="r1", cluster_id="k1",
                            source={"namespace": "team-a", "name": "gpu-cert", "uid": "c-uid"}, generated_at="2026-12-02T00:00:00Z")
    assert doc["schemaVersion"] == "v1" and doc["source"]["kind"] == "Certification" and doc["report"] == {"result": "FAILED"}
    snap = delivery.make_snapshot(doc)
    assert json.loads(gzip.decompress(snap.compressed)) == doc
    assert snap.sha256 == hashlib.sha256(snap.payload).hexdigest()
    again = delivery.snapshot_from_compressed(snap.compressed)
    assert again == snap


def test_retry_after_forms():
    assert delivery.retry_after_seconds("120") == 120
    assert delivery.retry_after_seconds(None) is None
    assert delivery.retry_after_seconds("soon") is None
    assert delivery.retry_after_seconds("Wed, 21 Oct 2026 07:28:00 GMT", now=0) > 0


def test_post_refuses_plain_http_and_reports_transport_errors():
    snap = delivery.make_snapshot({"x": 1})
    assert delivery.post("http://127.0.0.1:1/x", snap, report_id="r", token=None, timeout=1, ca_bundle=None).error
    refused = delivery.post("https://127.0.0.1:1/x", snap, report_id="r", token=None, timeout=1, ca_bundle=None)
    assert refused.http_status is None and refused.error
