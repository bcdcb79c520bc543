"""A model of the reference system's diagnose algorithm, for comparison only.

Written from the facts in shared/reference (nvcre-measure-diagnose-cli.md section
5.3-5.4, peers-and-limits.md section 1): screening per clique (or chunks of
ceil(sqrt(n)) without topology), one inter-domain round over a healthy
representative per passing screen group, halving of failed groups down to
minGroupSize, cross-boundary probes when both halves of a failed group pass,
and a final confirmation round that pairs each suspect with a healthy reference.

MNNVL: when the job template enables multi-node NVLink (the default on GB200 and
GB300), the reference re-screens the domains with NCCL_MNNVL_ENABLE=0 before the
inter-domain round (stage intra-screening-no-nvl; a domain that passed with NVLink
and fails without is a fabric problem, so passed domains are re-run too, which is
why its ADR counts 3 rounds for an all-healthy cluster). ``mnnvl=False`` (the
benchmark's yardstick, the cheaper one) skips that stage as the reference does when
MNNVL is off; ``mnnvl=True`` models it. The simulated fleet has no NVLink fabric to
switch off, so a no-NVL screen fails exactly when a screen would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class BaselineResult:
    bad_nodes: set[str]
    infra_faults: list[tuple[list[str], list[str]]]
    rounds: int = 0
    tests: int = 0
    node_rounds: int = 0
    node_rounds_after_first: int = 0
    first_fail_round: int | None = None
    cross_pairs: int = 0
    stages: list[str] = field(default_factory=list)


def run_baseline(sc, fleet, min_group_size: int = 2, mnnvl: bool = False) -> BaselineResult:
    """Diagnose scenario ``sc`` on ``fleet`` (which runs groups) the reference's way."""
    out = BaselineResult(set(), [])
    nodes = sorted(sc.nodes)

    def run_round(groups: list[list[str]], tags: list[str]) -> list[bool]:
        out.rounds += 1
        res = []
        for g, tag in zip(groups, tags):
            r = fleet.run(g)
            out.tests += 1
            out.node_rounds += len(g)
            if out.rounds > 1:
                out.node_rounds_after_first += len(g)
            if not r.passed and out.first_fail_round is None and tag in ("screen", "no-nvl", "inter"):
                out.first_fail_round = out.rounds
            res.append(r.passed)
        return res

    # Stage 1a: intra-domain screening.
    if any(sc.topology.get(n) for n in nodes):
        domains: dict[str, list[str]] = {}
        for n in nodes:
            domains.setdefault(sc.topology.get(n) or "unknown", []).append(n)
        screen = [domains[d] for d in sorted(domains)]
    else:
        k = max(math.ceil(math.sqrt(len(nodes))), 2)
        screen = [nodes[i:i + k] for i in range(0, len(nodes), k)]
    passed = run_round(screen, ["screen"] * len(screen))
    if mnnvl:  # Stage 1a': every domain once more without NVLink; failing either way = failed
        again = run_round(screen, ["no-nvl"] * len(screen))
        passed = [a and b for a, b in zip(passed, again)]
    healthy: set[str] = set()
    failed: list[list[str]] = []
    for g, ok in zip(screen, passed):
        if ok:
            healthy.update(g)
        else:
            failed.append(g)

    # Stage 1b: inter-domain screening over one representative per healthy group.
    reps = [g[0] for g, ok in zip(screen, passed) if ok]
    if len(reps) >= 2:
        (ok,) = run_round([reps], ["inter"])
        if not ok:
            failed.append(reps)

    # Stage 2: bisection with cross-boundary probes on both-halves-pass.
    suspects: list[str] = []
    probes: list[tuple[list[str], list[str], int]] = []
    while failed or probes:
        groups: list[list[str]] = []
        tags: list[str] = []
        siblings: list[tuple[int, int]] = []
        for g in failed:
            g = sorted(g)
            if len(g) <= max(min_group_size, 1):
                suspects.extend(g)
                continue
            mid = len(g) // 2
            siblings.append((len(groups), len(groups) + 1))
            groups.extend([g[:mid], g[mid:]])
            tags.extend(["bisect", "bisect"])
        probe_slots = []
        for a, b, depth in probes:
            ha, hb = max(len(a) // 2, 1), max(len(b) // 2, 1)
            mix0 = a[:ha] + b[:hb]
            mix1 = a[ha:] + b[hb:]
            i0 = len(groups)
            groups.append(mix0)
            tags.append("cross")
            i1 = None
            if len(mix1) >= 2:
                i1 = len(groups)
                groups.append(mix1)
                tags.append("cross")
            probe_slots.append((a, b, depth, ha, hb, i0, i1))
        if not groups:
            break
        res = run_round(groups, tags)
        failed = []
        for i0, i1 in siblings:
            a, b = groups[i0], groups[i1]
            if res[i0]:
                healthy.update(a)
            else:
                failed.append(a)
            if res[i1]:
                healthy.update(b)
            else:
                failed.append(b)
            if res[i0] and res[i1]:  # both halves pass: an infrastructure fault candidate
                healthy.difference_update(a + b)
        new_probes = []
        for a, b, depth, ha, hb, i0, i1 in probe_slots:
            f0 = not res[i0]
            f1 = i1 is not None and not res[i1]
            if not f0 and not f1:
                healthy.update(a + b)  # transient
                continue
            if f0 and f1:
                out.infra_faults.append((a, b))
                continue
            na, nb = (a[:ha], b[:hb]) if f0 else (a[ha:], b[hb:])
            if depth + 1 > 4 or (len(na) <= 2 and len(nb) <= 2):
                out.infra_faults.append((na, nb))
            else:
                new_probes.append((na, nb, depth + 1))
        probes = new_probes + list(_fresh_probes(siblings, groups, res))

    # Stage 3: confirmation against healthy references.
    suspects = sorted(set(suspects) - out.bad_nodes)
    if suspects:
        refs = sorted(healthy - set(suspects))
        if not refs:
            out.bad_nodes.update(suspects)
        else:
            groups = [[s, refs[i % len(refs)]] for i, s in enumerate(suspects)]
            res = run_round(groups, ["confirm"] * len(groups))
            for s, ok in zip(suspects, res):
                if not ok:
                    out.bad_nodes.add(s)
    return out


def _fresh_probes(siblings, groups, res):
    for i0, i1 in siblings:
        if res[i0] and res[i1]:
            yield (groups[i0], groups[i1], 1)
