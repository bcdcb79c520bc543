"""Report export end to end: finished reports reach real HTTPS receivers, whatever they do.

Receivers run in this process on 127.0.0.1 with certificates from the test bed's CA
(the policies carry that CA in ``webhook.caBundle``). One is down when the run ends
and comes up later, then answers 503 with Retry-After, then hangs past the timeout,
then accepts; one needs a bearer token; one refuses with 400 until the receiver is
fixed and ``retryNonce`` changes; one never recovers and is cancelled. The controller
is SIGKILLed while deliveries are retrying. Nothing may be lost, and after an export
records Delivered its receiver gets nothing more.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from nvcre.kube.resources import NVCRE_API_VERSION


@dataclass
class Received:
    key: str
    sha256: str
    auth: str
    body: bytes
    answered: int


@dataclass
class Receiver:
    """An HTTPS endpoint answering from a script of (status, delay) pairs; the last repeats."""

    cert: Path
    key: Path
    script: list[tuple[int, float]]
    port: int = 0
    requests: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    def start(self) -> Receiver:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, delay = outer.script[min(len(outer.requests), len(outer.script) - 1)]
                outer.requests.append(Received(self.headers.get("Idempotency-Key", ""), hashlib.sha256(body).hexdigest(),
                                               self.headers.get("Authorization", ""), body, status))
                time.sleep(delay)
                self.send_response(status)
                if status == 503:
                    self.send_header("Retry-After", "1")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.cert), str(self.key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/reports"

    @property
    def accepted(self) -> list[Received]:
        return [r for r in self.requests if 200 <= r.answered < 300]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _policy(name, namespace, url, ca, **spec):
    webhook = {"url": url, "caBundle": ca, "timeout": "2s", **spec.pop("webhook", {})}
    return {"apiVersion": NVCRE_API_VERSION, "kind": "ReportExportPolicy", "metadata": {"name": name, "namespace": namespace},
            "spec": {"source": {"namespaces": [namespace], **spec.pop("source", {})}, "webhook": webhook,
                     "retry": {"initialBackoff": "1s", "maxBackoff": "2s", "maxAttempts": 50, "maxElapsedTime": "10m"},
                     **spec}}


def _export(kube, namespace, name):
    return kube.get(NVCRE_API_VERSION, "ReportExport", name, namespace) or {}


def _phase(kube, namespace, name):
    return (_export(kube, namespace, name).get("status") or {}).get("phase")


def test_reports_reach_receivers_through_faults_and_restarts(sim_fleet, controller, kube, namespace, control_plane,
                                                            kubectl, tmp_path, e2e):
    pair = control_plane.issue_serving_cert(tmp_path / "tls", "receiver", ("127.0.0.1",))
    ca = Path(control_plane.ca_cert).read_text()
    flaky = Receiver(pair.cert, pair.key, [(503, 0), (200, 4), (200, 0)], port=_free_port())  # down at first
    secured = Receiver(pair.cert, pair.key, [(200, 0)]).start()
    refusing = Receiver(pair.cert, pair.key, [(400, 0), (200, 0)]).start()
    dead = Receiver(pair.cert, pair.key, [(503, 0)]).start()
    try:
        kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "tracker-token", "namespace": namespace, "labels": {"nvcre.nvidia.com/report-export-token": "true"}},
            "data": {"token": base64.b64encode(b"s3cret").decode()}})
        for body in (
            _policy("flaky", namespace, flaky.url, ca),
            _policy("secured", namespace, secured.url, ca, webhook={"bearerTokenSecretRef": {"name": "tracker-token"}}),
            _policy("refusing", namespace, refusing.url, ca),
            _policy("dead", namespace, dead.url, ca, retry={"initialBackoff": "30s", "maxBackoff": "1m"}),
            _policy("elsewhere", namespace, secured.url, ca, source={"selector": {"matchLabels": {"site": "other"}}}),
            _policy("paused", namespace, secured.url, ca, suspend=True),
        ):
            kube.create(body)

        sim_fleet.start("healthy.yaml", nodes=4, racks=1)
        controller.start()
        e2e.apply(kube, e2e.certification("exported", namespace, [
            {"domain": "communication", "variant": "nccl-all-reduce",
             "options": {"nodesPerJob": 2, "thresholds": {"busBandwidthGBps": "value >= 1"}}}]))
        cert = e2e.wait_terminal(kube, "Certification", "exported", namespace, 300, controller)
        assert cert["status"]["summary"]["result"] == "PASSED"

        names = {e["metadata"]["name"] for e in kube.list(NVCRE_API_VERSION, "ReportExport", namespace)}
        # one export per matching, active policy: not the selector miss, not the suspended one
        assert names == {"exported-flaky", "exported-secured", "exported-refusing", "exported-dead"}, names

        e2e.wait_for(lambda: _phase(kube, namespace, "exported-secured") == "Delivered", 60, "secured delivery")
        e2e.wait_for(lambda: _phase(kube, namespace, "exported-refusing") == "Failed", 60, "refused delivery")
        e2e.wait_for(lambda: _phase(kube, namespace, "exported-dead") == "Retrying", 60, "dead receiver retrying")
        e2e.wait_for(lambda: (_export(kube, namespace, "exported-flaky").get("status") or {}).get("attempts", 0) >= 2,
                     60, "attempts against the receiver that is down")
        assert flaky.requests == []

        controller.kill()  # while the flaky export is retrying
        flaky.start()  # the receiver comes up on its port while the controller is down
        controller.start()
        e2e.wait_for(lambda: _phase(kube, namespace, "exported-flaky") == "Delivered", 120, "flaky delivery",
                     lambda: json.dumps(_export(kube, namespace, "exported-flaky").get("status"), indent=1))

        flaky_status = _export(kube, namespace, "exported-flaky")["status"]
        # down (refused) at least twice, then 503, then a hang past the 2s timeout, then 200
        assert flaky_status["attempts"] >= 5 and flaky_status["lastHTTPStatus"] == 200, flaky_status
        assert [r.answered for r in flaky.requests][:2] == [503, 200]
        assert len({r.key for r in flaky.requests}) == 1 and len({r.sha256 for r in flaky.requests}) == 1
        assert flaky.requests[0].sha256 == flaky_status["sha256"]

        secured_export = _export(kube, namespace, "exported-secured")
        assert [r.auth for r in secured.requests] == ["Bearer s3cret"]
        envelope = json.loads(secured.requests[0].body)
        assert envelope["schemaVersion"] == "v1"
        assert envelope["reportID"] == secured_export["spec"]["reportID"] == secured_export["status"]["reportID"]
        assert envelope["source"] == {"clusterID": secured_export["spec"]["clusterID"], "kind": "Certification",
                                      "namespace": namespace, "name": "exported", "uid": cert["metadata"]["uid"]}
        assert envelope["report"]["result"] == "PASSED" and secured_export["status"]["result"] == "PASSED"
        assert secured_export["spec"]["clusterID"]
        snapshot = kube.get("v1", "ConfigMap", secured_export["status"]["snapshotRef"]["name"], namespace)
        assert snapshot["metadata"]["ownerReferences"][0]["uid"] == secured_export["metadata"]["uid"]

        refused = _export(kube, namespace, "exported-refusing")
        assert refused["status"]["reason"] == "DeliveryRejected" and refused["status"]["lastHTTPStatus"] == 400
        kube.merge_patch(NVCRE_API_VERSION, "ReportExport", "exported-refusing", namespace, {"spec": {"retryNonce": "fixed"}})
        e2e.wait_for(lambda: _phase(kube, namespace, "exported-refusing") == "Delivered", 60, "delivery after retryNonce")
        assert [r.answered for r in refusing.requests] == [400, 200]
        assert len({r.sha256 for r in refusing.requests}) == 1

        kube.merge_patch(NVCRE_API_VERSION, "ReportExport", "exported-dead", namespace, {"spec": {"cancel": True}})
        e2e.wait_for(lambda: _phase(kube, namespace, "exported-dead") == "Cancelled", 60, "cancel")

        # frozen inputs: the API server refuses a change to anything but cancel and retryNonce
        changed = kubectl("-n", namespace, "patch", "reportexport", "exported-dead", "--type=merge",
                          "-p", json.dumps({"spec": {"webhook": {"url": "https://elsewhere.example.com/x"}}}), check=False)
        assert changed.returncode != 0 and "immutable" in changed.stderr, changed.stderr

        # nothing more after Delivered, through another restart and a few resyncs
        counts = (len(flaky.requests), len(secured.requests), len(refusing.requests))
        controller.kill()
        controller.start()
        time.sleep(8)
        assert (len(flaky.requests), len(secured.requests), len(refusing.requests)) == counts
        assert all(len(r.accepted) >= 1 for r in (flaky, secured, refusing))

        listed = kubectl("-n", namespace, "get", "rex").stdout
        header = listed.splitlines()[0].split()
        assert header[:5] == ["NAME", "SOURCE", "RESULT", "DELIVERY", "ATTEMPTS"], listed
        assert "exported-flaky" in listed and "Delivered" in listed and "Cancelled" in listed
        policies = kubectl("-n", namespace, "get", "rep").stdout
        assert policies.splitlines()[0].split()[:3] == ["NAME", "URL", "SUSPENDED"], policies
    finally:
        for r in (flaky, secured, refusing, dead):
            r.stop()
