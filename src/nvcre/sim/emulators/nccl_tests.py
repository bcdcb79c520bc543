"""nccl-tests emulator: the exact output of ``all_reduce_perf`` and friends.

Handles single-process runs (``-g`` GPUs in one process) and MPI launches
(``mpirun -H a:8,b:8`` / ``--hostfile`` / ``-np`` / ``-N``), the perf flags
``-b -e -f -i -n -w -N -m -c -d -o -g``, and ``NCCL_DEBUG=INFO`` noise. Columns
and number formats follow nccl-tests 2.17 (see ``tests/data/fixtures/nccl``); the times
come from the fabric model, bounded by the group's slowest member.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from dataclasses import dataclass, field

from nvcre.sim.emulators.base import Effect, GroupHost, Line, Outcome, RunContext, parse_size
from nvcre.sim.emulators.shell import Segment
from nvcre.sim.fabric import COLLECTIVES, FabricModel, Member, Noise, Path
from nvcre.sim.fleet import NodeFacts
from nvcre.sim.hardware import NCCL_TESTS_VERSION, NCCL_VERSION, NCCL_VERSION_CODE

BINARY = re.compile(
    r"^(all_reduce|all_gather|alltoall|sendrecv|reduce_scatter|broadcast|reduce)_perf(_mpi)?$"
)
MPI_LAUNCHERS = {"mpirun", "mpiexec", "orterun", "prterun"}

DTYPES = {
    "int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8,
    "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2,
    "f8e4m3": 1, "f8e5m2": 1,
}
_DTYPE_NAMES = {"char": "int8", "int": "int32", "float16": "half", "float32": "float", "float64": "double"}
OPS = {"sum", "prod", "max", "min", "avg", "mulsum", "all"}

HEADER_GROUPS = (
    "#                                                              out-of-place"
    "                       in-place          "
)
HEADER_NAMES = (
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    "     time   algbw   busbw  #wrong "
)
HEADER_UNITS = (
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
    "      (us)  (GB/s)  (GB/s)         "
)

# nccl-tests options that take a value (its getopt string has ':' after all but -h).
_PERF_VALUE_OPTS = set("tgbeifnmwNpcodrzyTGCaRxJSu")
_PERF_LONG = {
    "--nthreads": "t", "--ngpus": "g", "--minbytes": "b", "--maxbytes": "e", "--stepbytes": "i",
    "--stepfactor": "f", "--iters": "n", "--agg_iters": "m", "--warmup_iters": "w",
    "--run_cycles": "N", "--parallel_init": "p", "--check": "c", "--op": "o", "--datatype": "d",
    "--root": "r", "--blocking": "z", "--stream_null": "y", "--timeout": "T", "--cudagraph": "G",
    "--report_cputime": "C", "--average": "a",
}
# mpirun options that take one value (everything else before the binary is a flag).
_MPI_VALUE_OPTS = {
    "-np", "-n", "--np", "-c", "-N", "-npernode", "--npernode", "-npersocket", "--npersocket",
    "-H", "-host", "--host", "-hostfile", "--hostfile", "-machinefile", "--machinefile",
    "--default-hostfile", "-default-hostfile", "-x", "--map-by", "-map-by", "--bind-to", "-bind-to",
    "--rank-by", "-rank-by", "--prefix", "-prefix", "-wdir", "--wdir", "-wd", "--report-bindings-to",
    "--output-filename", "-output-filename", "--timeout", "--tag-output-format", "-am", "--am",
    "--rankfile", "-rf", "--app", "--personality", "--path", "-path", "--launch-agent",
}
_MPI_TWO_VALUE_OPTS = {"--mca", "-mca", "-gmca", "--gmca", "--prtemca", "--omca"}


@dataclass
class PerfArgs:
    """The nccl-tests command line, with nccl-tests' own defaults."""

    op: str
    binary: str
    threads: int = 1
    gpus: int = 1
    min_bytes: int = 32 << 20
    max_bytes: int = 32 << 20
    step_bytes: int = 1 << 20
    step_factor: int = 1
    iters: int = 20
    warmup: int = 1
    agg: int = 1
    cycles: int = 1
    check: int = 1
    dtype: str = "float"
    redop: str = "sum"
    root: int = 0
    graph: int = 0

    def sizes(self) -> list[int]:
        out: list[int] = []
        size = max(0, self.min_bytes)
        while size <= self.max_bytes and len(out) < 512:
            out.append(size)
            if self.step_factor > 1:
                size = size * self.step_factor if size > 0 else 1
            else:
                if self.step_bytes <= 0:
                    break
                size += self.step_bytes
        return out


def parse_perf_args(binary: str, args: list[str]) -> PerfArgs:
    """Parse nccl-tests flags; bad values raise ValueError with nccl-tests' wording."""
    match = BINARY.match(os.path.basename(binary))
    if not match:
        raise ValueError(f"not an nccl-tests binary: {binary}")
    perf = PerfArgs(op=match.group(1), binary=os.path.basename(binary))
    if perf.op in ("alltoall", "all_gather"):
        perf.redop = "none"
    i = 0
    while i < len(args):
        token = args[i]
        key: str | None = None
        value: str | None = None
        if token.startswith("--"):
            name, eq, inline = token.partition("=")
            key = _PERF_LONG.get(name)
            if key is not None:
                value = inline if eq else (args[i + 1] if i + 1 < len(args) else None)
                i += 1 if eq else 2
            else:
                i += 1
                continue
        elif token.startswith("-") and len(token) >= 2 and token[1] in _PERF_VALUE_OPTS:
            key = token[1]
            if len(token) > 2:
                value = token[2:]
                i += 1
            else:
                value = args[i + 1] if i + 1 < len(args) else None
                i += 2
        else:
            i += 1
            continue
        if value is None:
            raise ValueError(f"option requires an argument -- '{key}'")
        _apply_perf_option(perf, key, value)
    return perf


def _apply_perf_option(perf: PerfArgs, key: str, value: str) -> None:
    ints = {"t": "threads", "g": "gpus", "n": "iters", "w": "warmup", "m": "agg", "N": "cycles",
            "c": "check", "r": "root", "G": "graph"}
    if key in ints:
        setattr(perf, ints[key], int(value))
    elif key == "b":
        perf.min_bytes = parse_size(value)
    elif key == "e":
        perf.max_bytes = parse_size(value)
    elif key == "i":
        perf.step_bytes = parse_size(value)
        perf.step_factor = 1
    elif key == "f":
        perf.step_factor = int(value)
    elif key == "d":
        name = value.lower()
        if name not in DTYPES:
            raise ValueError(f"invalid type {value}")
        perf.dtype = _DTYPE_NAMES.get(name, name)
    elif key == "o":
        if value not in OPS:
            raise ValueError(f"invalid op {value}")
        if perf.op not in ("alltoall", "all_gather", "broadcast"):
            perf.redop = value


@dataclass
class MpiArgs:
    """What mpirun was told about hosts and ranks."""

    np: int | None = None
    per_node: int | None = None
    hosts: list[tuple[str, int | None]] = field(default_factory=list)
    hostfile: str | None = None
    exported: dict[str, str] = field(default_factory=dict)


def parse_mpirun(argv: list[str], env: dict[str, str]) -> MpiArgs:
    """Parse mpirun options (everything between ``mpirun`` and the binary)."""
    mpi = MpiArgs()
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in _MPI_TWO_VALUE_OPTS:
            key = argv[i + 1] if i + 1 < len(argv) else ""
            value = argv[i + 2] if i + 2 < len(argv) else ""
            if key.endswith("default_hostfile"):
                mpi.hostfile = value
            i += 3
            continue
        if name in _MPI_VALUE_OPTS:
            value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if eq else 2
            _apply_mpi_option(mpi, name, value, env)
            continue
        i += 1
    if mpi.hostfile is None:
        for var in ("OMPI_MCA_orte_default_hostfile", "OMPI_MCA_prte_default_hostfile",
                    "PRTE_MCA_prte_default_hostfile"):
            if env.get(var):
                mpi.hostfile = env[var]
                break
    return mpi


def _apply_mpi_option(mpi: MpiArgs, name: str, value: str, env: dict[str, str]) -> None:
    if name in ("-np", "-n", "--np", "-c"):
        mpi.np = int(value)
    elif name in ("-N", "-npernode", "--npernode"):
        mpi.per_node = int(value)
    elif name in ("--map-by", "-map-by"):
        match = re.match(r"ppr:(\d+):node", value)
        if match:
            mpi.per_node = int(match.group(1))
    elif name in ("-H", "-host", "--host"):
        for item in filter(None, value.split(",")):
            host, _, slots = item.partition(":")
            mpi.hosts.append((host, int(slots) if slots.isdigit() else None))
    elif name in ("-hostfile", "--hostfile", "-machinefile", "--machinefile", "--default-hostfile",
                  "-default-hostfile"):
        mpi.hostfile = value
    elif name == "-x":
        var, eq, val = value.partition("=")
        if eq:
            mpi.exported[var] = val
        elif var in env:
            mpi.exported[var] = env[var]


def parse_hostfile(text: str) -> list[tuple[str, int | None]]:
    """Lines like ``host slots=8``, ``host:8`` or ``host``; comments ignored."""
    hosts: list[tuple[str, int | None]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        host, _, colon_slots = parts[0].partition(":")
        slots: int | None = int(colon_slots) if colon_slots.isdigit() else None
        for part in parts[1:]:
            key, _, value = part.partition("=")
            if key in ("slots", "max_slots", "max-slots") and value.isdigit() and key == "slots":
                slots = int(value)
        hosts.append((host, slots))
    return hosts


@dataclass
class Rank:
    rank: int
    host: GroupHost
    pid: int
    device: int


def find(segments: list[Segment]) -> tuple[Segment, int] | None:
    """The segment that runs an nccl-tests binary, and the binary's index in it."""
    for segment in segments:
        for index, token in enumerate(segment.argv):
            if BINARY.match(os.path.basename(token)):
                return segment, index
    return None


def _pid(*parts: object) -> int:
    return 20 + int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:6], 16) % 4000


def _fmt(value: float, width: int) -> str:
    """nccl-tests' number formatter: 2, 1 or 0 decimals by magnitude, else exponent."""
    power = 0
    threshold = 1
    while value >= threshold and power < 20:
        power += 1
        threshold *= 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    if width >= 7:
        return f"{value:{width}.1e}"
    return f"{value:{width}.0e}"


def format_row(size: int, count: int, dtype: str, redop: str, root: int,
               results: list[tuple[float, float, float]], check: bool) -> str:
    """One table row: preamble then out-of-place and in-place (time, algbw, busbw, #wrong)."""
    text = f"{size:12d}  {count:12d}  {dtype:>8s}  {redop:>6s}  {root:6d}"
    for time_us, algbw, busbw in results:
        wrong = f"{0:6g}" if check else "   N/A"
        text += f"  {_fmt(time_us, 7)}  {_fmt(algbw, 6)}  {_fmt(busbw, 6)}  {wrong}"
    return text


class _Writer:
    def __init__(self) -> None:
        self.lines: list[Line] = []
        self.t = 0.0

    def add(self, text: str, dt: float = 0.0, effect: Effect | None = None) -> None:
        self.t += dt
        self.lines.append(Line(self.t, text, effect))


def emulate(ctx: RunContext, segment: Segment, binary_index: int) -> Outcome:
    """Run nccl-tests as ``segment`` asks and return its output."""
    argv = segment.argv
    binary = argv[binary_index]
    env = dict(segment.env)
    is_mpi = any(os.path.basename(t) in MPI_LAUNCHERS for t in argv[:binary_index])
    writer = _Writer()
    try:
        perf = parse_perf_args(binary, argv[binary_index + 1:])
    except ValueError as exc:
        writer.add(f"{os.path.basename(binary)}: {exc}")
        return Outcome("nccl-tests", writer.lines, exit_code=1, duration=0.1)

    # --- who takes part --------------------------------------------------------------
    hosts: list[tuple[GroupHost, int]] = []
    if is_mpi:
        start = next(i for i, t in enumerate(argv) if os.path.basename(t) in MPI_LAUNCHERS)
        mpi = parse_mpirun(argv[start + 1:binary_index], env)
        env.update(mpi.exported)
        named = list(mpi.hosts)
        if mpi.hostfile and not named:
            text = ctx.read_file(mpi.hostfile)
            if text is None:
                writer.add("--------------------------------------------------------------------------")
                writer.add("Open RTE was unable to open the hostfile:")
                writer.add(f"    {mpi.hostfile}")
                writer.add("Check to make sure the path and filename are correct.")
                writer.add("--------------------------------------------------------------------------")
                return Outcome("nccl-tests", writer.lines, exit_code=1, duration=0.5)
            named = parse_hostfile(text)
        if named:
            for name, slots in named:
                resolved = ctx.resolve_host(name)
                if resolved is None:
                    writer.add(f"ssh: Could not resolve hostname {name}: Name or service not known", 0.5)
                    writer.add("--------------------------------------------------------------------------")
                    writer.add("ORTE was unable to reliably start one or more daemons.")
                    writer.add("This usually is caused by:")
                    writer.add("")
                    writer.add("* not finding the required libraries and/or binaries on")
                    writer.add("  one or more nodes.")
                    writer.add("--------------------------------------------------------------------------")
                    return Outcome("nccl-tests", writer.lines, exit_code=1, duration=writer.t)
                hosts.append((resolved, slots if slots is not None else resolved.node.gpus))
        else:
            local = GroupHost(ctx.pod.host, ctx.pod.host, ctx.node, ctx.pod.rdma_requested)
            hosts.append((local, mpi.per_node or mpi.np or 1))
        layout = _layout(hosts, mpi.per_node, mpi.np)
    else:
        local = GroupHost(ctx.pod.host, ctx.pod.host, ctx.node, ctx.pod.rdma_requested)
        layout = [(local, 1)]
    ranks = _ranks(layout, perf.gpus, ctx)
    nranks = len(ranks)
    members = _members(layout, perf.gpus)

    # --- which network -----------------------------------------------------------------
    transport = _transport(env, [h for h, _ in layout], ctx)
    loopback = env.get("NCCL_P2P_DISABLE") == "1" and env.get("NCCL_SHM_DISABLE") == "1"
    mnnvl = env.get("NCCL_MNNVL_ENABLE", "1") != "0"
    fabric = ctx.fabric or FabricModel(ctx.faults)
    path = fabric.path(members, transport=transport, mnnvl=mnnvl, loopback=loopback)
    info = env.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE")

    # --- preamble ----------------------------------------------------------------------
    if is_mpi:
        for host, _ in layout:
            if host.hostname != ctx.pod.host:
                writer.add(f"Warning: Permanently added '{host.name}' (ED25519) to the list of known hosts.", 0.05)
    writer.add(f"# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers={NCCL_VERSION_CODE} nccl-library={NCCL_VERSION_CODE}", 0.4)
    writer.add(f"# Collective test starting: {perf.binary}")
    step = f"{perf.step_factor}(factor)" if perf.step_factor > 1 else f"{perf.step_bytes}(bytes)"
    writer.add(
        f"# nThread {perf.threads} nGpus {perf.gpus} minBytes {perf.min_bytes} maxBytes {perf.max_bytes} "
        f"step: {step} warmup iters: {perf.warmup} iters: {perf.iters} agg iters: {perf.agg} "
        f"validation: {perf.check} graph: {perf.graph}"
    )
    writer.add("#")
    writer.add("# Using devices")
    for r in ranks:
        arch = r.host.node.arch
        bus = arch.pci_buses[r.device % len(arch.pci_buses)]
        writer.add(
            f"#  Rank {r.rank:2d} Group  0 Pid {r.pid:6d} on {r.host.hostname:>10s} device {r.device:2d} "
            f"[0000:{bus}:00] {arch.device_name}"
        )
    if info:
        _init_info(writer, ranks, layout, transport, path, mnnvl, env)
    writer.add("#", 1.0 + 0.002 * nranks)
    writer.add(HEADER_GROUPS)
    writer.add(HEADER_NAMES)
    writer.add(HEADER_UNITS)

    # --- the sweep -------------------------------------------------------------------
    collective = COLLECTIVES[perf.op]
    word = DTYPES[perf.dtype]
    noise = Noise(ctx.faults.noise, ctx.run_seed("nccl", perf.op, *(m.node.name for m in members)))
    sweep: list[tuple[int, int, list[tuple[float, float, float]], float]] = []
    for _cycle in range(max(1, perf.cycles)):
        for size in perf.sizes():
            count = size // word
            if collective.per_rank_count:
                count //= max(1, nranks)
                printed = count * word * nranks
            else:
                printed = count * word
            results = []
            cost = 0.0
            for _place in range(2):
                base = FabricModel.op_time_us(perf.op, printed, nranks, path)
                t = noise.time(base)
                algbw = printed / (t * 1e3) if t > 0 else 0.0
                results.append((t, algbw, algbw * collective.bus_factor(nranks)))
                cost += t * (perf.warmup + perf.iters * perf.agg) * (1.25 if perf.check else 1.0)
            sweep.append((printed, count, results, cost / 1e6))
    total = writer.t + sum(c for *_, c in sweep) + 0.5

    # --- faults that end the run early -------------------------------------------------
    failure = _failure(ctx, layout, total, transport, perf.gpus)
    busbws: list[float] = []
    for printed, count, results, cost in sweep:
        if failure and writer.t + cost >= failure[0]:
            break
        writer.add(format_row(printed, count, perf.dtype, collective.redop, collective.root, results,
                              bool(perf.check)), cost)
        busbws.extend(r[2] for r in results)
    if failure:
        at, lines, code, effect = failure
        writer.t = max(writer.t, at)
        for index, text in enumerate(lines):
            writer.add(text, 0.01, effect if index == 0 else None)
        if is_mpi:
            _mpi_abort(writer, ranks, code)
        return Outcome("nccl-tests", writer.lines, exit_code=code, duration=writer.t + 0.2,
                       reason="Error", hosts=tuple(h.node.name for h, _ in layout))

    if info:
        for r in ranks[: min(len(ranks), 64)]:
            writer.add(
                f"{r.host.hostname}:{r.pid}:{r.pid} [{r.device}] NCCL INFO comm 0x{_hex(r.rank, 'comm')} rank {r.rank} "
                f"nranks {nranks} cudaDev {r.device} busId {r.host.node.arch.pci_buses[r.device % len(r.host.node.arch.pci_buses)]}000 - Destroy COMPLETE",
                0.001,
            )
    writer.add("# Out of bounds values : 0 OK", 0.05)
    average = sum(busbws) / len(busbws) if busbws else 0.0
    writer.add(f"# Avg bus bandwidth    : {average:g} ")
    writer.add("#")
    writer.add(f"# Collective test concluded: {perf.binary}")
    writer.add("#")
    writer.add("")
    return Outcome("nccl-tests", writer.lines, exit_code=0, duration=writer.t + 0.2,
                   hosts=tuple(h.node.name for h, _ in layout))


def _layout(hosts: list[tuple[GroupHost, int]], per_node: int | None, np: int | None) -> list[tuple[GroupHost, int]]:
    """How many processes run on each host (mpirun's by-slot mapping)."""
    if per_node:
        layout = [(h, per_node) for h, _ in hosts]
    else:
        layout = list(hosts)
    if np is not None:
        left = np
        capped = []
        for host, count in layout:
            take = min(count, left)
            if take > 0:
                capped.append((host, take))
            left -= take
        if left > 0 and capped:  # oversubscribe round-robin like mpirun --oversubscribe
            host, count = capped[-1]
            capped[-1] = (host, count + left)
        layout = capped
    return [(h, c) for h, c in layout if c > 0]


def _ranks(layout: list[tuple[GroupHost, int]], gpus_per_proc: int, ctx: RunContext) -> list[Rank]:
    ranks: list[Rank] = []
    for host, procs in layout:
        for local in range(procs):
            pid = _pid(ctx.seed, ctx.pod.uid, ctx.pod.restart_count, host.hostname, local)
            for g in range(max(1, gpus_per_proc)):
                ranks.append(Rank(len(ranks), host, pid, local * max(1, gpus_per_proc) + g))
    return ranks


def _members(layout: list[tuple[GroupHost, int]], gpus_per_proc: int) -> list[Member]:
    per_node: dict[str, tuple[NodeFacts, int]] = {}
    for host, procs in layout:
        node, count = per_node.get(host.node.name, (host.node, 0))
        per_node[host.node.name] = (node, count + procs * max(1, gpus_per_proc))
    return [Member(node, count) for node, count in per_node.values()]


def _transport(env: dict[str, str], hosts: list[GroupHost], ctx: RunContext) -> str:
    """IB unless sockets are forced, a node has no usable RDMA device, or a pod lacks the NIC."""
    if env.get("NCCL_IB_DISABLE", "0").lower() in ("1", "true", "yes"):
        return "Socket"
    if env.get("NCCL_NET", "").lower() == "socket":
        return "Socket"
    for host in hosts:
        node = host.node
        if node.arch.nic_count == 0 or ctx.faults.socket_fallback(node.name):
            return "Socket"
        if node.rdma_resources and not host.rdma_requested:
            return "Socket"
    return "IB"


def _hex(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:12]


def _init_info(writer: _Writer, ranks: list[Rank], layout: list[tuple[GroupHost, int]], transport: str,
               path: Path, mnnvl: bool, env: dict[str, str]) -> None:
    """The NCCL_DEBUG=INFO lines of communicator setup (first rank of each host in detail)."""
    nranks = len(ranks)
    nnodes = len({h.node.name for h, _ in layout})
    comm_id = _hex("commId", *[r.host.hostname for r in ranks[:4]], nranks)
    firsts: dict[str, Rank] = {}
    for r in ranks:
        firsts.setdefault(r.host.hostname, r)
    for host_index, (host, procs) in enumerate(layout):
        r = firsts[host.hostname]
        ip = host.node.pod_ip(host_index)
        prefix = f"{host.hostname}:{r.pid}:{r.pid} [{r.device}] NCCL INFO"
        writer.add(f"{prefix} Bootstrap: Using eth0:{ip}<0>", 0.01)
        writer.add(f"{prefix} cudaDriverVersion 12090")
        writer.add(f"{prefix} NCCL version {NCCL_VERSION}")
        writer.add(f"{prefix} NET/Plugin: Could not find: libnccl-net.so.")
        if transport == "IB":
            nics = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(max(1, host.node.arch.nic_count)))
            writer.add(f"{prefix} NET/IB : Using {nics} [RO]; OOB eth0:{ip}<0>", 0.05)
            writer.add(f"{prefix} Initialized NET plugin IB")
            writer.add(f"{prefix} Assigned NET plugin IB to comm")
            writer.add(f"{prefix} Using network IB")
        else:
            if env.get("NCCL_IB_DISABLE", "0") not in ("1", "true"):
                writer.add(f"{prefix} NET/IB : No device found.", 0.05)
                writer.add(f"{prefix} NET/IB : Using [RO]; OOB eth0:{ip}<0>")
                writer.add(f"{prefix} Failed to initialize NET plugin IB")
            writer.add(f"{prefix} NET/Socket : Using [0]eth0:{ip}<0>")
            writer.add(f"{prefix} Initialized NET plugin Socket")
            writer.add(f"{prefix} Assigned NET plugin Socket to comm")
            writer.add(f"{prefix} Using network Socket")
        if "NCCL_MNNVL_ENABLE" in env:
            writer.add(f"{prefix} NCCL_MNNVL_ENABLE set by environment to {env['NCCL_MNNVL_ENABLE']}.")
    detailed = ranks if nranks <= 64 else list(firsts.values())
    for r in detailed:
        prefix = f"{r.host.hostname}:{r.pid}:{r.pid} [{r.device}] NCCL INFO"
        local_ranks = sum(1 for x in ranks if x.host.hostname == r.host.hostname)
        local_rank = [x.rank for x in ranks if x.host.hostname == r.host.hostname].index(r.rank)
        writer.add(
            f"{prefix} comm 0x{_hex(r.rank, 'comm')} rank {r.rank} nRanks {nranks} nNodes {nnodes} "
            f"localRanks {local_ranks} localRank {local_rank} MNNVL {1 if path.medium == 'MNNVL' else 0}",
            0.002,
        )
    first = ranks[0]
    prefix0 = f"{first.host.hostname}:{first.pid}:{first.pid} [{first.device}] NCCL INFO"
    order = " ".join(str(r.rank) for r in ranks[:64])
    for channel in range(2):
        writer.add(f"{prefix0} Channel {channel:02d}/02 : {order}")
    via = {"NVLink": "P2P/CUMEM/read", "MNNVL": "P2P/MNNVL", "loopback": f"NET/{transport}/0"}.get(
        path.medium, f"NET/{transport}/0"
    )
    for r in detailed:
        nxt = ranks[(r.rank + 1) % nranks]
        hop = via if nxt.host.node.name != r.host.node.name or path.medium != "IB" else "P2P/CUMEM/read"
        if path.medium == "IB" and nxt.host.node.name != r.host.node.name:
            hop = f"NET/{transport}/{r.device % max(1, r.host.node.arch.nic_count)}"
        prefix = f"{r.host.hostname}:{r.pid}:{r.pid} [{r.device}] NCCL INFO"
        writer.add(f"{prefix} Channel 00/0 : {r.rank}[{r.device}] -> {nxt.rank}[{nxt.device}] via {hop}", 0.001)
    for r in detailed:
        prefix = f"{r.host.hostname}:{r.pid}:{r.pid} [{r.device}] NCCL INFO"
        bus = r.host.node.arch.pci_buses[r.device % len(r.host.node.arch.pci_buses)]
        writer.add(f"{prefix} Connected all rings, use ring PXN 0 GDR {1 if transport == 'IB' else 0}", 0.001)
        writer.add(
            f"{prefix} ncclCommInitRankConfig comm 0x{_hex(r.rank, 'comm')} rank {r.rank} nranks {nranks} "
            f"cudaDev {r.device} nvmlDev {r.device} busId {bus}000 commId 0x{comm_id} - Init COMPLETE"
        )


def _failure(ctx: RunContext, layout: list[tuple[GroupHost, int]], total: float, transport: str,
             gpus_per_proc: int = 1):
    """The earliest fault that kills this run: (time, lines, exit code, effect) or None."""
    rng = random.Random(ctx.run_seed("nccl-fail"))
    events = []
    for index, (host, procs) in enumerate(layout):
        node = host.node
        off_bus = ctx.faults.gpu_off_bus(node.name)
        if off_bus is not None and node.name in ctx.off_bus and off_bus.gpu < procs * max(1, gpus_per_proc):
            # the GPU is already gone: the rank that drives it cannot even start
            pid = _pid(ctx.seed, ctx.pod.uid, ctx.pod.restart_count, host.hostname, off_bus.gpu)
            lines = [
                f"{host.hostname}: Test CUDA failure common.cu:892 'unknown error'",
                f" .. {host.hostname} pid {pid}: Test failure common.cu:1019",
            ]
            events.append((0.0, lines, 2, None))
            continue
        if off_bus is not None and node.name not in ctx.off_bus:
            at = off_bus.at_fraction * total
            pid = _pid(ctx.seed, ctx.pod.uid, ctx.pod.restart_count, host.hostname, 0)
            lines = [
                f"{host.hostname}:{pid}:{pid + 17} [{off_bus.gpu}] NCCL WARN Cuda failure 999 'unknown error'",
                f"{host.hostname}:{pid}:{pid + 17} [{off_bus.gpu}] NCCL INFO enqueue.cc:1562 -> 1",
                f"{host.hostname}: Test NCCL failure common.cu:1130 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '",
                f" .. {host.hostname} pid {pid}: Test failure common.cu:1019",
            ]
            events.append((at, lines, 2, Effect("gpu-off-bus", node=node.name, gpu=off_bus.gpu)))
        probability = ctx.faults.flaky_probability(node.name)
        if probability > 0 and rng.random() < probability:
            at = rng.uniform(0.1, 0.9) * total
            pid = _pid(ctx.seed, ctx.pod.uid, ctx.pod.restart_count, host.hostname, 0)
            peer = layout[(index + 1) % len(layout)][0]
            peer_ip = peer.node.pod_ip(index + 1)
            if transport == "IB":
                cause = (f"NET/IB : Got completion from peer {peer_ip}<41526> with status=12 opcode=0 len=0 "
                         f"vendor err 129 (Recv) localGid ::ffff:{node.pod_ip(index)} hca mlx5_3")
            else:
                cause = f"NET/Socket : socket progress error with peer {peer_ip}<41526>"
            lines = [
                f"{host.hostname}:{pid}:{pid + 23} [0] transport/net.cc:1306 NCCL WARN {cause}",
                f"{host.hostname}:{pid}:{pid + 23} [0] NCCL INFO transport/net.cc:1306 -> 6",
                f"{host.hostname}: Test NCCL failure common.cu:1130 'remote process exited or there was a network error / {cause}'",
                f" .. {host.hostname} pid {pid}: Test failure common.cu:1019",
            ]
            events.append((at, lines, 3, None))
    if not events:
        return None
    return min(events, key=lambda e: e[0])


def _mpi_abort(writer: _Writer, ranks: list[Rank], code: int) -> None:
    bar = "-" * 74
    writer.add(bar, 0.1)
    writer.add("Primary job  terminated normally, but 1 process returned")
    writer.add("a non-zero exit code. Per user-direction, the job has been aborted.")
    writer.add(bar)
    writer.add(bar)
    writer.add("mpirun detected that one or more processes exited with non-zero status, thus causing")
    writer.add("the job to be terminated. The first process to do so was:")
    writer.add("")
    writer.add(f"  Process name: [[{ranks[0].pid * 7 % 65000},1],{len(ranks) - 1}]")
    writer.add(f"  Exit code:    {code}")
    writer.add(bar)


def mpi_host_names(segments: list[Segment], read_file) -> list[str]:
    """Host names an MPI launch will ssh to (from -H, a hostfile or the default hostfile)."""
    found = find(segments)
    if not found:
        return []
    segment, index = found
    argv = segment.argv
    starts = [i for i, t in enumerate(argv[:index]) if os.path.basename(t) in MPI_LAUNCHERS]
    if not starts:
        return []
    mpi = parse_mpirun(argv[starts[0] + 1:index], dict(segment.env))
    if mpi.hosts:
        return [h for h, _ in mpi.hosts]
    if mpi.hostfile:
        text = read_file(mpi.hostfile)
        if text is not None:
            return [h for h, _ in parse_hostfile(text)]
    return []
