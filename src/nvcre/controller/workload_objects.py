"""Rendered workloads of large groups live in an owned, compressed ConfigMap, not in the Job.

A full-scale group's rendered objects (launcher and worker Jobs pinned to every node,
the hostfile) grow with the group: about 1.2 MB at 4096 nodes, past what one object
may hold next to the node list and the status. Above ``INLINE_LIMIT`` bytes the Job's
``spec.workload.native`` carries ``objectsRef`` (ConfigMap name, key, SHA-256 of the
uncompressed JSON) instead of ``objects``, and the ConfigMap ``<job>-workload-objects``
(``binaryData["objects.json.gz"]``, owned by the Workflow, created before the Job)
holds them, as the node-result ConfigMaps hold node lists. The Job reconciler reads it
once per Job and keeps it in a bounded memo; a ConfigMap that is missing or does not
match the hash is an error the Job reports, never a workload run from the wrong bytes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json

from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.objpath import dig

# Every status write of a running Job sends the whole object and every watcher receives it
# again: a 127 KiB inline workload (1024 nodes) doubled each write's bytes. A rack's group
# (16 nodes, ~10 KiB) stays inline; a fleet-wide group goes to its ConfigMap.
INLINE_LIMIT = 32 * 1024
KEY = "objects.json.gz"


class WorkloadObjectsError(Exception):
    """The Job's objectsRef cannot be resolved (missing ConfigMap, wrong hash)."""


def _encode(objects: list[dict]) -> tuple[bytes, str]:
    data = json.dumps(objects, separators=(",", ":"), sort_keys=True).encode()
    return data, hashlib.sha256(data).hexdigest()


def configmap_name(job_name: str) -> str:
    return naming.truncate(f"{job_name}-workload-objects", naming.MAX_K8S_NAME)


def externalize(job: dict, owner: dict, *, limit: int = INLINE_LIMIT) -> dict | None:
    """Move a large ``spec.workload.native.objects`` into a ConfigMap; returns it (None: stays inline).

    Edits ``job`` in place: ``objects`` becomes ``objectsRef``.
    """
    native = dig(job, "spec", "workload", "native") or {}
    objects = native.get("objects")
    if not objects:
        return None
    data, digest = _encode(objects)
    if len(data) <= limit:
        return None
    meta = job["metadata"]
    name = configmap_name(meta["name"])
    native.pop("objects")
    native["objectsRef"] = {"name": name, "key": KEY, "sha256": digest}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": {**L.managed_labels(job=meta["name"], workflow=owner["metadata"]["name"])},
            "ownerReferences": [L.owner_reference(owner)],
        },
        "binaryData": {KEY: base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode()},
    }


def objects_ref(job: dict) -> dict | None:
    return (dig(job, "spec", "workload", "native", "objectsRef")) or None


def resolve(job: dict, configmap: dict | None) -> list[dict]:
    """The objects an ``objectsRef`` points to, checked against its hash."""
    ref = objects_ref(job) or {}
    if configmap is None:
        raise WorkloadObjectsError(f"ConfigMap {ref.get('name')} with the rendered workload does not exist")
    try:
        data = gzip.decompress(base64.b64decode((configmap.get("binaryData") or {})[ref.get("key") or KEY]))
    except (KeyError, ValueError, OSError) as err:
        raise WorkloadObjectsError(f"ConfigMap {ref.get('name')} holds no readable {ref.get('key') or KEY}: {err}") from err
    if ref.get("sha256") and hashlib.sha256(data).hexdigest() != ref["sha256"]:
        raise WorkloadObjectsError(f"ConfigMap {ref.get('name')} does not match the Job's objectsRef.sha256")
    return json.loads(data)
