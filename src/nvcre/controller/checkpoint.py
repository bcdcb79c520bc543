"""Checkpoint restart for training Jobs (spec.checkpoint / enableCheckpoint).

When a training workload dies after it saved a checkpoint, and restarts are left, the
Job keeps the dead attempt's rank-0 log (so goodput can account for the lost work and
the restore), deletes the workload but not its checkpoint volume, and creates it again
under the same names; the restarted ranks load the checkpoint. Every step is
idempotent: the attempt log is a create-if-absent ConfigMap named by attempt number.
"""

from __future__ import annotations

import base64
import gzip

from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

MAX_ATTEMPT_LOG = 768 * 1024  # bytes of log kept per attempt (the end of it)
KEEP_ON_RESTART = ("PersistentVolumeClaim",)


def attempt_name(job_name: str, attempt: int) -> str:
    return naming.truncate(f"{job_name}-attempt-{attempt}", naming.MAX_K8S_NAME)


def restart_budget(job: dict) -> tuple[int, int] | None:
    """(restarts done, restarts allowed) when the Job checkpoints, else None."""
    ckpt = dig(job, "spec", "checkpoint")
    if not ckpt:
        return None
    return int(dig(job, "status", "restartCount") or 0), int(ckpt.get("maxRestarts") or 0)


def saved_a_checkpoint(text: str | None, profile: dict | None) -> bool:
    """Whether the attempt's log shows a completed checkpoint save."""
    if not text or not profile:
        return False
    from nvcre.measure.training import parse_training_log

    try:
        return bool(parse_training_log(text, profile).checkpoints)
    except Exception:
        return False


def attempt_log_object(job: dict, attempt: int, text: str) -> dict:
    data = text.encode("utf-8", "replace")[-MAX_ATTEMPT_LOG:]
    meta = job["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": attempt_name(meta["name"], attempt),
            "namespace": meta.get("namespace"),
            "labels": L.managed_labels(job=meta["name"]),
            "ownerReferences": [L.owner_reference(job)],
        },
        "binaryData": {"log.gz": base64.b64encode(gzip.compress(data, mtime=0)).decode()},
    }


def prior_attempt_logs(kube, job: dict) -> list[str]:
    """The logs of the interrupted attempts, oldest first."""
    meta = job["metadata"]
    count = int(dig(job, "status", "restartCount") or 0)
    out = []
    for attempt in range(1, count + 1):
        cm = kube.get("v1", "ConfigMap", attempt_name(meta["name"], attempt), meta.get("namespace"))
        blob = dig(cm, "binaryData", "log.gz")
        if blob:
            out.append(gzip.decompress(base64.b64decode(blob)).decode("utf-8", "replace"))
    return out


def log_profile(kube, job: dict) -> dict | None:
    ref = dig(job, "spec", "goodputMeasurement", "logProfileRef") or "megatron-training"
    return kube.get(NVCRE_API_VERSION, "LogProfile", ref)
