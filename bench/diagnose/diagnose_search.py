"""Random search for healthy nodes named bad at p = 0 in crowded multi-fault scenarios.

Up to three bad nodes, two links, an uplink and an intermittent node at once, on odd and
uneven racks (or tiny ones), MNNVL on and off, every policy option, the state through JSON
before every round. Prints every failing case (scenario and policy, enough to turn it into a
regression in tests/unit/planning/test_diagnose_found_cases.py) and a count. Seeded: the
same seed gives the same cases; the CPU budget decides how many.

    .venv/bin/python bench/diagnose/diagnose_search.py --seed 11 --cpu-seconds 90
"""

from __future__ import annotations

import argparse
import random
import time

from nvcre.planning.diagnose import DiagnosePolicy
from nvcre.planning.diagnose_sim import Scenario, observably_bad, run_planner


def case(rng: random.Random, tiny: bool) -> tuple[Scenario, DiagnosePolicy]:
    """One random scenario and policy (tiny: at most three racks of one to three nodes)."""
    if tiny:
        sizes = [rng.randint(1, 3) for _ in range(rng.randint(1, 3))]
        shape = "tiny"
    else:
        shape = rng.choice(["uneven", "one-per-rack", "one-rack", "nolabels", "even"])
        sizes = {"uneven": lambda: [rng.randint(1, 11) for _ in range(rng.randint(1, 6))],
                 "one-per-rack": lambda: [1] * rng.randint(2, 12), "one-rack": lambda: [rng.randint(2, 24)],
                 "even": lambda: [rng.randint(2, 8)] * rng.randint(2, 5),
                 "nolabels": lambda: [rng.randint(2, 40)]}[shape]()
    if sum(sizes) < 2:
        sizes.append(1)
    names, topo = [], {}
    for r, k in enumerate(sizes):
        for _ in range(k):
            name = f"gpu-node-{len(names):03d}"
            names.append(name)
            if shape != "nolabels":
                topo[name] = f"rack-{r:02d}"
    factor = lambda: rng.uniform(0.3, 0.85)  # noqa: E731
    sc = Scenario(names, topo, flip=0.0, seed=rng.randint(0, 10000), mnnvl=rng.random() < 0.5 and bool(topo))
    sc.bad_nodes = {x: factor() for x in rng.sample(names, rng.randint(0, min(3, len(names))))}
    if len(names) >= 2:
        for _ in range(rng.randint(0, 2)):
            a, b = rng.sample(names, 2)
            sc.bad_links[frozenset((a, b))] = factor()
    racks = sorted(set(topo.values()))
    if racks and (tiny or rng.randint(0, 4) == 0) and rng.random() < 0.7:
        sc.bad_racks = {rng.choice(racks): factor()}
    if (tiny and rng.random() < 0.7) or rng.randint(0, 3) == 0:
        sc.intermittent = {rng.choice(names): rng.uniform(0.2, 0.8)}
    if tiny and rng.random() < 0.5:
        sc.bad_nodes, sc.bad_links = {}, {}
    policy = DiagnosePolicy(
        threshold=sc.threshold,
        min_group_size=1 if tiny and rng.random() < 0.7 else rng.choice([1, 2, 2, 3]),
        max_concurrent=rng.choice([0, 0, 1, 2, 3, 7]), max_screen_size=rng.choice([2, 2, 3, 5, 32]),
        cross_check=rng.choice(["full", "representatives", "none"]), cross_check_after_faults=rng.random() < 0.5,
        max_rounds=rng.choice([1, 2, 3, 4, 5, 7, 9, 13, 21, 60]), marginal_band=rng.choice([0.0, 0.03, 0.1]),
        link_check=rng.choice(["pairwise", "pairwise", "search"]))
    return sc, policy


def problem(sc: Scenario, policy: DiagnosePolicy) -> str | None:
    """What is wrong with the planner's run of ``sc`` (None: nothing)."""
    try:
        stats = run_planner(sc, policy, roundtrip=True)
    except Exception as exc:  # noqa: BLE001 - a crash is a finding
        return f"{type(exc).__name__}: {exc}"
    v = stats.verdict
    if not stats.disjoint or stats.rounds > policy.max_rounds:
        return "rounds not node-disjoint or over maxRounds"
    alternative = {b["name"] for b in v.bad_nodes if b.get("alternative", "").startswith("uplink of")}
    wrong = sorted(b["name"] for b in v.bad_nodes if not observably_bad(sc, b["name"], policy.min_group_size)
                   and not (b["name"] in alternative and sc.bad_racks))
    return f"healthy {wrong} named bad at p=0" if wrong else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=11, help="generator seed (default 11)")
    parser.add_argument("--cpu-seconds", type=float, default=60.0, help="CPU time to spend (default 60)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    start, n, found = time.process_time(), 0, 0
    while time.process_time() - start < args.cpu_seconds:
        sc, policy = case(rng, tiny=n % 2 == 0)
        n += 1
        if len(sc.nodes) < 2 and policy.min_group_size > 1:
            continue
        why = problem(sc, policy)
        if why:
            found += 1
            print(f"case {n}: {why}\n  {sc}\n  {policy}", flush=True)
    print(f"{found} finding(s) in {n} cases ({time.process_time() - start:.0f} CPU-s, seed {args.seed})")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
