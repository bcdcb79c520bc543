"""The first step of every reconcile pass: read the object itself, live.

A pass starts from the API server's copy (not the cache: a write of the last pass may not
have come back through the watch yet). An object that is gone or being deleted ends its
memos here, and one deleted while a watch was away leaves the cache too (a relist sends
no DELETED event)."""

from __future__ import annotations

from nvcre.controller.context import Context
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig


def live_object(ctx: Context, kind: str, namespace: str, name: str) -> dict | None:
    """The object to reconcile, or None when it is gone or being deleted (its memos dropped)."""
    obj = ctx.kube.get(NVCRE_API_VERSION, kind, name, namespace)
    if obj is None or obj["metadata"].get("deletionTimestamp"):
        forget_object(ctx, kind, namespace, name, dig(obj, "metadata", "uid"))
        if obj is None:
            ctx.cache.drop(kind, namespace, name)
        return None
    ctx.cache.put(obj)
    return obj


def forget_object(ctx: Context, kind: str, namespace: str, name: str, uid: str | None) -> None:
    """Drop what was memoised for an object that turned terminal or went away: pod
    placements are kept per Job, the wake-up indexes hold Certifications, WorkloadRuns and
    Workflows."""
    ctx.forget(uid, namespace, name, kind=kind)
