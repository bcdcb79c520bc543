"""LogProfile: the data that tells the parsers how to read a workload's log.

A LogProfile (cluster-scoped kind ``nvcre.nvidia.com/v1alpha1``) names regexes for
the events that matter (training steps, checkpoint save/done/restore, application
start, bandwidth rows, transport) with well-known named groups. This module turns
the object into a compiled, validated ``LogProfile``; bad input raises
``ManifestError`` naming the field. The shipped defaults live as YAML data in
``profiles/`` and are returned by ``default_log_profiles()``.

Regexes are compiled with RE2 (``nvcre.measure.userregex``): Go syntax, matching in
linear time, Python-only constructs refused with the reason. The loader is total:
any input gives a ``LogProfile`` or a ``ManifestError``, never another exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

import yaml

from nvcre.errors import ManifestError
from nvcre.measure.userregex import UserRegexError, compile_user_regex

API_VERSION = "nvcre.nvidia.com/v1alpha1"
KIND = "LogProfile"

PATTERN_NAMES = (
    "trainingStep",
    "checkpointSave",
    "checkpointDone",
    "checkpointRestore",
    "checkpointLoaded",
    "applicationStart",
    "warmupStep",
    "bandwidthResult",
    "networkTransport",
)
INT_CAPTURES = ("globalStep", "iteration", "epoch", "step")
FLOAT_CAPTURES = ("stepTiming", "loss", "tflops", "elapsedTime", "saveDuration")
DURATION_CAPTURES = ("stepTiming", "elapsedTime", "saveDuration")
UNIT_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
# Named groups a pattern must have to be useful.
REQUIRED_GROUPS = {
    "bandwidthResult": (("size",), ("algBW",), ("busBW",)),
    "networkTransport": (("transport",),),
    "trainingStep": (("iteration", "globalStep", "step"),),
}


@dataclass(frozen=True)
class EventPattern:
    """One compiled pattern with its unit conversions."""

    name: str
    regex: object  # an RE2 pattern: search(), groupindex
    example: str | None = None
    units: Mapping[str, str] = field(default_factory=dict)

    def scale(self, capture: str) -> float:
        return UNIT_SCALE[self.units.get(capture, "s")]


@dataclass(frozen=True)
class LogProfile:
    """A validated LogProfile spec."""

    name: str
    timestamp_layout: str
    patterns: Mapping[str, EventPattern]
    worker_type: str = "Single"  # Single | Multi
    lifecycle_pod: str = "first"  # first | last
    training_step_pod: str = "first"
    replicated_job_name: str = "trainer"
    container_name: str | None = None
    warmup_steps: int = 0
    log_interval: int | None = None

    def pattern(self, name: str) -> EventPattern | None:
        return self.patterns.get(name)


def load_log_profile(obj: Mapping, *, source: str | None = None) -> LogProfile:
    """Validate and compile a LogProfile object (or just its ``spec``)."""
    if not isinstance(obj, Mapping):
        raise ManifestError("spec", "a LogProfile must be a mapping", source=source)
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    name = name if isinstance(name, str) else obj.get("name") if isinstance(obj.get("name"), str) else ""
    spec = obj.get("spec") if "spec" in obj else obj
    where = source or (f"LogProfile/{name}" if name else None)
    if not isinstance(spec, Mapping):
        raise ManifestError("spec", "must be a mapping", source=where)
    timestamp = spec.get("timestamp")
    layout = timestamp.get("layout") if isinstance(timestamp, Mapping) else None
    if not isinstance(layout, str) or not layout.strip():
        raise ManifestError("spec.timestamp.layout", "is required (a Go time layout, e.g. 2006-01-02T15:04:05Z07:00)",
                            source=where)
    raw_patterns = spec.get("patterns") or {}
    if not isinstance(raw_patterns, Mapping):
        raise ManifestError("spec.patterns", "must be a mapping of pattern name to {regex, example, units}", source=where)
    patterns: dict[str, EventPattern] = {}
    for key, raw in raw_patterns.items():
        path = f"spec.patterns.{key}"
        if not isinstance(key, str) or key not in PATTERN_NAMES:
            raise ManifestError(path, f"unknown pattern; allowed: {', '.join(PATTERN_NAMES)}", source=where)
        if raw is None:
            continue
        patterns[key] = _compile_pattern(key, raw, path, where)
    strategy = spec.get("workerStrategy") or {}
    if not isinstance(strategy, Mapping):
        raise ManifestError("spec.workerStrategy", "must be a mapping", source=where)
    worker_type = strategy.get("type", "Single")
    if not isinstance(worker_type, str) or worker_type not in ("Single", "Multi"):
        raise ManifestError("spec.workerStrategy.type", f"must be Single or Multi, got {worker_type!r}", source=where)
    pods = {}
    for key in ("lifecyclePod", "trainingStepPod"):
        value = strategy.get(key, "first")
        if not isinstance(value, str) or value not in ("first", "last"):
            raise ManifestError(f"spec.workerStrategy.{key}", f"must be first or last, got {value!r}", source=where)
        pods[key] = value
    warmup = _optional_int(spec, "warmupSteps", where, minimum=0) or 0
    interval = _optional_int(spec, "logInterval", where, minimum=1)
    container = spec.get("containerName")
    replicated = strategy.get("replicatedJobName") or "trainer"
    if not isinstance(replicated, str) or len(replicated) > 63:
        raise ManifestError("spec.workerStrategy.replicatedJobName", "must be a name of at most 63 characters",
                            source=where)
    if container is not None and (not isinstance(container, str) or len(container) > 63):
        raise ManifestError("spec.containerName", "must be a container name of at most 63 characters", source=where)
    return LogProfile(
        name=name,
        timestamp_layout=layout,
        patterns=patterns,
        worker_type=worker_type,
        lifecycle_pod=pods["lifecyclePod"],
        training_step_pod=pods["trainingStepPod"],
        replicated_job_name=replicated,
        container_name=container or None,
        warmup_steps=warmup,
        log_interval=interval,
    )


def _optional_int(spec: Mapping, key: str, where: str | None, *, minimum: int) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ManifestError(f"spec.{key}", f"must be an integer >= {minimum}, got {value!r}", source=where)
    return value


def _compile_pattern(key: str, raw: object, path: str, where: str | None) -> EventPattern:
    if isinstance(raw, str):
        raw = {"regex": raw}
    if not isinstance(raw, Mapping):
        raise ManifestError(path, "must be a mapping with regex, example and units", source=where)
    text = raw.get("regex")
    if not isinstance(text, str) or not text:
        raise ManifestError(f"{path}.regex", "is required", source=where)
    try:
        regex = compile_user_regex(text)
    except UserRegexError as err:
        raise ManifestError(f"{path}.regex", str(err), source=where) from None
    groups = set(regex.groupindex)
    for alternatives in REQUIRED_GROUPS.get(key, ()):
        if not groups.intersection(alternatives):
            wanted = " or ".join(f"(?P<{g}>...)" for g in alternatives)
            raise ManifestError(f"{path}.regex", f"needs the named group {wanted}", source=where)
    units = raw.get("units") or {}
    if not isinstance(units, Mapping):
        raise ManifestError(f"{path}.units", "must map a capture name to s, ms or us", source=where)
    for capture, unit in units.items():
        if not isinstance(unit, str) or unit not in UNIT_SCALE:
            raise ManifestError(f"{path}.units.{capture}", f"must be s, ms or us, got {unit!r}", source=where)
        if capture not in DURATION_CAPTURES:
            raise ManifestError(f"{path}.units.{capture}",
                                f"units apply only to {', '.join(DURATION_CAPTURES)}", source=where)
    example = raw.get("example")
    if example is not None:
        if not isinstance(example, str) or len(example) > 4096 or not regex.search(example):
            raise ManifestError(f"{path}.example", f"pattern {key}: example does not match regex", source=where)
    return EventPattern(key, regex, example, dict(units))


def default_log_profiles() -> list[dict]:
    """The shipped LogProfile objects (apiVersion/kind/metadata/spec), sorted by name."""
    folder = resources.files("nvcre.measure") / "profiles"
    profiles = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith((".yaml", ".yml")):
            for doc in yaml.safe_load_all(entry.read_text()):
                if doc:
                    profiles.append(doc)
    return sorted(profiles, key=lambda p: p["metadata"]["name"])


def default_log_profile(name: str) -> LogProfile:
    """One shipped profile, compiled. Raises ``UserError`` naming the known ones."""
    for obj in default_log_profiles():
        if obj["metadata"]["name"] == name:
            return load_log_profile(obj)
    from nvcre.errors import UserError

    known = ", ".join(p["metadata"]["name"] for p in default_log_profiles())
    raise UserError(f"unknown LogProfile {name!r}; shipped profiles: {known}")
