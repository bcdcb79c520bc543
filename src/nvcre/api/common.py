"""Building blocks shared by every kind: the model base, metadata, conditions, refs.

Every API model derives from :class:`ApiModel`: snake_case attributes, camelCase
aliases (the Kubernetes spelling), unknown fields rejected (the API server would
prune them silently, which hides typos), and CEL rules declared next to the
Python checks that mirror them so the CRD and ``parse_object`` cannot drift.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel

from nvcre.api.quantity import QUANTITY_PATTERN, parse_quantity
from nvcre.timefmt import parse_duration as _lenient_duration
from nvcre.api.rules import bounded_duration

API_GROUP = "nvcre.nvidia.com"
API_VERSION = "v1alpha1"
GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"

# Grammar pieces reused by several kinds (Kubernetes' own spellings).
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
QUALIFIED_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$"
)
LABEL_VALUE_PATTERN = r"^$|^[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$"
DURATION_PATTERN = r"^([0-9]+(h|m|s|ms))+$"
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"

def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a Kubernetes label key (``[prefix/]name``), or None when it is one.

    The name is at most 63 characters of alphanumerics, ``-``, ``_`` and ``.``, starting
    and ending alphanumeric; the optional prefix is a DNS subdomain of at most 253.
    """
    import re

    if not key:
        return "a label key must not be empty"
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return f"{key!r} has an empty prefix before '/'"
    if len(name) > 63:
        return f"{key!r}: the name part is {len(name)} characters (at most 63)"
    if len(prefix) > 253:
        return f"{key!r}: the prefix is {len(prefix)} characters (at most 253)"
    if prefix and not re.fullmatch(DNS_SUBDOMAIN_PATTERN, prefix):
        return f"{key!r}: the prefix {prefix!r} is not a lowercase DNS subdomain"
    if not re.fullmatch(QUALIFIED_NAME_PATTERN, key):
        return (f"{key!r} is not a label key: the name must be alphanumerics, '-', '_' or '.', "
                "starting and ending with an alphanumeric")
    return None


# Bounds that keep CEL cost estimates and status sizes predictable.
MAX_NODES = 8192
MAX_NAME_LEN = 253
MAX_MESSAGE_LEN = 1024
MAX_EXCLUSION_MESSAGE_LEN = 256


class FieldProblem(ValueError):
    """A validation problem located below the model that found it.

    ``path`` is relative to that model, in camelCase (``env[3].valueFrom``); ``""``
    means the model itself. ``nvcre.api.load`` joins it to the model's own location.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def cel(rule: str, message: str, *, field_path: str | None = None, reason: str | None = None) -> dict[str, str]:
    """One ``x-kubernetes-validations`` entry. ``field_path`` points the error at a child field."""
    entry = {"rule": rule, "message": message}
    if field_path:
        entry["fieldPath"] = field_path
    if reason:
        entry["reason"] = reason
    return entry


def _add_cel_rules(schema: dict[str, Any], cls: type) -> None:
    """Pydantic hook: copy a model's CEL rules into its JSON schema (read by crd.py)."""
    schema.pop("title", None)
    rules = cls.cel_rules() if hasattr(cls, "cel_rules") else []
    if rules:
        schema["x-kubernetes-validations"] = list(rules)
    if getattr(cls, "preserve_unknown_fields", False):
        schema["x-kubernetes-preserve-unknown-fields"] = True


class ApiModel(BaseModel):
    """Base of every API struct: camelCase on the wire, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        # The API server's types exactly: "4" is not an integer, "yes" not a boolean
        # (an integral float such as 4.0 is an integer there too; see _strict_number).
        strict=True,
        json_schema_extra=_add_cel_rules,
    )

    # A struct whose unknown keys are kept (the CRD says x-kubernetes-preserve-unknown-fields).
    preserve_unknown_fields: ClassVar[bool] = False

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        """CEL rules for this struct's CRD schema; subclasses extend the parent's list."""
        return []

    def to_k8s(self) -> dict[str, Any]:
        """The Kubernetes (camelCase, no nulls) form of this object."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# ---------------------------------------------------------------------------
# Scalar types with their validation.


def _check_quantity(value: int | str) -> int | str:
    if isinstance(value, str) and len(value) > 32:
        raise ValueError("a quantity is at most 32 characters")
    parse_quantity(value)
    return value


def _number_to_str(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return format(value, "g") if isinstance(value, float) else str(value)
    return value


Quantity = Annotated[
    int | str,
    AfterValidator(_check_quantity),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "maxLength": 32,
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    ),
]
"""A Kubernetes resource quantity (``64``, ``500Gi``, ``1.5``, ``250m``)."""

NumberString = Annotated[str, BeforeValidator(_number_to_str), StringConstraints(max_length=64)]
"""A number kept as a string, as the reference's measurement statuses store them."""

Duration = bounded_duration()
"""A Go-style duration from 1s to 720h: ``90s``, ``15m``, ``1h30m`` (0s and 99999999h are refused)."""

Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
"""An RFC 3339 time, as Kubernetes writes it (``2026-11-30T07:00:00Z``)."""

NodeName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_LEN)]
ShortText = Annotated[str, StringConstraints(max_length=MAX_MESSAGE_LEN)]



def parse_duration(text: str) -> float:
    """Seconds in a Go-style duration (``1h30m`` -> 5400.0); ValueError when malformed.

    The spec's strict reading (the CRD pattern); the reading itself is ``nvcre.timefmt``'s.
    """
    if not isinstance(text, str) or not re.fullmatch(DURATION_PATTERN, text):
        raise ValueError(f"{text!r} is not a duration; write e.g. 90s, 15m, 1h30m")
    return float(_lenient_duration(text))


# ---------------------------------------------------------------------------
# Metadata, conditions and references.


class ObjectMeta(ApiModel):
    """The subset of Kubernetes ObjectMeta the product reads and writes.

    Server-managed extras (managedFields, ...) are ignored rather than refused, so
    objects read back from the API server parse.
    """

    model_config = ConfigDict(extra="ignore")

    name: Annotated[str, StringConstraints(max_length=MAX_NAME_LEN, pattern=DNS_SUBDOMAIN_PATTERN)] | None = None
    generate_name: Annotated[str, StringConstraints(max_length=200)] | None = None
    namespace: Annotated[str, StringConstraints(max_length=63, pattern=DNS_LABEL_PATTERN)] | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Timestamp | None = None
    deletion_timestamp: Timestamp | None = None
    finalizers: list[str] | None = None
    owner_references: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _named(self) -> "ObjectMeta":
        if not self.name and not self.generate_name:
            raise FieldProblem("name", "a name is required (or generateName)")
        return self


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(ApiModel):
    """A status condition in the standard metav1.Condition shape."""

    type: Annotated[str, StringConstraints(min_length=1, max_length=316, pattern=QUALIFIED_NAME_PATTERN)] = Field(
        description="Condition type, e.g. InProgress, Succeeded, Failed, ValidationFailed, HardwareFailed."
    )
    status: ConditionStatus = Field(description="True, False or Unknown.")
    observed_generation: Annotated[int, Field(ge=0)] | None = Field(
        None, description="metadata.generation the condition was computed from."
    )
    last_transition_time: Timestamp = Field(description="When status last changed.")
    reason: Annotated[str, StringConstraints(min_length=1, max_length=1024, pattern=CONDITION_REASON_PATTERN)] = Field(
        description="CamelCase machine-readable reason (see nvcre.api.conditions)."
    )
    message: Annotated[str, StringConstraints(max_length=32768)] = Field("", description="Human-readable detail.")


Conditions = Annotated[
    list[Condition],
    Field(
        max_length=16,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    ),
]


class LocalObjectReference(ApiModel):
    """A reference to an object by name in the same namespace (imagePullSecrets)."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_LEN)]


class NamespacedRef(ApiModel):
    """A reference to a named object, optionally in another namespace."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_LEN)]
    namespace: Annotated[str, StringConstraints(max_length=63)] | None = None


class ObjectRef(ApiModel):
    """A typed reference to any object (a Job's workload, a Workflow group's Job)."""

    api_version: Annotated[str, StringConstraints(max_length=MAX_NAME_LEN)] | None = None
    kind: Annotated[str, StringConstraints(min_length=1, max_length=63)]
    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_LEN)]
    namespace: Annotated[str, StringConstraints(max_length=63)] | None = None


class TypedLocalObjectReference(ApiModel):
    """A typed reference in the same namespace (ConfigMap of node results, a measurement's Job)."""

    api_group: Annotated[str, StringConstraints(max_length=MAX_NAME_LEN)] | None = None
    kind: Annotated[str, StringConstraints(min_length=1, max_length=63)]
    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_LEN)]


# ---------------------------------------------------------------------------
# Targeting.


class NodeSelectorRequirement(ApiModel):
    """A label requirement on target nodes, ANDed with nodeSelector."""

    key: Annotated[str, StringConstraints(min_length=1, max_length=317)]
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="In, NotIn, Exists or DoesNotExist (the only operators node targeting evaluates)."
    )
    values: Annotated[list[Annotated[str, StringConstraints(max_length=63)]], Field(max_length=256)] | None = None

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
                "values must be non-empty for In and NotIn and absent for Exists and DoesNotExist",
                field_path=".values",
            )
        ]

    @model_validator(mode="after")
    def _values_match_operator(self) -> "NodeSelectorRequirement":
        needs_values = self.operator in ("In", "NotIn")
        if needs_values != bool(self.values):
            raise FieldProblem(
                "values", "values must be non-empty for In and NotIn and absent for Exists and DoesNotExist"
            )
        return self


TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class TaintSelector(ApiModel):
    """A taint a target node must carry; it also becomes a toleration on the workload.

    Listing ``node.kubernetes.io/unschedulable`` opts cordoned nodes into the run and
    turns off the node health monitor for it (a cordon is not a hardware failure).
    """

    key: Annotated[str, StringConstraints(min_length=1, max_length=317)] = Field(description="Taint key.")
    value: Annotated[str, StringConstraints(max_length=63)] | None = Field(
        None, description="Taint value; empty matches any value (toleration operator Exists)."
    )
    effect: TaintEffect | None = Field(None, description="NoSchedule, PreferNoSchedule or NoExecute; empty matches any.")


class TargetSpec(ApiModel):
    """Which nodes to certify. Filters are ANDed; an empty target means every GPU node
    (``nvidia.com/gpu.present=true``) that is not cordoned."""

    node_selector: Annotated[dict[str, Annotated[str, StringConstraints(max_length=63)]], Field(max_length=64)] | None = Field(
        None, description="Label equality filter on nodes."
    )
    match_expressions: Annotated[list[NodeSelectorRequirement], Field(max_length=32)] | None = Field(
        None, description="Label requirements on nodes, ANDed with nodeSelector."
    )
    node_names: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = Field(
        None, description="Node names; intersected with the label-selected set."
    )
    taint_selectors: Annotated[list[TaintSelector], Field(max_length=16)] | None = Field(
        None, description="Taints every selected node must carry (AND); each also becomes a toleration."
    )


# ---------------------------------------------------------------------------
# Result pieces shared by the statuses (several are our extensions for the report).

FailedNodeReason = Literal["WorkloadFailed", "ThresholdViolation", "HardwareFailureDetected"]


class FailedNode(ApiModel):
    """A node that failed, with why. One node may appear once per reason."""

    name: NodeName
    reason: FailedNodeReason = Field(
        description="WorkloadFailed (the workload exited badly), ThresholdViolation (a threshold was missed) "
        "or HardwareFailureDetected (the node health check fired while it ran)."
    )
    message: ShortText | None = Field(
        None, description="Node-specific detail; omitted when it would repeat the failed group's message."
    )


FailedNodes = Annotated[
    list[FailedNode],
    Field(
        max_length=3 * MAX_NODES,  # one entry per (node, reason), three reasons
        # atomic, not a map keyed by (name, reason): the API server tracks every key of a map list
        # in managedFields, which doubled a failed 4096-node Job (the controller writes the whole
        # list; merge_failed_nodes keeps it unique by (name, reason))
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    ),
]


class ExcludedNode(ApiModel):
    """A target node left out of the run, and why (our extension; the report lists them)."""

    name: NodeName
    reason: Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=CONDITION_REASON_PATTERN)] = Field(
        description="Cordoned, HeterogeneousGPU, InsufficientGPUCapacity, NotGPUNode or another CamelCase reason."
    )
    message: Annotated[str, StringConstraints(max_length=MAX_EXCLUSION_MESSAGE_LEN)] | None = Field(
        default=None,
        description="What about this node excluded it (allocatable GPUs, a failing GPU health condition); set on "
        "the first nodes of a target that had no capable node, so the status says why per node.",
    )


class FailureLog(ApiModel):
    """A log excerpt from one pod of a failed workload."""

    pod_name: Annotated[str, StringConstraints(max_length=MAX_NAME_LEN)] | None = None
    node_name: Annotated[str, StringConstraints(max_length=MAX_NAME_LEN)] | None = None
    exit_code: int | None = None
    reason: Annotated[str, StringConstraints(max_length=256)] | None = Field(
        None, description="Termination reason, e.g. Error, OOMKilled, Timeout."
    )
    tail: Annotated[str, StringConstraints(max_length=32768)] | None = Field(
        None, description="The end of the log: its last 800 lines, at most 32 KiB (the reference's caps)."
    )


class BandwidthPoint(ApiModel):
    """Bandwidth measured at one message size (our extension, numbers not strings)."""

    size_bytes: Annotated[int, Field(ge=0)]
    alg_bw_gbps: Annotated[float, Field(ge=0)] = Field(alias="algBwGBps", description="Algorithm bandwidth, GB/s.")
    bus_bw_gbps: Annotated[float, Field(ge=0)] = Field(alias="busBwGBps", description="Bus bandwidth, GB/s.")
    samples: Annotated[int, Field(ge=0)] = Field(0, description="How many measurements were averaged.")


BandwidthTable = Annotated[list[BandwidthPoint], Field(max_length=64)]
Transport = Annotated[str, StringConstraints(max_length=64)]


class FailedGroup(ApiModel):
    """A node group whose Job failed, for the report (our extension)."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    iteration: Annotated[int, Field(ge=1)] | None = None
    nodes: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = Field(
        None, description="The group's nodes; omitted when orchestration.groups still lists the group (saves space)."
    )
    reason: Annotated[str, StringConstraints(max_length=128)] | None = Field(
        None, description="The Job's Failed / HardwareFailed / ValidationFailed reason."
    )
    message: ShortText | None = None
    failure_log: FailureLog | None = None


class ThresholdEvaluation(ApiModel):
    """One threshold judged against a measurement (our extension)."""

    metric: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    expression: Annotated[str, StringConstraints(max_length=1024)]
    measured_value: float | None = None
    passed: bool
    reason: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="Why it failed or was not judged: ThresholdViolated, MeasurementUnavailable, ..."
    )


Phase = Literal["Pending", "InProgress", "Succeeded", "Failed"]
PHASE_DESCRIPTION = (
    "Pending, InProgress, Succeeded or Failed: the exclusive condition that is True, "
    "for `kubectl get` columns."
)


class InferredHardware(ApiModel):
    """Sizing read from the nodes for a GPU the catalog has no defaults for (our extension)."""

    gpus_per_node: int | None = None
    mlnx_per_node: int | None = None
    nic_resource_name: Annotated[str, StringConstraints(max_length=253)] | None = None
    sources: Annotated[list[Annotated[str, StringConstraints(max_length=256)]], Field(max_length=8)] | None = None
