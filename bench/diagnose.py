"""Benchmark: the diagnose planner against a model of the reference algorithm.

One run prints, per scenario class (cluster size x fault kind x noise), our
planner beside the baseline beside the counting lower bound ceil(log2 C(n, d)):
tests, rounds, node-rounds (GPU time), precision and recall at single-node
granularity, links and racks named; then the planner's time per round and one
PASS/FAIL line per target of issue 5. Seeded: the same run prints the same table.

    .venv/bin/python bench/diagnose.py            # full run (several times the quick run)
    .venv/bin/python bench/diagnose.py --help     # the options
    .venv/bin/python bench/diagnose.py --quick    # fewer seeds (about 3 min on 2 cores)
    # both end with random tiny clusters at p=0 (diagnose/diagnose_tiny.py): healthy convictions, must be 0
    .venv/bin/python bench/diagnose.py --quick --only pair2,intermittent   # classes whose kind or
        # variant is listed (iterating; the target lines then cover only those classes)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "diagnose"))

from diagnose_baseline import run_baseline  # noqa: E402
from diagnose_tiny import healthy_convictions  # noqa: E402

from nvcre.planning.diagnose import DiagnosePolicy, next_round, start  # noqa: E402
from nvcre.planning.diagnose_sim import (  # noqa: E402
    EXTRA_KINDS,
    KINDS,
    Fleet,
    RoundTripMismatch,
    make_scenario,
    run_planner,
)

POLICIES = (  # the policy-option classes cycle through these (seed % len)
    lambda t: DiagnosePolicy(threshold=t, max_concurrent=3),
    lambda t: DiagnosePolicy(threshold=t, min_group_size=1),
    lambda t: DiagnosePolicy(threshold=t, max_screen_size=32),
    lambda t: DiagnosePolicy(threshold=t, link_check="search"),
    lambda t: DiagnosePolicy(threshold=t, cross_check="representatives", cross_check_after_faults=True),
    lambda t: DiagnosePolicy(threshold=t, max_rounds=4),
    lambda t: DiagnosePolicy(threshold=t, cross_check="none", max_concurrent=1),
)

SIZES = (16, 64, 232, 512, 4096)
NOISE = (0.0, 0.01, 0.05)
SEEDS = {16: 150, 64: 120, 232: 80, 512: 40, 4096: 8}
QUICK = {16: 30, 64: 30, 232: 20, 512: 10, 4096: 3}
INTERMITTENT_SHARE = 0.9  # reported Intermittent in runs where its fault showed (docs/design/050)
TINY_CASES = 4000  # random tiny clusters (diagnose/diagnose_tiny.py); --quick runs a quarter


def one(args):
    """Run one scenario with both algorithms; return plain numbers."""
    n, kind, flip, seed, cross = args
    sc = make_scenario(n, kind, seed, flip, rack_size=0 if cross == "nolabels" else -1 if cross == "uneven" else None)
    truth = set(sc.bad_nodes)
    if cross == "after":
        policy = DiagnosePolicy(threshold=sc.threshold, cross_check_after_faults=True)
    elif cross == "policy":
        policy = POLICIES[seed % len(POLICIES)](sc.threshold)
    else:
        policy = DiagnosePolicy(threshold=sc.threshold,
                                cross_check="full" if cross in ("nolabels", "uneven") else cross)
    try:  # every run goes through the state's JSON form before every round, beside the direct state
        st = run_planner(sc, policy, roundtrip=True)
    except RoundTripMismatch:
        return (n, kind, flip, cross), len(truth), {"error": "roundtrip"}, None
    except Exception as exc:  # noqa: BLE001 - a crash is a benchmark result (target: none)
        return (n, kind, flip, cross), len(truth), {"error": f"{type(exc).__name__}: {exc}"[:200]}, None
    v = st.verdict
    named = {b["name"] for b in v.bad_nodes}
    link_obs, rack_obs = observable(sc, policy)
    link = sorted(next(iter(sc.bad_links))) if sc.bad_links else None
    ours = {
        "tests": st.tests, "rounds": st.rounds, "nr": st.node_rounds, "nr_after": st.node_rounds_after_first,
        "after_fail": st.rounds - st.first_fail_round if st.first_fail_round else None,
        "tp": len(named & truth), "fp": len(named - truth), "fn": len(truth - named),
        "link": None if link is None else any({x["a"], x["b"]} == set(link) for x in v.bad_links),
        "rack": None if not sc.bad_racks else any(x["rack"] in sc.bad_racks for x in v.bad_racks),
        "wrong_links": sum(1 for x in v.bad_links if link is None or {x["a"], x["b"]} != set(link)),
        "disjoint": st.disjoint and (not policy.max_concurrent or st.max_groups_per_round <= policy.max_concurrent),
        "budget": st.rounds <= policy.max_rounds,
        "intermittent": None if not sc.intermittent else (
            "named" if {x["name"] for x in v.intermittent} & set(sc.intermittent) else
            "bad" if named & set(sc.intermittent) else
            "unresolved" if {y for u in v.unresolved for y in u["nodes"]} & set(sc.intermittent) else "missed"),
        "partner_fp": len(named - truth - set(sc.intermittent)),
        "shown": st.intermittent_shown > 0,  # the intermittent node's fault failed at least one run
        "link_obs": link_obs, "rack_obs": rack_obs,
        "error": None,
    }
    if kind in ("node", "nodes") and cross == "full":
        ours["screen"] = screen_stats(sc, policy)
    fleet = Fleet(sc)
    b = run_baseline(sc, fleet)
    base = {
        "tests": b.tests, "rounds": b.rounds, "nr": b.node_rounds, "nr_after": b.node_rounds_after_first,
        "after_fail": b.rounds - b.first_fail_round if b.first_fail_round else None,
        "tp": len(b.bad_nodes & truth), "fp": len(b.bad_nodes - truth), "fn": len(truth - b.bad_nodes),
        "link": None if link is None else any(
            (link[0] in a and link[1] in bb) or (link[1] in a and link[0] in bb) for a, bb in b.infra_faults),
        "rack": None if not sc.bad_racks else any(
            any(sc.topology[x] in sc.bad_racks for x in a + bb) for a, bb in b.infra_faults),
    }
    base["found"] = (base["fn"] == 0 and base["fp"] == 0 and base["link"] is not False
                     and base["rack"] is not False)
    bm = run_baseline(sc, Fleet(sc), mnnvl=True)  # the reference with MNNVL on (GB200/GB300 default)
    base["nr_mnnvl"], base["nr_after_mnnvl"] = bm.node_rounds, bm.node_rounds_after_first
    base["racks"] = len(set(sc.topology.values())) if sc.topology else math.ceil(n / max(math.ceil(math.sqrt(n)), 2))
    return (n, kind, flip, cross), len(truth), ours, base


def observable(sc, policy) -> tuple[bool, bool]:
    """Whether the policy runs any test that can show the scenario's link / rack fault at all.

    A bad link shows only in a group holding both ends, a rack uplink only in a group crossing
    its boundary. ``crossCheck: none`` runs no group across screen groups, ``representatives``
    only one node per rack, and with ``crossCheckAfterFaults: false`` a run whose screen found
    a bad node skips the cross check: the link (rack) is then observable only when one screen
    group holds both ends (crosses the boundary). These faults are outside what the policy
    certifies (the verdict says the cross check did not run); the recall target counts the
    observable ones and the raw figure is printed beside it."""
    first = start(sc.nodes, sc.topology, policy)
    screens = [{first.names[i] for i in nodes} for nodes, _t, _c, _s in first.pending]
    in_screen = any(pair <= g for pair in sc.bad_links for g in screens)
    racks_of = [{sc.topology.get(x) for x in g} for g in screens]
    rack_screen = any(len(r) > 1 and bool(set(sc.bad_racks) & r) for r in racks_of)
    skipped = policy.cross_check == "none" or (bool(sc.bad_nodes) and not policy.cross_check_after_faults)
    link = in_screen or not (skipped or policy.cross_check == "representatives")
    rack = rack_screen or not skipped
    return link, rack


def screen_stats(sc, policy) -> tuple[int, int, int]:
    """(screen groups, groups holding a bad node, groups holding two or more) of the planner's round 1."""
    groups = next_round(start(sc.nodes, sc.topology, policy)).groups
    bad = set(sc.bad_nodes)
    hits = [len(bad.intersection(g)) for g in groups]
    return len(groups), sum(1 for h in hits if h), sum(1 for h in hits if h >= 2)


def bound(n: int, kind: str, d_mean: float) -> int:
    if kind == "healthy":
        return 1
    if kind == "node+link":
        return math.ceil(math.log2(n) + math.log2(math.comb(n, 2)))
    if kind.startswith("link"):
        return math.ceil(math.log2(math.comb(n, 2)))
    if kind == "rack":
        return math.ceil(math.log2(max(2, n // 16)))
    d = max(1, round(d_mean))
    return math.ceil(math.log2(math.comb(n, d)))


GOLDEN = (math.sqrt(5) - 1) / 2  # 0.618: the adversary keeps >= 1 - 0.618 = 0.382 of the pairs per round


def link_round_bound(n: int) -> int:
    """Fewest partition rounds that can single out one bad pair among C(n, 2) in the worst case.

    A round is a partition; a bad pair is seen only by the group holding both ends. If
    the largest group holds a share M of the candidate nodes it can catch at most ~M^2
    of the pairs; the adversary answers "that group" or "none", whichever keeps more:
    max(M^2, 1 - M^2) >= 1/2 for one group, and over all partitions the best split still
    keeps max(M^2, 1 - M) >= 0.382 (M = 0.618). So r rounds leave >= C(n,2) * 0.382^r
    candidates, and r >= log C(n,2) / log(1/0.382).
    """
    return math.ceil(math.log(math.comb(n, 2)) / math.log(1 / (1 - GOLDEN)))


def node_floors(cls, fault_node) -> list:
    """Expected floors for the node-fault classes that miss a GPU-time ratio (docs/design/050).

    Per run, from the planner's round 1: G screen groups, f holding a bad node, b holding two.
    Any planner that names nothing on one observation and clears nothing without a pass:
    each failing group's members need one more test (a bad pair: a partner test per end, 4),
    each flipped healthy group one re-run (2 per pair), and with one bad node whose screen
    flipped to a pass (probability p) the all-node check (n) plus finding it (>= n/2 in
    expectation, one small group per round). Our evidence rules add: a confirmation for each
    node of a pair whose ends both failed (4 per such pair), the re-run before partner tests
    in wide rounds (2, and 2 more confirmation in rounds of > 64 groups), the third run of a
    flipped pair whose re-run passed (wide) or partner tests before the re-run (narrow: 4 + 2),
    one more test after a flipped partner test, and a one-round block re-screen (n, not n/2).
    """
    out = []
    print("\nnode-fault classes that miss a ratio, against expected floors (node-rounds after round 1 / reference's):")
    print("    n class   p     ours  floor(any planner)  floor(our evidence rules)")
    above = []
    for k, a, t in fault_node:
        if a <= 0.6 and t <= 1.0:
            continue
        n, kind, p = k[0], k[1], k[2]
        c = cls[k]
        stats = [x["screen"] for x in c["ours"]]
        g, f, b = (mean([x[i] for x in stats]) for i in range(3))
        ref_after = mean([x["nr_after"] for x in c["base"]])
        hidden = p if kind == "node" else 0.0  # with several bad nodes a hidden one is missed by both planners
        universal = 4 * f * (1 - hidden) + p * (g - f) * 2 + hidden * (n + n / 2)
        per_bad = 4 if g <= 8 else 6 if g <= 64 else 8
        per_flip = 4 + 2 if g <= 8 else 2 + 2 * (1 - p)
        rules = ((per_bad * f + 4 * b) * (1 - hidden) + p * (g - f) * per_flip + p * 2 * f * 2
                 + hidden * 2 * n)
        fu, fo = universal / ref_after, rules / ref_after
        if fo > 0.6:
            above.append(k)
        print(f"{n:>5} {kind:<6} {p:.2f}  {a:>5.2f}  {fu:>18.2f}  {fo:>25.2f}")
    print("  (expected values; a class of 8 seeds at 4096 nodes usually holds no run with a hidden bad node, so its\n"
          "   sample mean can sit under the expected floor)")
    p_le1 = [k for k, a, t in fault_node if k[2] <= 0.01]
    miss_le1 = [k for k, a, t in fault_node if k[2] <= 0.01 and (a > 0.6 or t > 1.0)]
    out.append((not miss_le1,
                f"GPU time, node faults, p <= 1%: both ratios met in {len(p_le1) - len(miss_le1)}/{len(p_le1)} classes"
                + (f" (missed: {', '.join(f'n={k[0]} {k[1]} p={k[2]:.2f}' for k in miss_le1)})" if miss_le1 else "")))
    out.append((None,
                "GPU time, node faults that miss: expected floor under our evidence rules above 0.6x at "
                f"{', '.join(f'n={k[0]} {k[1]} p={k[2]:.2f}' for k in above) or 'none'} (see the floors above)"))
    return out


def every_class_argument(cls) -> list:
    """Check, on the measured reference costs, why 'every class' is out of reach (docs/design/050).

    A bad link shows only in a group holding both ends. Take a planner that screens in round 1
    (groups inside racks, as the target presumes: "the screen itself costs every node once"),
    certifies a healthy cluster in 2 rounds (a target) and names a single link wherever it sits
    (a target). Round 2 is one partition that must hold every cross-rack pair; a node's group
    must then contain all nodes of other racks, so round 2 is the all-node group (n).
    (a) Healthy: 2n, against the reference's n + R (MNNVL off) or 2n + R (MNNVL on).
    (b) Links: the all-node group alone is n after round 1 (and fails; naming the link costs
        more), against the reference's after-round-1 cost in that class (it never sees the
        link: R, or n + R with MNNVL on). n > 0.6 (n + R) whenever R < 2n/3.
    (c) Without the screen premise, MNNVL off: without an all-node group every node needs two
        groups (2n), so a planner at or under n + R on a healthy cluster runs the all-node
        group with <= R node-rounds before it. A bad node outside those fails it; every other
        node, seen only in failing tests, needs a passing test, the bad one a second failure:
        >= 2n - R + 1 in the one-bad-node class, above the reference's total there.
    """
    print("\nevery class: why it is out of reach, on the measured reference (p = 0)")
    print("    n    R | healthy total: screen-first 2n  ref off  ref on  ours | link-cross after: >= n"
          "  0.6x ref off  0.6x ref on  ours | no premise: 2n-R+1  ref one-bad-node total (off)")
    links_ok, healthy_off_ok, tot_n = True, True, []
    on_healthy = True
    for n in sorted({k[0] for k in cls}):
        h, nd, lc = (cls.get((n, kind, 0.0, "full")) for kind in ("healthy", "node", "link-cross"))
        if not (h and nd and lc):
            continue
        racks = h["base"][0]["racks"]
        l_off = 0.6 * mean([x["nr_after"] for x in lc["base"]])
        l_on = 0.6 * mean([x["nr_after_mnnvl"] for x in lc["base"]])
        l_ours = mean([x["nr_after"] for x in lc["ours"]])
        node_ref = mean([x["nr"] for x in nd["base"]])
        h_ours, h_off, h_on = (mean([x[key] for x in rows]) for key, rows in
                               (("nr", h["ours"]), ("nr", h["base"]), ("nr_mnnvl", h["base"])))
        links_ok = links_ok and n > max(l_off, l_on)
        healthy_off_ok = healthy_off_ok and 2 * n > h_off
        if 2 * n - racks + 1 > node_ref:
            tot_n.append(n)
        on_healthy = on_healthy and h_ours <= h_on
        print(f"{n:>5} {racks:>4} | {2 * n:>30} {h_off:>8.0f} {h_on:>7.0f} {h_ours:>5.0f} | {n:>22} {l_off:>13.0f}"
              f" {l_on:>12.0f} {l_ours:>5.0f} | {2 * n - racks + 1:>18} {node_ref:>30.0f}")
    print("  (MNNVL on is the reference's default on GB200/GB300: it re-screens every domain without NVLink, so a\n"
          "   healthy cluster costs it 2n + R, and our all-node cross check costs no more than that)")
    sizes = ", ".join(str(n) for n in sorted({k[0] for k in cls}))
    return [
        (None, "every class: out of reach " + (f"at every n ({sizes}) in both MNNVL modes" if links_ok else
                                               "NOT shown at every n: see the table")
               + " for any planner that screens in round 1, certifies a healthy cluster in 2 rounds and names "
               "cross-rack links: round 2 must be the all-node group, so a link class pays >= n after round 1 "
               "(> 0.6x the reference's)" + (", and a healthy cluster 2n (> the reference's n + R with MNNVL off)"
                                             if healthy_off_ok else "")),
        (None, "without the screen premise (MNNVL off): healthy and one-bad-node totals cannot both be <= 1.0 at "
               f"n = {', '.join(map(str, tot_n)) or '-'} (2n-R+1 > the reference's, worst placement)"),
        (on_healthy, "healthy cluster against the reference with MNNVL on (GB200/GB300 default): "
                     "our total <= its total at every n"),
    ]


def economy_line(cls) -> tuple:
    """crossCheck: representatives (the economy mode) against the reference, healthy and rack classes."""
    rows = []
    for k in sorted(cls):
        if k[3] != "representatives" or k[1] not in ("healthy", "rack"):
            continue
        c = cls[k]
        rows.append((k[0], k[1], mean([x["nr"] for x in c["ours"]]) / mean([x["nr"] for x in c["base"]]),
                     mean([float(x["rack"]) for x in c["ours"] if x["rack"] is not None]) if k[1] == "rack" else None))
    healthy = ", ".join(f"n={n} {t:.3f}" for n, kind, t, _ in rows if kind == "healthy")
    racks = ", ".join(f"n={n} {t:.2f}" for n, kind, t, _ in rows if kind == "rack")
    return (None,
            f"crossCheck: representatives (economy mode), total node-rounds / reference's (p = 0): healthy {healthy} "
            f"(the same n + R; above 1 only by re-runs of results within marginalBand of the threshold, which the "
            f"reference takes at face value); rack {racks} (we name the rack, the reference a healthy representative)")


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def pr(tp, fp, fn):
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/diagnose.py",
        description="The diagnose planner beside a model of the reference algorithm and the counting bound: "
                    "per scenario class tests, rounds, node-rounds, precision/recall; then planner time at 4096 "
                    "nodes and one PASS/FAIL line per target (issues 5 and 15). Seeded: the same run prints the "
                    "same table (timings aside).")
    parser.add_argument("--quick", action="store_true",
                        help="fewer seeds per class and a quarter of the tiny random clusters (about 3 minutes "
                             "on 2 cores; the full run is several times longer)")
    parser.add_argument("--only", metavar="KINDS", default=None,
                        help="comma-separated fault kinds or variants to run (e.g. pair2,intermittent or uneven); "
                             f"kinds: {', '.join(KINDS + EXTRA_KINDS)}; variants: full, uneven, policy, nolabels, "
                             "after, representatives. The target lines then cover only those classes")
    return parser.parse_args(argv)


def main() -> int:
    args = parse_args()
    quick = args.quick
    seeds = QUICK if quick else SEEDS
    jobs = [(n, kind, flip, seed, "full") for n in SIZES for kind in KINDS for flip in NOISE
            for seed in range(seeds[n])]
    # the economy mode (representatives instead of the all-node cross check), for comparison
    jobs += [(n, kind, 0.0, seed, "representatives") for n in SIZES for kind in ("healthy", "rack", "link-cross")
             for seed in range(seeds[n])]
    # one bad node plus one link anywhere, default policy and with the cross check after faults
    jobs += [(n, "node+link", flip, seed, cross) for n in (64, 232) for flip in (0.0, 0.01)
             for cross in ("full", "after") for seed in range(seeds[n])]
    # issue 15: uneven racks, policy options, two bad nodes in one pair, intermittent, node + link
    for n in (16, 64, 232, 512, 4096):
        for kind in ("node", "nodes", "rack", "link-cross", "link-intra", "pair2"):
            for flip in NOISE:
                jobs += [(n, kind, flip, seed, "uneven") for seed in range(max(2, seeds[n] // 2))]
    jobs += [(n, kind, flip, seed, "full") for n in (16, 64, 232, 512) for kind in ("pair2", "intermittent")
             for flip in NOISE for seed in range(max(2, seeds[n] // 2))]
    jobs += [(n, "node+link", 0.05, seed, "full") for n in (64, 232) for seed in range(seeds[n] // 2)]
    jobs += [(n, kind, flip, seed, "policy") for n in (16, 64, 232) for kind in ("node", "nodes", "link-cross", "rack",
                                                                              "pair2", "intermittent")
             for flip in (0.0, 0.01) for seed in range(max(7, seeds[n] // 2))]
    # no topology labels: screens of ceil(sqrt(n)) nodes (the reference's chunks too)
    jobs += [(n, kind, flip, seed, "nolabels") for n in (64, 232, 512) for kind in ("node", "nodes", "link-cross")
             for flip in (0.0, 0.01) for seed in range(seeds[n])]
    only = args.only
    if only:
        keep = set(only.split(","))
        jobs = [j for j in jobs if j[1] in keep or j[4] in keep]
    t0 = time.perf_counter()
    with Pool(min(2, os.cpu_count() or 1)) as pool:
        rows = pool.map(one, jobs, chunksize=8)
    wall = time.perf_counter() - t0
    errors = [(key, ours["error"]) for key, _d, ours, _b in rows if ours.get("error")]
    rows = [r for r in rows if not r[2].get("error")]
    cls: dict = defaultdict(lambda: {"d": [], "ours": [], "base": []})
    for key, d, ours, base in rows:
        cls[key]["d"].append(d)
        cls[key]["ours"].append(ours)
        cls[key]["base"].append(base)

    print(f"diagnose benchmark: {len(jobs)} runs in {wall:.1f} s "
          f"({'quick' if quick else 'full'}; seeds per class {dict(seeds)})")
    print("columns per algorithm: tests / rounds (mean, max after first failing screen) / node-rounds "
          "(total, after round 1) / precision / recall; links/racks: share named")
    hdr = (f"{'n':>5} {'class':<10} {'p':>4} {'LB':>3} | {'ours: tests':>11} {'rnd':>4} {'aft':>4} {'NR':>7} "
           f"{'NR>1':>6} {'prec':>5} {'rec':>5} {'lnk':>4} {'rck':>4} | {'ref: tests':>10} {'rnd':>4} {'aft':>4} "
           f"{'NR':>7} {'NR>1':>6} {'prec':>5} {'rec':>5} {'lnk':>4} {'rck':>4} | {'NR>1 x':>6} {'NR x':>5}")
    print(hdr)
    print("-" * len(hdr))
    fmt_share = lambda xs: "  - " if all(x is None for x in xs) else f"{mean([float(x) for x in xs if x is not None]):.2f}"  # noqa: E731

    suite = {"full": defaultdict(lambda: [0, 0, 0]), "base": defaultdict(lambda: [0, 0, 0])}
    gpu_rows = []
    order = KINDS + ("node+link", "pair2", "intermittent")
    for key in sorted(cls, key=lambda k: (k[3] == "nolabels", k[1] == "node+link", k[3] != "full", k[0],
                                          order.index(k[1]), k[2], k[3])):
        n, kind, flip, cross = key
        c = cls[key]
        o, b = c["ours"], c["base"]
        otp, ofp, ofn = (sum(x[k] for x in o) for k in ("tp", "fp", "fn"))
        btp, bfp, bfn = (sum(x[k] for x in b) for k in ("tp", "fp", "fn"))
        op, orc = pr(otp, ofp, ofn)
        bp, brc = pr(btp, bfp, bfn)
        # no bad node in the class: show how many healthy nodes were named instead of a ratio
        fmt_p = (lambda prec, fp: f"{prec:>5.3f}") if otp + ofn else (lambda prec, fp: f"{'fp' + str(fp):>5}")
        if cross == "full" and kind in KINDS:
            bucket = "le1" if flip <= 0.01 else "p5"
            for tgt, vals in ((suite["full"], (otp, ofp, ofn)), (suite["base"], (btp, bfp, bfn))):
                for i in range(3):
                    tgt[bucket][i] += vals[i]
        oaf = [x["after_fail"] for x in o if x["after_fail"] is not None]
        baf = [x["after_fail"] for x in b if x["after_fail"] is not None]
        nr_ratio = mean([x["nr_after"] for x in o]) / max(mean([x["nr_after"] for x in b]), 1e-9)
        tot_ratio = mean([x["nr"] for x in o]) / mean([x["nr"] for x in b])
        if kind in KINDS:
            gpu_rows.append((key, nr_ratio, tot_ratio))
        mark = {"full": "", "representatives": "*", "after": "+", "nolabels": "~", "uneven": "u", "policy": "o"}[cross]
        label = kind if not mark else kind[:6] + mark
        print(f"{n:>5} {label:<10} {flip:>4.2f} {bound(n, kind, mean(c['d'])):>3} | "
              f"{mean([x['tests'] for x in o]):>11.1f} {mean([x['rounds'] for x in o]):>4.1f} "
              f"{(max(oaf) if oaf else 0):>4} {mean([x['nr'] for x in o]):>7.0f} {mean([x['nr_after'] for x in o]):>6.0f} "
              f"{fmt_p(op, ofp)} {orc:>5.3f} {fmt_share([x['link'] for x in o]):>4} {fmt_share([x['rack'] for x in o]):>4} | "
              f"{mean([x['tests'] for x in b]):>10.1f} {mean([x['rounds'] for x in b]):>4.1f} "
              f"{(max(baf) if baf else 0):>4} {mean([x['nr'] for x in b]):>7.0f} {mean([x['nr_after'] for x in b]):>6.0f} "
              f"{fmt_p(bp, bfp)} {brc:>5.3f} {fmt_share([x['link'] for x in b]):>4} {fmt_share([x['rack'] for x in b]):>4} | "
              f"{nr_ratio:>6.2f} {tot_ratio:>5.2f}")
    print("(fpN = N healthy nodes named bad in a class without bad nodes; "
          "* = crossCheck: representatives, the economy mode; + = crossCheckAfterFaults: true; ~ = no topology labels; "
          "u = uneven racks; o = policy options (maxConcurrent 3, minGroupSize 1, maxScreenSize 32, linkCheck search, "
          "representatives + after faults, maxRounds 4, crossCheck none + maxConcurrent 1, by seed); LB = ceil(log2 C(n,d)), for links "
          "ceil(log2 C(n,2)), racks ceil(log2 racks); NR>1 x / NR x = ours / reference node-rounds)")

    # ---- planner time and state size at n = 4096: sequential, CPU time of this process (the
    # machine is shared), a collection before each timed call so the simulator's garbage is not
    # billed to the planner
    import gc
    import json

    from nvcre.planning.diagnose import Round, next_round, record, start

    times: list[float] = []
    worst_size = 0
    for kind in KINDS:
        for seed in range(2 if quick else 4):
            sc = make_scenario(4096, kind, seed, 0.01)
            fleet = Fleet(sc)
            gc.collect()
            t = time.process_time()
            st = start(sc.nodes, sc.topology, DiagnosePolicy(threshold=sc.threshold))
            times.append(time.process_time() - t)
            while True:
                t = time.process_time()
                step = next_round(st)
                dt = time.process_time() - t
                if not isinstance(step, Round):
                    break
                res = [fleet.run(g, tag) for g, tag in zip(step.groups, step.tags)]
                gc.collect()
                t = time.process_time()
                st = record(st, res)
                times.append(dt + time.process_time() - t)
                worst_size = max(worst_size, len(json.dumps(st.to_dict())))
    times.sort()
    big_max = times[-1] * 1000
    print(f"\nplanner CPU time per round at n=4096 ({len(times)} rounds, p=1%): median {times[len(times) // 2] * 1000:.1f} ms, "
          f"p99 {times[int(len(times) * 0.99)] * 1000:.1f} ms, max {big_max:.1f} ms")
    print(f"state size at n=4096 (JSON, Workflow status): at most {worst_size} bytes during a run")

    tiny = tiny_line(TINY_CASES // 4 if quick else TINY_CASES)

    # ---- targets
    if only:  # a subset of the classes: only the issue-15 lines (they skip what is missing)
        return report(issue15_targets(cls, errors, big_max) + [tiny])
    results = []
    p_le1, r_le1 = pr(*suite["full"]["le1"])
    bp1, br1 = pr(*suite["base"]["le1"])
    results.append((p_le1 >= 0.99 and r_le1 >= 0.99,
                    f"precision/recall >= 0.99 over the suite (p <= 1%): ours {p_le1:.4f}/{r_le1:.4f} "
                    f"(reference {bp1:.4f}/{br1:.4f})"))
    p5, r5 = pr(*suite["full"]["p5"])
    print(f"\nfor information, p = 5% classes: precision {p5:.4f} recall {r5:.4f}")

    def max_after(kinds, nmax, nmin=0, flips=(0.0,)):
        vals = [x["after_fail"] for k, c in cls.items() if k[3] == "full" and k[1] in kinds and nmin <= k[0] <= nmax
                and k[2] in flips for x in c["ours"] if x["after_fail"] is not None]
        return max(vals) if vals else 0

    node_kinds = ("node", "nodes", "rack")
    a512, a4096 = max_after(node_kinds, 512), max_after(node_kinds, 4096, 4096)
    results.append((a512 <= 3 and a4096 <= 4,
                    f"rounds after the first failing screen (nodes, racks; p=0): max {a512} for n<=512 (<=3), "
                    f"{a4096} at n=4096 (<=4)"))
    m512 = mean([x["after_fail"] for k, c in cls.items() if k[3] == "full" and k[1] in node_kinds and k[0] <= 512
                 and k[2] == 0.01 for x in c["ours"]])
    print(f"for information, same classes at p=1%: mean {m512:.2f} rounds after the first failing screen (n<=512)")
    link_rows = []
    for n in SIZES:
        ours_max = max_after(("link-intra", "link-cross"), n, n)
        link_rows.append((n, ours_max, link_round_bound(n), math.ceil(math.log2(math.comb(n, 2)) / 1.5)))
    print("\nlinks, rounds after the first failing test (p=0): ours (max) vs the lower bound")
    print("    n  ours  bound(0.382/round)  entropy(1.5 bit/round)")
    for n, o, lb, eb in link_rows:
        print(f"{n:>5} {o:>5} {lb:>19} {eb:>23}")
    print("  (a round is a partition: against the worst placement it keeps >= 38.2% of the C(n,2) candidate "
          "pairs, so no algorithm\n   names a link in fewer rounds than the bound; issue 5's <= 3 / <= 4 rounds "
          "is a node-fault target, see docs/design/050)")
    worst_link = max(o / lb for _, o, lb, _ in link_rows)
    results.append((all(o <= 2 * lb for _, o, lb, _ in link_rows),
                    "rounds after the first failing test (links; p=0) within 2x the information-theoretic bound "
                    "ceil(log C(n,2)/log(1/0.382)): " + ", ".join(f"n={n} {o}/{lb}" for n, o, lb, _ in link_rows)
                    + f" (worst {worst_link:.2f}x)"))
    gpu_full = [(k, a, t) for k, a, t in gpu_rows if k[3] == "full"]
    # fair: only the runs in which the reference found every fault and named no healthy node (a
    # reference that misses the fault stops early and is no cost yardstick)
    fair_rows = {}
    for key, c in cls.items():
        if key[3] != "full" or key[1] not in KINDS:
            continue
        pairs = [(o, b) for o, b in zip(c["ours"], c["base"]) if b["found"]]
        if len(pairs) >= max(3, len(c["ours"]) // 4):
            fair_rows[key] = (mean([o["nr_after"] for o, _ in pairs]) / max(mean([b["nr_after"] for _, b in pairs]), 1e-9),
                              mean([o["nr"] for o, _ in pairs]) / mean([b["nr"] for _, b in pairs]), len(pairs))
    bad_after = [k for k, a, t in gpu_full if a > 0.6 and k[1] not in ("healthy",)]
    bad_total = [k for k, a, t in gpu_full if t > 1.0]
    fault_node = [(k, a, t) for k, a, t in gpu_full if k[1] in ("node", "nodes")]
    results.append((not [k for k, a, t in fault_node if a > 0.6 or t > 1.0],
                    f"GPU time, node faults: node-rounds after round 1 <= 0.6x and total <= 1.0x the reference in "
                    f"{sum(1 for k, a, t in fault_node if a <= 0.6 and t <= 1.0)}/{len(fault_node)} classes "
                    f"(worst after-ratio {max(a for _, a, _ in fault_node):.2f}, worst total {max(t for _, _, t in fault_node):.2f})"))
    fair_node = [(k, v) for k, v in fair_rows.items() if k[1] in ("node", "nodes")]
    results.append((not [k for k, v in fair_node if v[0] > 0.6 or v[1] > 1.0],
                    f"GPU time, node faults, fair (runs where the reference names every bad node and no healthy one): "
                    f"after-ratio <= 0.6 and total <= 1.0 in {sum(1 for _, v in fair_node if v[0] <= 0.6 and v[1] <= 1.0)}"
                    f"/{len(fair_node)} classes (worst after-ratio {max((v[0] for _, v in fair_node), default=0):.2f}, "
                    f"worst total {max((v[1] for _, v in fair_node), default=0):.2f})"))
    results.append((not bad_after and not bad_total,
                    f"GPU time, every class: after-ratio > 0.6 in {len(bad_after)} and total > 1.0 in "
                    f"{len(bad_total)} of {len(gpu_full)} classes (out of reach for any planner that finds "
                    "cross-rack links: see 'every class' below and docs/design/050)"))
    fair_bad = [k for k, v in fair_rows.items() if (v[0] > 0.6 and k[1] != "healthy") or v[1] > 1.0]
    no_ref = sorted({(k[0], k[1]) for k, _, _ in gpu_full if k not in fair_rows})
    results.append((not fair_bad,
                    f"GPU time, every class, fair: {len(fair_rows) - len(fair_bad)}/{len(fair_rows)} classes in which "
                    f"the reference finds the fault meet both ratios; {len(gpu_full) - len(fair_rows)} classes have no fair "
                    f"yardstick (the reference finds the fault in < 1/4 of the runs: "
                    f"{', '.join(sorted({kind for _, kind in no_ref}))})"))
    print("\nnode-fault classes over a GPU-time ratio (raw | fair, runs):")
    for k, a, t in fault_node:
        if a > 0.6 or t > 1.0:
            f = fair_rows.get(k)
            fair_txt = f"{f[0]:.2f} {f[1]:.2f} ({f[2]} runs)" if f else "n/a"
            print(f"  n={k[0]:<5} {k[1]:<6} p={k[2]:.2f}: after {a:.2f} total {t:.2f} | {fair_txt}")
    print("  (p = 5%: a flipped screen pair costs a re-run and a third run, 4 node-rounds, and a bad node whose "
          "screen flipped to a pass\n   is found only through the all-node cross check and a block round, about 2n "
          "node-rounds; the reference skips that check and\n   misses the node instead: see its recall column)")
    results.extend(node_floors(cls, fault_node))
    results.extend(every_class_argument(cls))
    links = [x["link"] for k, c in cls.items() if k[3] == "full" and k[1] in ("link-intra", "link-cross") and k[2] <= 0.01
             for x in c["ours"]]
    blinks = [x["link"] for k, c in cls.items() if k[3] == "full" and k[1] == "link-cross" and k[2] <= 0.01
              for x in c["base"]]
    lr = mean([float(x) for x in links])
    results.append((lr >= 0.99, f"single bad link named as a link (p <= 1%): recall {lr:.4f} "
                                f"(reference names a cross-rack link in {mean([float(x) for x in blinks]):.4f})"))
    healthy = [x["rounds"] for k, c in cls.items() if k[3] == "full" and k[1] == "healthy" and k[2] == 0.0
               for x in c["ours"]]
    results.append((max(healthy) <= 2, f"healthy cluster certified in <= 2 rounds (p=0): max {max(healthy)}"))
    results.append((big_max < 50, f"planning one round at n=4096 < 50 ms: max {big_max:.1f} ms"))
    results.append(economy_line(cls))
    disjoint = all(x["disjoint"] for c in cls.values() for x in c["ours"])
    results.append((disjoint, "every round node-disjoint"))
    results.extend(issue15_targets(cls, errors, big_max))
    results.append(tiny)
    return report(results)


def tiny_line(cases: int) -> tuple:
    """Healthy nodes convicted at p = 0 over random tiny clusters of the audit's shape."""
    t0 = time.perf_counter()
    with Pool(min(2, os.cpu_count() or 1)) as pool:
        wrong = pool.map(healthy_convictions, range(cases), chunksize=32)
    bad = [seed for seed, k in enumerate(wrong) if k]
    print(f"\ntiny clusters (<= 3 racks of 1-3 nodes, uplink + intermittent faults, minGroupSize 1 mostly, p=0): "
          f"{cases} runs in {time.perf_counter() - t0:.1f} s")
    return (not bad, f"issue 15: healthy nodes convicted at p=0 on {cases} random tiny clusters: {sum(wrong)} "
                     f"(must be 0){f' seeds {bad[:8]}' if bad else ''}")


def report(results) -> int:
    print()
    for ok, text in results:
        print(f"{'INFO' if ok is None else 'PASS' if ok else 'FAIL'}  {text}")
    missed = sum(1 for ok, _ in results if ok is False)
    if missed:
        print(f"{missed} target(s) missed", file=sys.stderr)
    return 1 if missed else 0


def issue15_targets(cls, errors, plan_ms) -> list:
    """The targets of issue 15 over every class, the new ones included."""
    out = []
    runs = sum(len(c["ours"]) for c in cls.values()) + len(errors)
    rt = [k for k, e in errors if e == "roundtrip"]
    crash = [(k, e) for k, e in errors if e != "roundtrip"]
    budget = sum(1 for c in cls.values() for x in c["ours"] if not x["budget"])
    out.append((not errors and not budget,
                f"issue 15: {runs} runs, every one also round-tripped through JSON before every round: "
                f"{len(crash)} crashes, {len(rt)} round-trip differences, {budget} over maxRounds"
                + (f" (first: {crash[0][0]} {crash[0][1]})" if crash else "")))
    fault = ("node", "nodes", "pair2", "rack", "link-cross", "link-intra", "node+link")

    def pr_over(pred, every=False):
        tp = fp = fn = 0
        for k, c in cls.items():
            if k[1] in fault and pred(k):
                for x in c["ours"]:
                    tp, fp, fn = tp + x["tp"], fp + x["fp"], fn + x["fn"]
                    for key in ("link", "rack"):
                        if x[key] is not None and (every or x[f"{key}_obs"]):
                            tp, fn = tp + int(x[key]), fn + int(not x[key])
                    fp += x["wrong_links"]
        return pr(tp, fp, fn)

    hidden = sum(1 for k, c in cls.items() if k[1] in fault and k[2] <= 0.01 for x in c["ours"]
                 for key in ("link", "rack") if x[key] is not None and not x[f"{key}_obs"])
    p1, r1 = pr_over(lambda k: k[2] <= 0.01)
    out.append((p1 >= 0.99 and r1 >= 0.99, f"issue 15: precision/recall over node, link and rack faults, every "
                f"topology and policy class, p <= 1% (nodes, links and racks counted alike; faults the policy runs "
                f"a test for): {p1:.4f}/{r1:.4f} (>= 0.99)"))
    pe, re_ = pr_over(lambda k: k[2] <= 0.01, every=True)
    out.append((None, f"issue 15: the same with the {hidden} link/rack faults no test of the policy can show "
                f"(crossCheck none or representatives, or the cross check skipped after a bad node): "
                f"{pe:.4f}/{re_:.4f}"))
    by_variant = ", ".join(f"{v} {'/'.join(f'{x:.3f}' for x in pr_over(lambda k, v=v: k[2] <= 0.01 and k[3] == v))}"
                           for v in ("full", "uneven", "policy", "nolabels", "after"))
    out.append((None, f"issue 15: precision/recall at p <= 1% by variant: {by_variant}"))
    pp, rr = pr_over(lambda k: k[2] == 0.05)
    out.append((pp >= 0.98, f"issue 15: precision at p = 5% over the same classes: {pp:.4f} (>= 0.98; recall {rr:.4f})"))
    p2, r2 = pr_over(lambda k: k[1] == "pair2" and k[2] <= 0.01)
    out.append((p2 >= 0.99 and r2 >= 0.99, f"issue 15: two bad nodes in one screen pair, p <= 1%: {p2:.4f}/{r2:.4f}"))

    def worst_after(kinds, crosses=("full", "uneven")):
        vals = [(x["after_fail"], k) for k, c in cls.items() if k[1] in kinds and k[2] == 0.0 and k[3] in crosses
                for x in c["ours"] if x["after_fail"] is not None]
        return max(vals, default=(0, None))

    a1, _k1 = worst_after(("node",))
    a2, k2 = worst_after(("node", "nodes", "pair2", "rack"))
    a3, k3 = worst_after(("link-cross", "link-intra"))
    out.append((a1 <= 2, f"issue 15: rounds after the first failing screen, single slow node (p=0, even and uneven "
                         f"racks, n <= 4096): max {a1} (<= 2)"))
    out.append((a2 <= 3, f"issue 15: rounds after the first failing screen, any node or rack fault (p=0, uneven "
                         f"racks included): max {a2} (<= 3){f' worst {k2}' if a2 > 3 else ''}"))
    out.append((a3 <= 3, f"issue 15: rounds after the first failing test, single link (p=0): max {a3} (<= 3)"
                         f"{f' worst {k3}' if a3 > 3 else ''}"))
    ratios = []
    for k, c in cls.items():
        if k[1] in ("node", "nodes", "pair2") and k[3] in ("full", "uneven") and c["base"][0] is not None:
            ours = mean([x["nr_after"] for x in c["ours"]])
            ref = mean([x["nr_after"] for x in c["base"]])
            ratios.append((ours / max(ref, 1e-9), k))
    bad = sorted([r for r in ratios if r[0] > 0.6], reverse=True)
    out.append((not bad, f"issue 15: GPU time after the screen <= 0.6x the reference in every node class incl. p = 5%: "
                         f"{len(ratios) - len(bad)}/{len(ratios)} classes"
                         + (f" (misses: {', '.join(f'{k[0]} {k[1]} p={k[2]} {k[3]} {r:.2f}' for r, k in bad[:8])})"
                            if bad else "")))
    link_over = []
    for k, c in cls.items():
        if k[1] in ("link-cross", "link-intra") and k[3] in ("full", "uneven"):
            worst = max(x["nr_after"] for x in c["ours"])
            link_over.append((worst / k[0], k))
    lw = max(link_over, default=(0, None))
    out.append((lw[0] <= 2.0, f"issue 15: a link costs at most 2n node-rounds after the screen: worst {lw[0]:.2f}n "
                              f"({lw[1][0]} {lw[1][1]} p={lw[1][2]} {lw[1][3]})" if lw[1] else "issue 15: no link runs"))
    runs = [x for k, c in cls.items() if k[1] == "intermittent" for x in c["ours"] if not x.get("error")]
    shown = [x["intermittent"] for x in runs if x["shown"]]
    hidden = [x["intermittent"] for x in runs if not x["shown"]]
    counts = {v: shown.count(v) for v in ("named", "bad", "unresolved", "missed")}
    pfp = sum(x["partner_fp"] for x in runs)
    # docs/design/050, intermittent: only a run in which the node's fault failed at least one run or
    # transfer can report it (else every test it was in passed); of those, none named bad, none
    # blamed on a partner, and at least 90 % reported Intermittent (the rest unresolved or cleared:
    # one crash among passes is what a flip at p = 5 % looks like)
    ok = pfp == 0 and counts["bad"] == 0 and counts["named"] >= INTERMITTENT_SHARE * len(shown)
    out.append((ok, f"issue 15: intermittent node (fails ~half its runs), {len(shown)} of {len(runs)} runs in which "
                    f"its fault showed: reported Intermittent {counts['named']} "
                    f"({counts['named'] / max(len(shown), 1):.0%}, >= {INTERMITTENT_SHARE:.0%}), named bad "
                    f"{counts['bad']}, unresolved {counts['unresolved']}, missed (healthy) {counts['missed']}; "
                    f"partners named bad {pfp}; {len(hidden)} runs in which every test holding it passed "
                    f"(not reportable; reported Intermittent {hidden.count('named')})"))
    out.append((plan_ms < 50, f"issue 15: planning one round at 4096 nodes < 50 ms: max {plan_ms:.1f} ms"))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
