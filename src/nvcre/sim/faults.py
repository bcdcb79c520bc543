"""The fault model: what is broken in the simulated fleet, and the ground truth of it.

Faults come from a scenario file (YAML) or ``--fault TYPE:key=value,...`` flags. The
model is immutable data; the fabric model and the emulators ask it questions
("how much is this node's network slowed?", "does a GPU fall off the bus here?").
Tests compare what nvcre concludes with :meth:`FaultModel.ground_truth`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from nvcre.errors import ManifestError, UserError


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


Factor = Annotated[float, Field(gt=0.0, le=1.0)]


class SlowGpu(_Model):
    """One GPU runs slower (clocks throttled): compute and its NVLink share slow down."""

    type: Literal["slow-gpu"]
    node: str
    gpu: int = Field(default=0, ge=0)
    factor: Factor


class DegradedNic(_Model):
    """A NIC (rail) of a node delivers only ``factor`` of its rate; rings wait for it."""

    type: Literal["degraded-nic"]
    node: str
    nic: int = Field(default=0, ge=0)
    factor: Factor


class BadLink(_Model):
    """The path between two nodes is degraded (a bad cable or switch port)."""

    type: Literal["bad-link"]
    nodes: tuple[str, str]
    factor: Factor


class DegradedRack(_Model):
    """A rack's (or leaf switch's) uplink is degraded: traffic leaving the rack slows."""

    type: Literal["degraded-rack"]
    rack: str
    factor: Factor


class GpuOffBus(_Model):
    """A GPU falls off the bus (XID 79) part-way through the first run that uses it."""

    type: Literal["gpu-off-bus"]
    node: str
    gpu: int = Field(default=0, ge=0)
    at_fraction: float = Field(default=0.5, gt=0.0, lt=1.0)
    after_seconds: float | None = Field(default=None, ge=0.0)


class FlakyNode(_Model):
    """Every run that touches the node fails with this probability (seeded)."""

    type: Literal["flaky-node"]
    node: str
    probability: float = Field(gt=0.0, le=1.0)


class TooFewGpus(_Model):
    """The node advertises fewer allocatable GPUs than it has (a GPU held back)."""

    type: Literal["too-few-gpus"]
    node: str
    allocatable: int = Field(ge=0)


class SocketFallback(_Model):
    """The node's RDMA devices are missing at run time: NCCL falls back to sockets."""

    type: Literal["socket-fallback"]
    node: str


Fault = Annotated[
    Union[SlowGpu, DegradedNic, BadLink, DegradedRack, GpuOffBus, FlakyNode, TooFewGpus, SocketFallback],
    Field(discriminator="type"),
]

FAULT_TYPES = (
    "slow-gpu",
    "degraded-nic",
    "bad-link",
    "degraded-rack",
    "gpu-off-bus",
    "flaky-node",
    "too-few-gpus",
    "socket-fallback",
)


class FleetShape(_Model):
    """The fleet a scenario was written for; command-line flags override it."""

    nodes: int | None = Field(default=None, ge=1, le=4096)
    platform: str | None = None
    gpu: str | None = None
    racks: int | None = Field(default=None, ge=1)
    # nodes per rack, in order: racks of unequal size (they must add up to ``nodes``)
    rack_sizes: tuple[Annotated[int, Field(ge=1, le=4096)], ...] | None = Field(default=None, min_length=1, max_length=4096)
    time_scale: float | None = Field(default=None, gt=0.0)
    dra: bool | None = None

    @model_validator(mode="after")
    def _sizes_fit(self) -> FleetShape:
        if self.rack_sizes is None:
            return self
        total = sum(self.rack_sizes)
        if self.nodes is not None and total != self.nodes:
            raise ValueError(f"rackSizes {list(self.rack_sizes)} add up to {total} nodes, not the fleet's {self.nodes}")
        if self.racks is not None and self.racks != len(self.rack_sizes):
            raise ValueError(f"racks is {self.racks} but rackSizes names {len(self.rack_sizes)} racks; give one of them")
        return self


class Scenario(_Model):
    """A scenario file: fleet shape, randomness and the faults."""

    name: str = "custom"
    description: str = ""
    fleet: FleetShape = FleetShape()
    seed: int = 1
    noise: float = Field(default=0.01, ge=0.0, le=0.2)
    faults: tuple[Fault, ...] = ()


def _error_field(err: dict[str, Any]) -> str:
    parts: list[str] = []
    for loc in err.get("loc", ()):
        if isinstance(loc, int):
            parts.append(f"[{loc}]")
        elif loc in FAULT_TYPES:
            continue  # the union tag pydantic inserts, not a field of the file
        else:
            parts.append(("." if parts else "") + str(loc))
    return "".join(parts) or "(top level)"


def parse_scenario(data: Any, *, source: str = "scenario") -> Scenario:
    """Validate a scenario mapping, naming the field on error."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ManifestError("(top level)", "a scenario must be a mapping", source=source)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = first.get("msg", "invalid value")
        if first.get("type") == "union_tag_invalid":
            message = f"unknown fault type; allowed: {', '.join(FAULT_TYPES)}"
        raise ManifestError(_error_field(first), message, source=source) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"--scenario: cannot read {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ManifestError("(top level)", f"not valid YAML: {exc}", source=str(path)) from None
    return parse_scenario(data, source=str(path))


def parse_fault_flag(text: str) -> Fault:
    """Parse ``TYPE:key=value,key=value`` (e.g. ``degraded-nic:node=gpu-node-07,factor=0.5``)."""
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    if kind not in FAULT_TYPES:
        raise UserError(f"--fault {text!r}: unknown fault type {kind!r}; allowed: {', '.join(FAULT_TYPES)}")
    fields: dict[str, Any] = {"type": kind}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise UserError(f"--fault {text!r}: expected key=value, got {item!r}")
        if key == "nodes":
            fields[key] = value.split("+")
        else:
            fields[key] = value
    scenario = parse_scenario({"faults": [fields]}, source=f"--fault {text}")
    return scenario.faults[0]



def _strongest(faults: Iterable[Any]) -> float:
    """The lowest speed factor among the matching faults (1.0 when none slows it)."""
    return min([1.0, *(fault.factor for fault in faults)])


class FaultModel:
    """Questions the fabric model and emulators ask about the faults."""

    def __init__(self, faults: tuple[Fault, ...] = (), *, seed: int = 1, noise: float = 0.01, name: str = "custom"):
        self.faults = tuple(faults)
        self.seed = seed
        self.noise = noise
        self.name = name

    @classmethod
    def from_scenario(cls, scenario: Scenario, extra: tuple[Fault, ...] = ()) -> FaultModel:
        return cls(scenario.faults + tuple(extra), seed=scenario.seed, noise=scenario.noise, name=scenario.name)

    def _of(self, kind: type) -> list[Any]:
        return [f for f in self.faults if isinstance(f, kind)]

    def validate_against(self, node_names: set[str], racks: set[str]) -> None:
        """Every fault must name nodes and racks of the fleet."""
        for index, fault in enumerate(self.faults):
            names = list(fault.nodes) if isinstance(fault, BadLink) else [getattr(fault, "node", None)]
            for name in names:
                if name is not None and name not in node_names:
                    raise ManifestError(
                        f"faults[{index}].node", f"{name!r} is not a node of the fleet", source=self.name
                    )
            if isinstance(fault, DegradedRack) and fault.rack not in racks:
                allowed = ", ".join(sorted(racks))
                raise ManifestError(
                    f"faults[{index}].rack", f"{fault.rack!r} is not a rack of the fleet ({allowed})", source=self.name
                )

    # --- per-node questions -------------------------------------------------------
    def nic_factor(self, node: str) -> float:
        return _strongest(fault for fault in self._of(DegradedNic) if fault.node == node)

    def gpu_factor(self, node: str) -> float:
        return _strongest(fault for fault in self._of(SlowGpu) if fault.node == node)

    def slow_gpus(self, node: str) -> dict[int, float]:
        return {f.gpu: f.factor for f in self._of(SlowGpu) if f.node == node}

    def link_factor(self, a: str, b: str) -> float:
        return _strongest(fault for fault in self._of(BadLink) if {a, b} == set(fault.nodes))

    def bad_links(self) -> list[BadLink]:
        return self._of(BadLink)

    def rack_factor(self, rack: str) -> float:
        return _strongest(fault for fault in self._of(DegradedRack) if fault.rack == rack)

    def flaky_probability(self, node: str) -> float:
        survive = 1.0
        for fault in self._of(FlakyNode):
            if fault.node == node:
                survive *= 1.0 - fault.probability
        return 1.0 - survive

    def gpu_off_bus(self, node: str) -> GpuOffBus | None:
        for fault in self._of(GpuOffBus):
            if fault.node == node:
                return fault
        return None

    def off_bus_faults(self) -> list[GpuOffBus]:
        return self._of(GpuOffBus)

    def allocatable_gpus(self, node: str, physical: int) -> int:
        for fault in self._of(TooFewGpus):
            if fault.node == node:
                return min(physical, fault.allocatable)
        return physical

    def socket_fallback(self, node: str) -> bool:
        return any(f.node == node for f in self._of(SocketFallback))

    # --- ground truth --------------------------------------------------------------
    def ground_truth(self, node_names: list[str] | None = None) -> dict[str, Any]:
        """What is broken, by node, link and rack: what a perfect diagnosis would say."""
        by_node: dict[str, list[str]] = {}
        links: list[dict[str, Any]] = []
        racks: list[dict[str, Any]] = []
        for fault in self.faults:
            if isinstance(fault, BadLink):
                links.append({"nodes": sorted(fault.nodes), "factor": fault.factor})
            elif isinstance(fault, DegradedRack):
                racks.append({"rack": fault.rack, "factor": fault.factor})
            else:
                by_node.setdefault(fault.node, []).append(_describe(fault))
        truth: dict[str, Any] = {
            "scenario": self.name,
            "seed": self.seed,
            "noise": self.noise,
            "faults": [f.model_dump(by_alias=True, exclude_none=True) for f in self.faults],
            "faultyNodes": {name: reasons for name, reasons in sorted(by_node.items())},
            "faultyLinks": links,
            "degradedRacks": racks,
        }
        if node_names is not None:
            truth["healthyNodes"] = sorted(n for n in node_names if n not in by_node)
        return truth


def _describe(fault: Any) -> str:
    if isinstance(fault, SlowGpu):
        return f"slow-gpu: GPU {fault.gpu} at {fault.factor:g} of normal speed"
    if isinstance(fault, DegradedNic):
        return f"degraded-nic: NIC {fault.nic} at {fault.factor:g} of its rate"
    if isinstance(fault, GpuOffBus):
        return f"gpu-off-bus: GPU {fault.gpu} falls off the bus (XID 79)"
    if isinstance(fault, FlakyNode):
        return f"flaky-node: runs fail with probability {fault.probability:g}"
    if isinstance(fault, TooFewGpus):
        return f"too-few-gpus: only {fault.allocatable} allocatable"
    if isinstance(fault, SocketFallback):
        return "socket-fallback: no RDMA device, NCCL uses sockets"
    return fault.type
