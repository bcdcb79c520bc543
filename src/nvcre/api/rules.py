"""The validation rules every manifest path shares: the CRD schema, its CEL rules, the CLI.

Each rule is written once here and turned into both forms: a Python check the API
models run (``nvcrectl`` and the controller) and the OpenAPI pattern / bound / CEL
rule the generated CRD carries (the API server). So the CLI and the API server
agree on bounds and reserved names by construction; ``tests/unit/api`` checks that
the generated CRDs carry every rule and the hostile-manifest suite checks both
sides refuse the same inputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

# --- durations -------------------------------------------------------------------------------
DURATION_PATTERN = r"^([0-9]+(h|m|s|ms))+$"
MIN_DURATION_S = 1.0
MAX_DURATION_S = 30 * 24 * 3600.0  # 720h: longer than any readiness run, short of "forever"
_DURATION_PART = re.compile(r"([0-9]+)(ms|h|m|s)")
_DURATION_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def duration_seconds(text: str) -> float:
    """Seconds in a Go-style duration (``1h30m`` -> 5400.0); ValueError when malformed."""
    if not isinstance(text, str) or len(text) > 64 or not re.fullmatch(DURATION_PATTERN, text):
        raise ValueError(f"{text!r} is not a duration; write e.g. 90s, 15m, 1h30m")
    return sum(int(n) * _DURATION_SECONDS[unit] for n, unit in _DURATION_PART.findall(text))


def _go(seconds: float) -> str:
    return f"{int(seconds // 3600)}h" if seconds >= 3600 and seconds % 3600 == 0 else f"{seconds:g}s"


def _check_duration(low: float, high: float, text: str) -> str:
    seconds = duration_seconds(text)
    if not low <= seconds <= high:
        raise ValueError(f"{text!r} is out of range: a duration from {_go(low)} to {_go(high)} is allowed")
    return text


def bounded_duration(low: float = MIN_DURATION_S, high: float = MAX_DURATION_S):
    """A Go duration in ``[low, high]``: pattern + AfterValidator + the same bound as CEL."""
    rule = {
        "rule": f"duration(self) >= duration('{_go(low)}') && duration(self) <= duration('{_go(high)}')",
        "message": f"a duration from {_go(low)} to {_go(high)} is allowed",
    }
    return Annotated[
        str,
        StringConstraints(pattern=DURATION_PATTERN, max_length=32),
        AfterValidator(partial(_check_duration, low, high)),
        Field(json_schema_extra={"x-kubernetes-validations": [rule]}),
    ]


# --- counts ----------------------------------------------------------------------------------
MAX_GPUS_PER_NODE = 64
MAX_NICS_PER_NODE = 64
MAX_REPEAT = 1000
MAX_COUNT = 1_000_000  # iterations, steps, intervals: anything that only needs to be "large"

# --- names -----------------------------------------------------------------------------------
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
StorageClassName = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)]
ConfigMapName = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)]

# A ConfigMap key (Kubernetes' IsConfigMapKey): a file name, never a path. Checked in
# Python only: the API server's cost estimate has no bound for map keys.
CONFIG_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"


def check_config_key(key: str) -> str | None:
    """Why ``key`` cannot be a ConfigMap key (a file under /config), or None."""
    if not isinstance(key, str) or not key or len(key) > 253 or not re.fullmatch(CONFIG_KEY_PATTERN, key):
        return f"{key!r} is not a file name: use letters, digits, '-', '_' and '.', at most 253 characters"
    if key == "." or key.startswith(".."):
        return f"{key!r} is not allowed: '.' and names starting with '..' are refused"
    return None


# --- reserved names --------------------------------------------------------------------------
# Variables the workload's launcher, loader or runtime own: a user value would redirect
# the dynamic loader, the MPI launch or the distributed rendezvous.
RESERVED_ENV_NAMES = (
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PATH", "HOME", "SHELL", "BASH_ENV", "ENV", "IFS",
    "HOSTNAME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "MASTER_ADDR", "MASTER_PORT",
    "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK",
)
RESERVED_ENV_PREFIXES = ("OMPI_MCA_", "OMPI_", "PMIX_", "PRTE_", "PET_", "NVCRE_")
ENV_RULE = {
    "rule": "!(self.name in [" + ", ".join(f"'{n}'" for n in RESERVED_ENV_NAMES) + "]) && "
    + " && ".join(f"!self.name.startsWith('{p}')" for p in RESERVED_ENV_PREFIXES),
    "message": "this variable is reserved (set by the launcher or runtime): "
    + ", ".join(RESERVED_ENV_NAMES) + " and names starting " + ", ".join(RESERVED_ENV_PREFIXES),
    "fieldPath": ".name",
}


def check_env_name(name: str) -> str | None:
    """Why a user may not set variable ``name``, or None."""
    if name in RESERVED_ENV_NAMES or name.startswith(RESERVED_ENV_PREFIXES):
        return (f"{name!r} is reserved (set by the launcher or runtime); reserved: {', '.join(RESERVED_ENV_NAMES)} "
                f"and names starting {', '.join(RESERVED_ENV_PREFIXES)}")
    return None


# Volumes and mount paths the workloads add themselves (nvcre.workloads): one list for
# the API models, the CRD rule and the catalog's resolver.
RESERVED_VOLUME_NAMES = ("dshm", "config-volume", "mpi-ssh", "mpi-ssh-auth", "nvcre-run", "checkpoints")
RESERVED_MOUNT_PATHS = ("/dev/shm", "/config", "/etc/mpi", "/etc/nvcre/ssh", "/run/nvcre", "/mnt/checkpoints")
VOLUME_RULE = {
    "rule": "!has(self.volumes) || self.volumes.all(v, !has(v.name) || !(v.name in ["
    + ", ".join(f"'{n}'" for n in RESERVED_VOLUME_NAMES) + "]))",
    "message": "volume names " + ", ".join(RESERVED_VOLUME_NAMES) + " are reserved",
    "fieldPath": ".volumes",
}
MOUNT_RULE = {
    "rule": "!has(self.volumeMounts) || self.volumeMounts.all(m, !has(m.mountPath) || !(m.mountPath in ["
    + ", ".join(f"'{p}'" for p in RESERVED_MOUNT_PATHS) + "]))",
    "message": "mount paths " + ", ".join(RESERVED_MOUNT_PATHS) + " are reserved",
    "fieldPath": ".volumeMounts",
}


#: A workload registry mirror: host[:port] with an optional path prefix (nvcre.workloads.registry).
MIRROR_PATTERN = (
    r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*(:[0-9]{1,5})?"
    r"(/[a-z0-9]+([._-][a-z0-9]+)*)*$"
)


# --- CEL expressions users write (thresholds, node-health detectors) -------------------------
# The controller's cost estimator (nvcre.measure.celcost) cannot run in the API server, so the
# CRD bounds the *shape* of an expression instead: how many comprehension macros (each one
# multiplies the work of what it encloses), opening brackets (nesting) and commas (literal
# list sizes) it may hold. The pathological class (nested comprehensions over literal lists,
# 60 nested parentheses) is refused at admission; the estimator still judges what passes.
# (short on purpose: the API server's estimate charges findAll by the pattern's length, and a
# Certification's 16 thresholds per category share one budget; exists\w* covers exists_one
# and existsOne, transform\w* the two-variable comprehensions)
CEL_MACRO_PATTERN = r"\.\s*(all|exists\w*|map|filter|transform\w*)\s*\("
_CEL_OPENING = r"[(\[{]"


@dataclass(frozen=True)
class CelShape:
    """Upper bounds on the shape of one user CEL expression (see CEL_MACRO_PATTERN)."""

    what: str
    macros: int
    brackets: int
    commas: int


THRESHOLD_SHAPE = CelShape("a threshold", macros=1, brackets=32, commas=64)
DETECTOR_SHAPE = CelShape("a health detector", macros=2, brackets=64, commas=64)


def check_cel_shape(text: str, shape: CelShape) -> str | None:
    """Why ``text`` is refused by the shape bounds (the API server's rule, in Python), or None."""
    if not isinstance(text, str):
        return None
    counts = (
        (len(re.findall(CEL_MACRO_PATTERN, text)), shape.macros, _macros(shape.macros)),
        (len(re.findall(_CEL_OPENING, text)), shape.brackets, "opening brackets"),
        (text.count(","), shape.commas, "commas"),
    )
    for found, limit, what in counts:
        if found > limit:
            return f"CEL expression refused: {shape.what} may hold at most {limit} {what}, this one has {found}"
    return None


def cel_shape_rules(shape: CelShape) -> list[dict[str, str]]:
    """The same bounds as CRD rules (Kubernetes CEL: ``findAll`` is RE2, as in Python)."""
    def rule(pattern: str, limit: int, what: str) -> dict[str, str]:
        literal = pattern.replace("\\", "\\\\")  # a CEL string literal: backslashes doubled
        return {
            "rule": f"self.findAll('{literal}').size() <= {limit}",
            "message": f"CEL expression refused: {shape.what} may hold at most {limit} {what}",
        }

    return [
        rule(CEL_MACRO_PATTERN, shape.macros, _macros(shape.macros)),
        rule(_CEL_OPENING, shape.brackets, "opening brackets"),
        rule(",", shape.commas, "commas"),
    ]


def _macros(limit: int) -> str:
    return ("comprehension macro" if limit == 1 else "comprehension macros") + " (all, exists, map, filter, ...)"


def cel_expression(max_length: int, shape: CelShape):
    """A user CEL expression string: length bound, shape bounds in Python and in the CRD."""
    return Annotated[
        str,
        StringConstraints(min_length=1, max_length=max_length),
        AfterValidator(partial(_check_shape, shape)),
        Field(json_schema_extra={"x-kubernetes-validations": cel_shape_rules(shape)}),
    ]


def _check_shape(shape: CelShape, text: str) -> str:
    problem = check_cel_shape(text, shape)
    if problem is not None:
        raise ValueError(problem)
    return text
