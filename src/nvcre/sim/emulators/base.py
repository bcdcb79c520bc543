"""What an emulator takes in and gives back.

An emulator is a pure function: the pod's command, arguments and environment, the
facts of the node (and of the MPI hosts it names), the fault model and a seed go in;
timed output lines, an exit code and a duration come out. Times are *simulated*
seconds since the container started; the kubelet divides them by the time scale.
The two callbacks (read a file the pod has mounted, find the node behind a host
name) are plain lookups the kubelet answers from what the API server told it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable

from nvcre.sim.fabric import FabricModel
from nvcre.sim.faults import FaultModel
from nvcre.sim.fleet import NodeFacts


@dataclass(frozen=True)
class Effect:
    """Something a line does to the world when it is written.

    ``gpu-off-bus``: the node loses a GPU (conditions and allocatable change).
    ``checkpoint``: a checkpoint at ``value`` (iteration) now exists under ``key``.
    """

    kind: str
    node: str = ""
    gpu: int = 0
    key: str = ""
    value: int = 0


@dataclass(frozen=True)
class Line:
    at: float  # simulated seconds since the container started
    text: str
    effect: Effect | None = None
    silent: bool = False  # carries only an effect; nothing is written to the log


@dataclass
class Outcome:
    """The whole run: lines in time order, how it ends, and when."""

    kind: str
    lines: list[Line]
    exit_code: int = 0
    duration: float | None = 0.0  # None: runs until stopped (sshd)
    reason: str = ""  # container termination reason override (else Completed/Error)
    hosts: tuple[str, ...] = ()  # node names of the group (MPI), for the kubelet

    def text(self) -> str:
        return "\n".join(line.text for line in self.lines if not line.silent)


@dataclass(frozen=True)
class PodView:
    """The pod as an emulator needs to see it."""

    name: str
    namespace: str = "default"
    hostname: str = ""
    uid: str = ""
    restart_count: int = 0
    gpus_requested: int = 0
    rdma_requested: bool = True

    @property
    def host(self) -> str:
        return self.hostname or self.name


@dataclass(frozen=True)
class GroupHost:
    """An MPI host name resolved to the pod and node behind it."""

    name: str  # as the launcher named it
    hostname: str  # the worker pod's hostname (what its ranks print)
    node: NodeFacts
    rdma_requested: bool = True


@dataclass
class RunContext:
    """Everything one container run depends on."""

    command: list[str]
    args: list[str]
    env: dict[str, str]
    pod: PodView
    node: NodeFacts
    faults: FaultModel = field(default_factory=FaultModel)
    fabric: FabricModel | None = None
    seed: str = "1"
    start: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    time_scale: float = 1.0
    checkpoints: dict[str, int] = field(default_factory=dict)
    off_bus: frozenset[str] = frozenset()  # nodes whose GPU already fell off the bus
    read_file: Callable[[str], str | None] = lambda path: None
    resolve_host: Callable[[str], GroupHost | None] = lambda name: None

    def __post_init__(self) -> None:
        if self.fabric is None:
            self.fabric = FabricModel(self.faults)

    @property
    def argv(self) -> list[str]:
        return list(self.command) + list(self.args)

    def wall(self, at: float) -> datetime:
        """Wall-clock time at which a line written at simulated ``at`` appears."""
        return self.start + timedelta(seconds=at / max(self.time_scale, 1e-9))

    def run_seed(self, *parts: object) -> str:
        return "/".join(str(p) for p in (self.faults.seed, self.seed, self.pod.uid, self.pod.restart_count, *parts))


_VAR = re.compile(r"\$(?:\{(\w+)(?::?-([^}]*))?\}|(\w+))")
_ARITH = re.compile(r"\$__arith_([0-9a-f]*)__")
_NAME = re.compile(r"\$?\{?([A-Za-z_]\w*)\}?")


def arithmetic(expression: str, env: dict[str, str]) -> str:
    """Shell ``$(( ))``: integers, variables, + - * / % and parentheses; else empty."""
    import ast

    def value(match: re.Match[str]) -> str:
        text = env.get(match.group(1), "0")
        return text if text.lstrip("-").isdigit() else "0"

    try:
        tree = ast.parse(_NAME.sub(value, expression).replace("/", "//"), mode="eval")
    except SyntaxError:
        return ""
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult,
               ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd)
    if not all(isinstance(node, allowed) for node in ast.walk(tree)):
        return ""
    try:
        return str(int(eval(compile(tree, "<arith>", "eval"), {"__builtins__": {}})))
    except (ArithmeticError, ValueError):
        return ""


def expand(text: str, env: dict[str, str]) -> str:
    """Expand ``$VAR``, ``${VAR}``, ``${VAR:-default}`` and ``$(( ))`` the way a shell would."""
    text = _ARITH.sub(lambda m: arithmetic(bytes.fromhex(m.group(1)).decode(), env), text)

    def sub(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        default = match.group(2)
        value = env.get(name)
        if value in (None, "") and default is not None:
            return default
        return value or ""

    return _VAR.sub(sub, text)


def parse_size(text: str) -> int:
    """nccl-tests sizes: a number with an optional K/M/G (1024-based) suffix."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)[bB]?\s*", text)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    number = float(match.group(1))
    unit = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2).lower()]
    return int(number * unit)
