"""The reference's `certification run` option flags, mapped onto the Certification's
global CategoryOptions, and the workload registry's pull Secret.

A flag sets the spec-level (global) option, so a category that sets the same option
keeps its own value (the options merge rule). ``--workload-registry`` is the one
exception: "every workload image comes from the mirror" must hold for the whole run,
so it also replaces any per-category ``workloadRegistry``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from nvcre.errors import UserError
from nvcre.workloads.registry import check_mirror

PULL_SECRET_PREFIX = "nvcrectl-pull-"


@dataclass(frozen=True)
class OptionFlags:
    """The values of the option flags (None: not given)."""

    nodes_per_job: int | None = None
    gpus_per_node: int | None = None
    enable_checkpoint: bool | None = None
    enable_mnnvl: bool | None = None
    max_steps: int | None = None
    exit_duration_mins: int | None = None
    startup_stall_timeout_seconds: int | None = None
    repeat_count: int | None = None
    max_restarts: int | None = None
    storage_class: str | None = None
    image: str | None = None
    workload_registry: str | None = None
    stage: str | None = None
    regression_margin: float | None = None


# flag attribute -> (spec key, flag name)
SPEC_KEYS: dict[str, tuple[str, str]] = {
    "nodes_per_job": ("nodesPerJob", "--nodes-per-job"),
    "gpus_per_node": ("gpusPerNode", "--gpus-per-node"),
    "enable_checkpoint": ("enableCheckpoint", "--enable-checkpoint"),
    "enable_mnnvl": ("enableMNNVL", "--enable-mnnvl"),
    "max_steps": ("maxSteps", "--max-steps"),
    "exit_duration_mins": ("exitDurationMins", "--exit-duration-mins"),
    "startup_stall_timeout_seconds": ("startupStallTimeoutSeconds", "--startup-stall-timeout-seconds"),
    "repeat_count": ("repeatCount", "--repeat-count"),
    "max_restarts": ("maxRestarts", "--max-restarts"),
    "storage_class": ("storageClassName", "--storage-class"),
    "image": ("image", "--image"),
    "workload_registry": ("workloadRegistry", "--workload-registry"),
    "stage": ("stage", "--stage"),
    "regression_margin": ("regressionMargin", "--regression-margin"),
}


def apply_option_flags(spec: dict[str, Any], flags: OptionFlags) -> list[str]:
    """Write the given flags into ``spec`` (a Certification spec body); the flags used."""
    used: list[str] = []
    for attr, (key, flag) in SPEC_KEYS.items():
        value = getattr(flags, attr)
        if value is None:
            continue
        spec[key] = value
        used.append(flag)
    if flags.workload_registry is not None:
        problem = check_mirror(flags.workload_registry, "--workload-registry")
        if problem:
            raise UserError(problem)
        for category in spec.get("categories") or []:
            options = category.get("options")
            if isinstance(options, dict) and "workloadRegistry" in options:
                options["workloadRegistry"] = flags.workload_registry
    return used


def with_registry(spec: Any, mirror: str | None) -> Any:
    """A CertificationSpec model with ``mirror`` as the run's workload registry (render, images)."""
    if not mirror:
        return spec
    problem = check_mirror(mirror, "--workload-registry")
    if problem:
        raise UserError(problem)
    categories = [
        c.model_copy(update={"options": c.options.model_copy(update={"workload_registry": mirror})})
        if c.options is not None and c.options.workload_registry else c
        for c in spec.categories
    ]
    return spec.model_copy(update={"workload_registry": mirror, "categories": categories})


def pull_secret_name(run: str) -> str:
    return (PULL_SECRET_PREFIX + run)[:253]


def pull_secret(run: str, namespace: str, registry: str, username: str, password: str) -> dict[str, Any]:
    """A kubernetes.io/dockerconfigjson Secret for ``registry`` (its host: what the kubelet matches)."""
    host = registry.split("/", 1)[0]
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    config = {"auths": {host: {"username": username, "password": password, "auth": auth}}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": pull_secret_name(run), "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "nvcrectl"}},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(config).encode()).decode()},
    }


def registry_credentials(registry: str | None, username: str | None, password: str | None) -> tuple[str, str] | None:
    """(username, password) when a pull Secret is wanted; a user mistake is refused by name."""
    if username is None and password is None:
        return None
    if not registry:
        raise UserError("--workload-registry-username/--workload-registry-password need --workload-registry")
    if not username or not password:
        raise UserError("--workload-registry-username and --workload-registry-password go together; give both")
    return username, password


def add_pull_secret(spec: dict[str, Any], name: str) -> None:
    """Reference the Secret from every workload pod (global imagePullSecrets, and categories that set their own)."""
    ref = {"name": name}
    spec["imagePullSecrets"] = [*[s for s in spec.get("imagePullSecrets") or [] if s != ref], ref]
    for category in spec.get("categories") or []:
        options = category.get("options")
        if isinstance(options, dict) and options.get("imagePullSecrets"):
            options["imagePullSecrets"] = [*[s for s in options["imagePullSecrets"] if s != ref], ref]
