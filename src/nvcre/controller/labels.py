"""Labels, annotations and owner references the controller stamps on what it creates.

They are how a restarted controller, the report and ``kubectl`` find the children of
an object without trusting status alone: the managed-by label, one label per parent
tier, the group's node list as an annotation (the source of failure attribution),
and a controller owner reference for garbage collection and adoption checks.
"""

from __future__ import annotations
from nvcre.objpath import dig

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "nvcre"
PREFIX = "nvcre.nvidia.com/"
CERTIFICATION = PREFIX + "certification"
CATEGORY_DOMAIN = PREFIX + "category-domain"
CATEGORY_VARIANT = PREFIX + "category-variant"
WORKLOAD_RUN = PREFIX + "workload-run"
WORKFLOW = PREFIX + "workflow"
GROUP = PREFIX + "group"
ITERATION = PREFIX + "iteration"
JOB = PREFIX + "job"

GROUP_NODES = PREFIX + "group-nodes"
REQUESTED_TEST_SCALE = PREFIX + "requested-test-scale"
WORKFLOW_UID = PREFIX + "workflow-uid"
CATEGORY_OPTIONS = PREFIX + "category-options"


def owner_reference(owner: dict, *, controller: bool = True) -> dict:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def controlled_by(obj: dict, owner: dict) -> bool:
    """Whether ``owner`` is the controller owner of ``obj`` (by UID)."""
    uid = owner.get("metadata", {}).get("uid")
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("uid") == uid:
            return True
    return False


def controller_of(obj: dict) -> dict | None:
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def managed_labels(**tiers: str) -> dict[str, str]:
    """The managed-by label plus ``nvcre.nvidia.com/<tier>`` labels (underscores become dashes)."""
    labels = {MANAGED_BY: MANAGER}
    for key, value in tiers.items():
        if value is not None:
            labels[PREFIX + key.replace("_", "-")] = str(value)[:63]
    return labels


def group_nodes(job: dict) -> list[str]:
    text = (dig(job.get("metadata", {}).get("annotations"), GROUP_NODES) or "")
    return [n for n in text.split(",") if n]
