"""The first step of every reconcile pass: read the object itself.

``live_object`` reads the API server's copy; ``running_object`` reads the watch cache's
while the object runs (see its docstring for why that is safe) and live otherwise. An
object that is gone or being deleted ends its memos here, and one deleted while a watch
was away leaves the cache too (a relist sends no DELETED event)."""

from __future__ import annotations

import copy
from collections.abc import Callable

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


def running_object(ctx: Context, kind: str, namespace: str, name: str,
                   running: Callable[[dict], bool] = lambda o: bool(dig(o, "status", "workloadRef"))) -> dict | None:
    """The object to reconcile, from the watch cache while it runs (``running``), else live.

    A running Job is looked at on every event of its pods (thousands at fleet scale), its
    Workflow on every status write of its Jobs, and both grow with the group; reading them
    live each time made the API server serialise them again and each pass wait on a busy
    server. The cache holds the newest copy the watch delivered or a write of this
    controller returned (this controller is the only writer of their status), so what a
    pass decides from is at least what its last pass wrote; a user's edit arrives by the
    watch. A stale copy costs one 409 on the write (re-read, decided again); children are
    created under deterministic names, so a replayed step adopts them; a copy of an object
    deleted while the watch was away costs one 404 (``write_status`` then drops it), and
    what it made is owned by the deleted object and collected. Objects not yet running,
    terminal or unknown are read live.
    """
    cached = ctx.cache.get(kind, namespace, name)
    if (cached is not None and running(cached) and not cached["metadata"].get("deletionTimestamp")
            and not c.is_terminal(dig(cached, "status", "conditions"))):
        return copy.deepcopy(cached)
    return live_object(ctx, kind, namespace, name)
