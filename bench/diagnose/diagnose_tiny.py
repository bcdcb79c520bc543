"""Random tiny clusters of the audit's shape (issue 15) at p = 0: healthy nodes convicted.

At most three racks of one to three nodes, a degraded uplink and/or an intermittent node
(sometimes a slow node or link besides), minGroupSize 1 mostly, every other policy option
drawn at random. The count of healthy nodes named bad must be 0 (``observably_bad``: a node
no runnable group holding it can pass reads as bad, and a conviction that names the uplink
of a degraded rack as its alternative is allowed).
"""

from __future__ import annotations

import random

from nvcre.planning.diagnose import DiagnosePolicy
from nvcre.planning.diagnose_sim import Scenario, observably_bad, run_planner


def tiny_case(seed: int) -> tuple[Scenario, DiagnosePolicy]:
    rng = random.Random(f"tiny:{seed}")
    sizes = [rng.randint(1, 3) for _ in range(rng.randint(1, 3))]
    if sum(sizes) < 2:
        sizes.append(1)
    names, topo = [], {}
    for r, k in enumerate(sizes):
        for _ in range(k):
            name = f"gpu-node-{len(names):03d}"
            names.append(name)
            topo[name] = f"rack-{r:02d}"
    sc = Scenario(names, topo, flip=0.0, seed=seed, mnnvl=rng.random() < 0.5)
    if rng.random() < 0.7:
        sc.bad_racks = {rng.choice(sorted(set(topo.values()))): rng.uniform(0.3, 0.85)}
    if rng.random() < 0.75:
        sc.intermittent = {rng.choice(names): rng.uniform(0.2, 0.8)}
    if rng.random() < 0.3:
        sc.bad_nodes = {rng.choice(names): rng.uniform(0.3, 0.85)}
    if rng.random() < 0.3:
        sc.bad_links = {frozenset(rng.sample(names, 2)): rng.uniform(0.3, 0.85)}
    policy = DiagnosePolicy(
        threshold=sc.threshold, min_group_size=1 if rng.random() < 0.7 else rng.choice([2, 3]),
        max_concurrent=rng.choice([0, 0, 1, 2, 3]), max_screen_size=rng.choice([2, 2, 3, 5]),
        cross_check=rng.choice(["full", "full", "representatives", "none"]),
        cross_check_after_faults=rng.random() < 0.5, max_rounds=rng.choice([3, 5, 9, 21, 60]),
        marginal_band=rng.choice([0.0, 0.03]), link_check=rng.choice(["pairwise", "pairwise", "search"]))
    return sc, policy


def healthy_convictions(seed: int) -> int:
    """Healthy nodes named bad in tiny case ``seed`` (0 when the planner is right)."""
    sc, policy = tiny_case(seed)
    if len(sc.nodes) < 2 and policy.min_group_size > 1:
        return 0
    v = run_planner(sc, policy, roundtrip=True).verdict
    alternative = {b["name"] for b in v.bad_nodes if b.get("alternative", "").startswith("uplink of")}
    return sum(1 for b in v.bad_nodes if not observably_bad(sc, b["name"], policy.min_group_size)
               and not (b["name"] in alternative and sc.bad_racks))
