"""Consumers keep working: NVIDIA NVSentinel's certification monitor, as its source reads us.

NVSentinel (``health-monitors/nvcre-certification-monitor``) turns failed certification
results into node health events. By its published source it:

* lists Certifications in all namespaces (group ``nvcre.nvidia.com``, ``v1alpha1``);
* takes the completion time from the ``lastTransitionTime`` of the True ``Succeeded``
  or ``Failed`` condition, in whole seconds (RFC 3339);
* reads ``status.categoryStatuses[].{domain, variant, status, failedNodesRef.name,
  succeededNodesRef.name}``;
* decodes ``binaryData["failed-nodes.json.gz"]`` (gzip of ``[{name, reason, message}]``)
  and ``binaryData["succeeded-nodes.csv.gz"]`` (gzip of ``a,b,c``) from those ConfigMaps
  in the Certification's namespace;
* merge-patches its own annotations onto the Certification
  (``nvsentinel.dgxc.nvidia.com/cert-processed``, ``.../error-recovered``).

The reader below does exactly that with the plain Kubernetes client and no nvcre code, so
a change in our objects that would break the monitor fails here. The run has a failing
and a passing category (the brief's failure sample), and annotations written by others
while it runs and after it ended must survive every later status write of the controller
without changing the verdict.
"""

from __future__ import annotations

import base64
import gzip
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from kubernetes import client as k8s

GROUP, VERSION, PLURAL = "nvcre.nvidia.com", "v1alpha1", "certifications"
PROCESSED = "nvsentinel.dgxc.nvidia.com/cert-processed"
RECOVERED = "nvsentinel.dgxc.nvidia.com/error-recovered"
FOREIGN = "example.com/owned-by"


@dataclass
class CategoryResult:
    domain: str
    variant: str
    status: str
    failed: list[dict] = field(default_factory=list)
    succeeded: list[str] = field(default_factory=list)


@dataclass
class CertResult:
    namespace: str
    name: str
    terminal: str  # "Succeeded" or "Failed"
    completed_at: datetime
    annotations: dict
    categories: list[CategoryResult]


def _gunzip(raw: str | None) -> bytes:
    return gzip.decompress(base64.b64decode(raw)) if raw else b""


class MonitorReader:
    """What the monitor reads, the way its source reads it (unstructured objects, two encodings)."""

    def __init__(self, api_client) -> None:
        self.custom = k8s.CustomObjectsApi(api_client)
        self.core = k8s.CoreV1Api(api_client)

    def terminal_certs(self) -> list[CertResult]:
        listed = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
        out = []
        for cert in listed["items"]:
            result = self._read(cert)
            if result is not None:
                out.append(result)
        return out

    def _read(self, cert: dict) -> CertResult | None:
        status = cert.get("status") or {}
        terminal = next((c for c in status.get("conditions") or []
                         if c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"), None)
        if terminal is None:
            return None
        meta = cert["metadata"]
        completed = datetime.strptime(terminal["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        categories = []
        for cs in status.get("categoryStatuses") or []:
            cat = CategoryResult(cs["domain"], cs["variant"], cs["status"])
            failed_ref = (cs.get("failedNodesRef") or {}).get("name")
            if failed_ref:
                cm = self.core.read_namespaced_config_map(failed_ref, meta["namespace"])
                cat.failed = json.loads(_gunzip((cm.binary_data or {}).get("failed-nodes.json.gz")) or b"null") or []
            ok_ref = (cs.get("succeededNodesRef") or {}).get("name")
            if ok_ref:
                cm = self.core.read_namespaced_config_map(ok_ref, meta["namespace"])
                text = _gunzip((cm.binary_data or {}).get("succeeded-nodes.csv.gz")).decode()
                cat.succeeded = [n.strip() for n in text.split(",") if n.strip()]
            categories.append(cat)
        return CertResult(meta["namespace"], meta["name"], terminal["type"], completed,
                          dict(meta.get("annotations") or {}), categories)

    def annotate(self, namespace: str, name: str, annotations: dict) -> None:
        """A JSON merge patch of metadata.annotations, as the monitor sends it."""
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name,
                                                   {"metadata": {"annotations": annotations}})


def test_nvsentinel_reads_results_and_its_annotations_survive(sim_fleet, controller, kube, namespace, api_client, e2e):
    sim_fleet.start("seed-failure-sample.yaml")
    controller.start()
    reader = MonitorReader(api_client)
    e2e.apply(kube, e2e.certification("sentinel-cert", namespace, [
        {"domain": "communication", "variant": "nccl-all-reduce",
         "options": {"nodesPerJob": 8, "thresholds": {"busBandwidthGBps": "value >= 300"}}},
        {"domain": "training", "variant": "nemotron5-8b"},
    ]))
    # another tool annotates while the run is still going: every later status write must keep it
    reader.annotate(namespace, "sentinel-cert", {FOREIGN: "team-a", RECOVERED: json.dumps(["earlier"])})
    e2e.wait_terminal(kube, "Certification", "sentinel-cert", namespace, 300, controller)

    mine = [r for r in reader.terminal_certs() if r.namespace == namespace]
    assert [r.name for r in mine] == ["sentinel-cert"]
    result = mine[0]
    assert result.terminal == "Failed"
    assert result.annotations.get(FOREIGN) == "team-a", result.annotations
    by_variant = {c.variant: c for c in result.categories}
    nccl, training = by_variant["nccl-all-reduce"], by_variant["nemotron5-8b"]
    assert (nccl.domain, nccl.status) == ("communication", "Failed")
    assert (training.domain, training.status) == ("training", "Succeeded")
    rows = {(r["name"], r["reason"]) for r in nccl.failed}
    assert rows == {("gpu-node-07", "ThresholdViolation"), ("gpu-node-12", "HardwareFailureDetected")}, nccl.failed
    assert all(set(r) <= {"name", "reason", "message"} and r["message"] for r in nccl.failed), nccl.failed
    assert "gpu-node-07" not in nccl.succeeded and "gpu-node-12" not in nccl.succeeded
    assert nccl.succeeded, "the passing nodes of the failed category are listed"
    assert training.failed == [] and training.succeeded, training

    # the monitor publishes, then stamps the cert with the terminal transition time (whole seconds)
    stamp = result.completed_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    reader.annotate(namespace, "sentinel-cert", {PROCESSED: stamp, RECOVERED: None})

    # later controller passes (a restart re-reconciles everything) must neither drop the
    # annotations nor reopen or change the verdict
    controller.kill()
    controller.start()
    time.sleep(5)
    kube.merge_patch("nvcre.nvidia.com/v1alpha1", "Certification", "sentinel-cert", namespace,
                     {"metadata": {"labels": {"example.com/touched": "yes"}}})  # an update event too
    time.sleep(5)
    again = next(r for r in reader.terminal_certs() if r.namespace == namespace)
    assert again.annotations.get(PROCESSED) == stamp and again.annotations.get(FOREIGN) == "team-a", again.annotations
    assert RECOVERED not in again.annotations
    assert again.terminal == "Failed" and again.completed_at == result.completed_at
    assert [(c.variant, c.status, sorted((r["name"], r["reason"]) for r in c.failed), c.succeeded) for c in again.categories] == \
        [(c.variant, c.status, sorted((r["name"], r["reason"]) for r in c.failed), c.succeeded) for c in result.categories]
