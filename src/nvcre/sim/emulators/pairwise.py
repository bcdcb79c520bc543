"""The per-pair bandwidth check (``nvcre.workloads.pairwise``), as its script would run it.

The script prints its banner with the hostfile and the per-pair command; this emulator
takes both from that line and runs what the script runs: for every round-robin step
(``FabricModel.round_robin``, the script's circle method) each pair's command with
``-H a:slots,b:slots`` after mpirun, through the nccl-tests emulator. So a pair's
bandwidth follows the same fabric model and faults as any two-node group (a degraded
NIC slows every pair with its node, a bad link only its own pair, a degraded uplink
the pairs that leave the rack) and each pair's run draws its own flaky-node failure
(an intermittent node fails about its probability's share of its pairs). The output
is the script's: one line per pair, step by step, then the slowest pair's output.
"""

from __future__ import annotations

import dataclasses
import os

from nvcre.sim.emulators import nccl_tests
from nvcre.sim.emulators.base import Line, Outcome, RunContext
from nvcre.sim.emulators.shell import Segment
from nvcre.sim.fabric import FabricModel
from nvcre.workloads.pairwise import BANNER, PAIR_PREFIX

STEP_OVERHEAD_S = 2.0  # mpirun start-up per step (ssh, NCCL init), simulated seconds


def find(segments: list[Segment]) -> Segment | None:
    """The banner line of the check: ``echo BANNER <hostfile> <command...>``."""
    for segment in segments:
        if segment.program == "echo" and len(segment.argv) > 3 and segment.argv[1] == BANNER:
            return segment
    return None


def host_names(segments: list[Segment], read_file) -> list[str]:
    """The hosts the check will reach (its hostfile's), so the launcher waits for them."""
    found = find(segments)
    if found is None:
        return []
    text = read_file(found.argv[2])
    return [h for h, _ in nccl_tests.parse_hostfile(text)] if text else []


def _peak(outcome: Outcome) -> float | None:
    """The script's awk: the highest busbw of any data row (out-of-place or in-place)."""
    best = 0.0
    for line in outcome.lines:
        tokens = line.text.split()
        if len(tokens) >= 12 and tokens[0].isdigit() and tokens[1].isdigit():
            for index in (7, 11):
                try:
                    best = max(best, float(tokens[index]))
                except ValueError:
                    pass
    return best if best > 0 else None


def _pair_argv(command: list[str], a: str, b: str, slots: int) -> list[str]:
    out: list[str] = []
    for token in command:
        out.append(token)
        if os.path.basename(token) in ("mpirun", "mpiexec"):
            out += ["-H", f"{a}:{slots},{b}:{slots}"]
    return out


def emulate(ctx: RunContext, banner: Segment) -> Outcome:
    hostfile, command = banner.argv[2], list(banner.argv[3:])
    lines = [Line(0.0, " ".join(banner.argv[1:]))]
    text = ctx.read_file(hostfile)
    if text is None:
        lines.append(Line(0.1, f"awk: cannot open \"{hostfile}\" (No such file or directory)"))
        return Outcome("pairwise", lines, exit_code=1, duration=0.2)
    hosts = nccl_tests.parse_hostfile(text)
    slots = next((s for _, s in hosts if s), 1)
    t, failed, slowest, low = 0.0, 0, None, None
    for step in FabricModel.round_robin([h for h, _ in hosts]):
        longest, done = 0.0, []
        for a, b in step:
            argv = _pair_argv(command, a, b, slots)
            found = nccl_tests.find([Segment(argv, banner.env)])
            if found is None:
                lines.append(Line(t, f"/bin/bash: {command[0] if command else ''}: command not found"))
                return Outcome("pairwise", lines, exit_code=127, duration=t + 0.1)
            pair_ctx = dataclasses.replace(ctx, seed=f"{ctx.seed}/pair/{a}/{b}")
            outcome = nccl_tests.emulate(pair_ctx, *found)
            longest = max(longest, outcome.duration or 0.0)
            figure = _peak(outcome) if outcome.exit_code == 0 else None
            if outcome.exit_code != 0:
                failed += 1
            elif figure is not None and (low is None or figure < low):
                low, slowest = figure, outcome
            shown = f"{figure:g}" if figure is not None else "-"
            done.append(f"{PAIR_PREFIX}{a} {b} busbw={shown} rc={outcome.exit_code}")
        t += longest + STEP_OVERHEAD_S  # the script prints a step's lines when all its pairs ended
        lines.extend(Line(t, text) for text in done)
    lines.append(Line(t, f"# nvcre-pairwise: {len(hosts)} hosts, {failed} failed pairs; "
                         f"the slowest pair ({f'{low:g}' if low is not None else 'none'}) follows"))
    if slowest is not None:
        lines.extend(Line(t + 0.01, line.text) for line in slowest.lines if not line.silent)
    names = tuple(r.node.name for r in (ctx.resolve_host(h) for h, _ in hosts) if r is not None)
    return Outcome("pairwise", lines, exit_code=1 if failed else 0, duration=t + 0.2, hosts=names)
