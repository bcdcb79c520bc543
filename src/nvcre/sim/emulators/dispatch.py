"""Pick the emulator for a container from its real command, arguments and environment.

Rules, in order (the first that matches wins; shell wrappers, ``-c`` scripts and
mounted script files are looked through, see ``shell.py``):

0. the per-pair bandwidth check (its banner line, ``nvcre.workloads.pairwise``) ->
   pairwise: every pair's nccl-tests run, step by step;
1. an nccl-tests binary (``all_reduce_perf[_mpi]``, ``all_gather_perf``,
   ``alltoall_perf``, ``sendrecv_perf``, ``reduce_scatter_perf``, ...) -> nccl-tests,
   as an MPI launch when ``mpirun``/``mpiexec`` comes before it;
2. ``dcgmi diag`` -> dcgmi;
3. ``torchrun`` (or ``python -m torch.distributed.run``) running Megatron
   (``pretrain_gpt.py`` and friends) -> Megatron;
4. ``sshd`` -> an MPI worker: stays up until the launcher that uses it finishes;
5. anything else -> a generic program: ``echo`` prints, ``sleep`` takes its time,
   ``exit N``/``false`` set the exit code; otherwise it exits 0 (the kubelet keeps a
   successful one running when the pod's restartPolicy is Always: a server).
"""

from __future__ import annotations

import math
import re

from nvcre.sim.emulators import dcgmi, megatron, nccl_tests, pairwise
from nvcre.sim.emulators.base import Line, Outcome, RunContext
from nvcre.sim.emulators.shell import Segment, segments

GENERIC_MIN_S = 0.5


def classify(ctx: RunContext) -> str:
    """Name of the emulator that would run this container."""
    segs = segments(ctx.argv, ctx.env, ctx.read_file)
    if pairwise.find(segs):
        return "pairwise"
    if nccl_tests.find(segs):
        return "nccl-tests"
    if dcgmi.find(segs):
        return "dcgmi"
    if megatron.find(segs):
        return "megatron"
    if _sshd(segs):
        return "sshd"
    return "generic"


def emulate(ctx: RunContext) -> Outcome:
    """Run the container's program through its emulator."""
    segs = segments(ctx.argv, ctx.env, ctx.read_file)
    banner = pairwise.find(segs)
    if banner:
        return pairwise.emulate(ctx, banner)
    found = nccl_tests.find(segs)
    if found:
        return nccl_tests.emulate(ctx, *found)
    found = dcgmi.find(segs)
    if found:
        return dcgmi.emulate(ctx, *found)
    found = megatron.find(segs)
    if found:
        return megatron.emulate(ctx, *found)
    if _sshd(segs):
        return Outcome(
            "sshd",
            [Line(0.2, "Server listening on 0.0.0.0 port 22."), Line(0.2, "Server listening on :: port 22.")],
            exit_code=0,
            duration=None,
        )
    return generic(segs)


def _sshd(segs: list[Segment]) -> bool:
    return any(s.program == "sshd" for s in segs)


_DURATION = re.compile(r"^([0-9]*\.?[0-9]+)([smhd]?)$")


def _seconds(text: str) -> float | None:
    if text in ("inf", "infinity"):
        return math.inf
    match = _DURATION.match(text)
    if not match:
        return None
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def generic(segs: list[Segment]) -> Outcome:
    """Any other program: echo prints, sleep waits, exit/false fail; else exit 0."""
    lines: list[Line] = []
    t = 0.0
    code = 0
    for segment in segs:
        program, args = segment.program, segment.argv[1:]
        if program == "echo":
            words = [a for a in args if a not in ("-n", "-e", "-E")]
            lines.append(Line(t, " ".join(words)))
        elif program == "sleep":
            total = sum(s for s in (_seconds(a) for a in args) if s is not None)
            if math.isinf(total):
                return Outcome("generic", lines, exit_code=0, duration=None)
            t += total
        elif program == "exit":
            code = int(args[0]) if args and args[0].lstrip("-").isdigit() else code
            return Outcome("generic", lines, exit_code=code % 256, duration=max(t, GENERIC_MIN_S))
        elif program == "false":
            code = 1
        elif program == "true":
            code = 0
        else:
            code = 0
    return Outcome("generic", lines, exit_code=code, duration=max(t, GENERIC_MIN_S))
