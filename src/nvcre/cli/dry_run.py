"""`render --dry-run`: the cluster's own nodes instead of --platform/--gpu-arch, and the
API server's judgement of every rendered object without creating any.

Each object is sent as a server-side apply with ``dryRun=All``, so the API server runs
all of admission on it (the CRD schema and its CEL rules, ValidatingAdmissionPolicies,
Pod Security, quota) and persists nothing. The verdicts go to stderr as a table; the
rendered objects stay alone on stdout. Exit 2 when any object is refused (the input is
what is wrong), 3 when the cluster cannot be reached.
"""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

from nvcre.errors import EXIT_USAGE, UserError

if TYPE_CHECKING:  # pragma: no cover
    from nvcre.kube.client import ApiError, KubeClient

OK, INVALID, WARN, SKIPPED = "OK", "INVALID", "WARN", "SKIPPED"


@dataclass
class Verdict:
    resource: str  # Kind/name
    status: str  # OK, INVALID, WARN, SKIPPED
    message: str = ""


@contextlib.contextmanager
def live_session(kubeconfig: str | None, context: str | None) -> Iterator[KubeClient]:
    """A client for the user's cluster; unreachable or refused credentials are exit 3."""
    from nvcre.cli.connection import cluster_errors, connect

    with cluster_errors():
        client = connect(kubeconfig, context)
        client.list("v1", "Namespace")  # fail here, readably, when the cluster is not there
        yield client


@dataclass
class Found:
    """What the controller's discovery finds for a target, and what it reads off the nodes."""

    platform: str
    arch: str
    names: list[str]
    notes: list[str]
    nodes: list[dict]
    detections: dict  # resolve kwargs: GKE networks and TCPXO plugin (GCP H100)

    def resolve(self, resolve_fn):
        """``resolve_fn(**detections)`` as the controller resolves: with the platform's
        detections and, on on-prem GB200/GB300/B200/B300 without a nicResourceName, the NIC
        resource found on the nodes (a note says why when there is none)."""
        from nvcre.discovery.nics import DETECTING_ARCHS, DETECTING_PLATFORMS, detect_nic_resource

        resolved = resolve_fn(**self.detections)
        if self.platform in DETECTING_PLATFORMS and self.arch in DETECTING_ARCHS and not resolved.nic_resource_name:
            nic = detect_nic_resource(self.nodes, platform=self.platform, arch=self.arch, mlnx_per_node=resolved.mlnx_per_node)
            if nic.resource_name:
                resolved = resolve_fn(**self.detections, nic_resource_name=nic.resource_name)
            if nic.message:
                print(f"note: NICResourceDetection: {nic.message}", file=sys.stderr)
        return resolved


def discover(client: KubeClient, target: dict | None) -> Found:
    """The controller's discovery for ``target`` on the cluster's Nodes, with the
    platform detections it makes (``compose.platform_detections``)."""
    from types import SimpleNamespace

    from nvcre.controller import compose

    found = compose.discover(client.list("v1", "Node"), target)
    if not found.nodes:
        raise UserError("--dry-run: no schedulable GPU node on the cluster matches the target "
                        "(see `nvcrectl cluster info`); the controller would wait for nodes")
    notes = [f"{reason}: {message}" for _, reason, message in found.events]
    detections = compose.platform_detections(SimpleNamespace(kube=client), found.nodes, found.platform, found.arch)
    return Found(found.platform, found.arch, [n["metadata"]["name"] for n in found.nodes], notes, found.nodes, detections)


def submittable(obj: dict) -> dict:
    """The object as a client would send it: no server-set fields, no owners (the owners
    do not exist yet, so their uids cannot be named), no status."""
    body = copy.deepcopy(obj)
    body.pop("status", None)
    meta = body.setdefault("metadata", {})
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "ownerReferences"):
        meta.pop(key, None)
    return body


def classify(err: ApiError, names: set[str]) -> tuple[str, str]:
    """(status, message) for a refusal: RBAC forbidding *your* user is SKIPPED (the
    controller creates those objects, not you); a missing object that this render
    itself creates is a WARN (it would exist at run time); anything else is INVALID."""
    text = err.message or err.reason
    if err.status == 403 and " cannot " in text and "ValidatingAdmissionPolicy" not in text:
        return SKIPPED, f"your user may not create it (the controller does): {text}"
    if err.status == 404 and any(n in text for n in names):
        return WARN, f"references an object created at run time: {text}"
    if err.status == 404 and "the server could not find the requested resource" in text:
        return INVALID, "its kind is not installed on the cluster"
    return INVALID, f"{err.status} {err.reason}: {text}"


def dry_run_apply(client: KubeClient, objects: list[dict]) -> list[Verdict]:
    """Every object through admission (``dryRun=All``), in order; nothing is persisted."""
    from nvcre.kube.client import ApiError

    verdicts = []
    names = {o["metadata"]["name"] for o in objects}
    for obj in objects:
        body = submittable(obj)
        resource = f"{body['kind']}/{body['metadata']['name']}"
        try:
            client.apply(body, dry_run=True)
            verdicts.append(Verdict(resource, OK))
        except ApiError as err:
            status, message = classify(err, names - {body["metadata"]["name"]})
            verdicts.append(Verdict(resource, status, message))
    return verdicts


def summary_table(verdicts: list[Verdict]) -> str:
    from nvcre.cli.output import format_table

    return format_table(["RESOURCE", "STATUS", "MESSAGE"], [[v.resource, v.status, v.message] for v in verdicts], width=None)


def check_namespaces(client: KubeClient, objects: list[dict]) -> None:
    from nvcre.kube.resources import resource_for

    wanted = sorted({o["metadata"].get("namespace") for o in objects
                     if o["metadata"].get("namespace") and resource_for(o["apiVersion"], o["kind"]).namespaced})
    for ns in wanted:
        if client.get("v1", "Namespace", ns) is None:
            raise UserError(f"--dry-run: namespace {ns!r} does not exist on the cluster; create it or pass -n with one that does")


def judge(client: KubeClient, objects: list[dict]) -> None:
    """Dry-run apply ``objects``, print the verdicts to stderr, exit 2 if any was refused."""
    check_namespaces(client, objects)
    verdicts = dry_run_apply(client, objects)
    print("\nDry-run (server-side, nothing created):", file=sys.stderr)
    sys.stderr.write(summary_table(verdicts))
    refused = [v for v in verdicts if v.status == INVALID]
    if refused:
        print(f"error: the API server refused {len(refused)} of {len(verdicts)} object(s): "
              f"{', '.join(v.resource for v in refused[:5])}{' ...' if len(refused) > 5 else ''}", file=sys.stderr)
        raise typer.Exit(EXIT_USAGE)
