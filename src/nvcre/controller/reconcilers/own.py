"""The first step of every reconcile pass: read the object itself, live.

A pass starts from the API server's copy (not the cache: a write of the last pass may not
have come back through the watch yet). An object that is gone or being deleted ends its
memos here, and one deleted while a watch was away leaves the cache too (a relist sends
no DELETED event)."""

from __future__ import annotations

import copy

from nvcre.controller import conditions as c
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


def running_object(ctx: Context, kind: str, namespace: str, name: str) -> dict | None:
    """The object to reconcile, from the watch cache while its workload runs, else live.

    A running Job is looked at on every event of its pods (thousands at fleet scale) and
    its object grows with the group; reading it live each time made the API server
    serialise it again and the pass wait on a busy server. The cache holds the newest copy
    the watch delivered or a write of this controller returned. A pass on a running object
    creates nothing: a stale copy costs one 409 on the write (re-read, decided again), and
    a copy of an object deleted while the watch was away costs one 404 (``write_status``
    then drops it). Objects not yet running, terminal or unknown are read live.
    """
    cached = ctx.cache.get(kind, namespace, name)
    if (cached is not None and dig(cached, "status", "workloadRef") and not cached["metadata"].get("deletionTimestamp")
            and not c.is_terminal(dig(cached, "status", "conditions"))):
        return copy.deepcopy(cached)
    return live_object(ctx, kind, namespace, name)
