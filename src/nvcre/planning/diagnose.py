"""Adaptive fault isolation (testScale: diagnose) as a pure, resumable planner.

The controller runs rounds; this module decides them. A round is a set of
node-disjoint groups (a node can run one NCCL job at a time), each tested by one
multi-node job that passes or fails. From the outcomes the planner names bad
nodes, bad links (two nodes that fail only together) and bad racks (a rack whose
nodes fail only in groups that cross its boundary).

Fault model (what a failing group means)
    A group fails if it contains a bad node, contains both ends of a bad link, or
    contains nodes on both sides of a bad rack's boundary (a degraded rack uplink
    hurts only traffic that leaves the rack). Everything else passes.

Error model (what the planner assumes about the measurements)
    * Each test outcome may be flipped, independently, with a small probability
      p (flaky job, transient congestion; designed for p <= 5 %). A flip can go
      either way.
    * Bandwidth has measurement noise. With ``policy.threshold`` set, a result
      whose measured value lies within ``policy.marginal_band`` of the threshold
      is *marginal*: it is followed up like a failure but is never, alone, the
      evidence that convicts.
    * Consequently nothing is convicted on one observation. A node is named bad
      only when at least two failing tests with different, proven-good partners
      point at it (or when the failures around it leave exactly one consistent
      explanation whose alternative needs two independent flips). A link is named
      only after the pair failed on its own twice (once when a search deduced
      exactly that pair) while each end passed with other partners; a rack only
      after two crossing tests with different nodes and partners failed while its
      nodes pass inside the rack.
      The residual error per decision is therefore O(p^2). Disagreements are
      settled by a third run; a pair whose ends both passed with proven-good
      partners (only a link is left) is cleared once its own re-runs passed as
      often as it failed.

Algorithm (rounds after a failing screen, in the common case)
    1. Screen: each topology domain chunked to ``max_screen_size`` nodes (default
       2: pairs, so a failing screen leaves two suspects, not a rack of them).
       If every screen group passes, one cross group of all nodes covers every
       cross-domain pair and rack boundary (``cross_check="full"``); a healthy
       cluster is certified in two rounds. Results only marginally below the
       threshold leave that decision to the cross check, which contains them.
    2. A failing screen pair among many (> 8) parallel ones runs once more on its
       own first: two flips on one of hundreds of pairs happen. A larger failing
       screen group is split into disjoint pairs (all in one round); a passing
       pair clears both nodes and they become partners.
    3. Solo: each node of a failing pair runs with a proven-good partner from its
       own domain. Exactly one failure in a failing pair is a conviction (its
       alternative needs two flips); two failures go to one confirmation round
       with new partners; none means the pair fails only together (a link).
    Cross-domain faults are narrowed with representative pairs per domain
    (racks); when none of those fails, every rack runs once more as one block
    (a node whose screen flipped to a pass, or a link inside a rack, then shows
    in one block), and only then, for links, a halving search over node sets
    whose members are mixed across the halves (both halves pass -> the fault
    crosses them).

State is a plain, compact dict (``DiagnoseState.to_dict``/``from_dict``): node
names and domains compressed, node sets as index ranges, the test history kept
as the evidence. ``next_round`` is a pure read (it returns the same round again
until results are recorded), so a controller restart resumes exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import eq, gt, itemgetter, lt

from nvcre.planning.diagnose_cases import CasePlanner, decode_columns
from nvcre.planning.diagnose_model import (  # noqa: F401  (the public data types live there)
    CROSS_CHECKS,
    LINK_CHECKS,
    PAIR_TAGS,
    STATE_VERSION,
    DiagnoseError,
    DiagnosePolicy,
    DiagnoseState,
    GroupResult,
    Round,
    Verdict,
    runner_tag,
)

UNLABELLED = "(no topology label)"
PARTNER_TAGS = ("solo", "confirm", "cross-probe")  # a suspect beside a proven-good partner  # how nodes without the topology label are named as a rack


# ---- public API ----------------------------------------------------------------------

def topology_from_labels(nodes: Iterable[str], labels: Mapping[str, Mapping[str, str]],
                         key: str) -> dict[str, str]:
    """node -> rack/clique from Node labels; nodes without the label get no entry."""
    out = {}
    for n in nodes:
        value = (labels.get(n) or {}).get(key)
        if value:
            out[n] = value
    return out


def start(nodes: Iterable[str], topology: Mapping[str, str] | None = None,
          policy: DiagnosePolicy | None = None) -> DiagnoseState:
    """A fresh diagnosis of ``nodes``; ``topology`` maps node -> rack/clique (may be partial)."""
    policy = policy or DiagnosePolicy()
    topology = topology or {}
    unique = sorted(set(nodes))
    if len(unique) < 2 and policy.min_group_size > 1:
        raise DiagnoseError("diagnose needs at least 2 nodes for multi-node tests")
    order = sorted(unique, key=lambda n: (topology.get(n) or "", n))
    domain_names = sorted({topology.get(n) or "" for n in order})
    index = {d: i for i, d in enumerate(domain_names)}
    state = DiagnoseState(
        names=order, dom=[index[topology.get(n) or ""] for n in order],
        domain_names=domain_names, policy=policy, status=["u"] * len(order),
    )
    planner = CasePlanner(state)
    planner.new_case("screen", "run", groups=[list(g) for g in planner.screen_groups()])
    planner.plan_stage()
    return state


def next_round(state: DiagnoseState) -> Round | Verdict:
    """The round to run now, or the verdict when the diagnosis is complete.

    Pure: calling it again before ``record`` returns the same round.
    """
    if not state.pending:
        return verdict(state)
    limit = state.policy.max_concurrent or len(state.pending)
    batch = state.pending[:limit]
    return Round(
        number=state.round + 1,
        groups=[[state.names[i] for i in nodes] for nodes, _, _, _ in batch],
        tags=[runner_tag(tag) for _, tag, _, _ in batch],
    )


def record(state: DiagnoseState, results: Sequence[GroupResult]) -> DiagnoseState:
    """A new state with the results of the current round (every group of it) applied."""
    state = state.clone()
    limit = state.policy.max_concurrent or len(state.pending)
    batch = state.pending[:limit]
    if not batch:
        raise DiagnoseError("no round is waiting for results; the diagnosis is complete")
    pos = {n: i for i, n in enumerate(state.names)}
    by_set: dict[frozenset, GroupResult] = {}
    for res in results:
        try:
            key = frozenset(pos[n] for n in res.nodes)
        except KeyError as exc:
            raise DiagnoseError(f"result names node {exc.args[0]!r}, which is not part of this diagnosis") from None
        by_set[key] = res
    state.round += 1
    for nodes, tag, case_id, slot in batch:
        res = by_set.get(frozenset(nodes))
        if res is None:
            raise DiagnoseError(
                f"round {state.round}: no result for group {[state.names[i] for i in nodes][:6]} ({tag})")
        measured = magnitude(res)
        outcome = _outcome(res.passed, measured, state.policy)
        state.stage[f"{case_id}:{slot}"] = len(state.tests)
        why = res.reason or ""
        if res.kind == "hang" and "timeout" not in why.lower() and "timedout" not in why.lower():
            why = f"{why} (timeout)".strip()
        if res.pairs is not None and tag in PAIR_TAGS:
            state.pairs[str(len(state.tests))] = _pair_record(res.pairs, pos, nodes, state)
        state.tests.append((state.round, tuple(nodes), tag, outcome, measured, why))
    state.pending = state.pending[limit:]
    if state.pending and state.round >= state.policy.max_rounds:
        # a stage wider than maxConcurrent would run past the budget: stop here
        planner = CasePlanner(state)
        planner.give_up(f"round limit {state.policy.max_rounds} reached")
        state.pending = []
        return state
    if not state.pending:
        planner = CasePlanner(state)
        planner.advance()
        planner.plan_stage()
    return state


def figure(value) -> float | None:
    """A bandwidth figure, or None when there is none: a transfer or job that failed reports
    nothing, 0 or a non-number, and none of those is a magnitude (0 would read as the
    slowest possible group and explain any slowness; see docs/design/050, failed measurements)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0 else None


def magnitude(res: GroupResult) -> float | None:
    """The figure a result contributes as evidence: none for a crash or a hang (a job that died
    may leave a partial figure, but it measured its death, not the slowest member or link)."""
    if not res.passed and res.kind in ("crash", "hang"):
        return None
    return figure(res.measured)


def _pair_record(pairs: Mapping, pos: Mapping[str, int], nodes: Sequence[int], state: DiagnoseState) -> dict:
    """A pairwise test's findings: the slow pairs (below the bar, outside the marginal band)
    and the failed transfers (no figure: crash evidence, never slow) decoded into nodes, racks,
    links and intermittent nodes (``diagnose_cases.decode_columns``), and the median. A pair given
    in both orders keeps a slow or failed reading from either (a passing one never erases it).
    One pass over what can be 100,000s of pairs; only readings below the bar are indexed, and
    they stay in columns (no tuple per pair)."""
    policy = state.policy
    median = None
    threshold = policy.threshold
    if not threshold:  # the bar then comes from the measured pairs themselves
        values = sorted(v for v in (figure(v) for (a, b), v in pairs.items()
                                    if a != b and a in pos and b in pos) if v is not None)
        median = float(values[len(values) // 2]) if values else None
    bar = threshold if threshold else (median * 0.9 if median else 0.0)
    low = bar * (1.0 - policy.marginal_band)
    flat, vals, failed, plain = _below_bar(pairs, pos, low)
    names = state.names

    def lookup(i: int, j: int) -> float | None:
        """Pair i-j's figure when it is a slow pair (plain input: at most one order reads slow)."""
        for key in ((names[i], names[j]), (names[j], names[i])):
            v = pairs.get(key)
            if v is not None and v < low:
                return v
        return None

    out = decode_columns(flat, vals, list(nodes), state.dom, any(state.domain_names), failed=failed,
                         known=[(a, b) for a, b, _t in state.bad_links], lookup=lookup if plain else None)
    out["median"] = median
    return out


def _below_bar(pairs: Mapping, pos: Mapping[str, int], low: float
               ) -> tuple[Sequence[int], list[float], list[tuple[int, int]], bool]:
    """The pairs of known, distinct nodes that read below ``low`` or failed, as columns: the
    slow pairs' ends in turn (i0, j0, i1, j1, ..., each i < j), their figures, and the failed
    transfers (no figure) sorted; last, whether the input was plain (every figure a finite
    number, every pair below the bar given once, by known and distinct nodes, with a positive
    figure), so that a pair's reading is its figure in either order. A pair given twice keeps
    its later such reading.

    At 4096 nodes a rack uplink is 65,000 slow pairs (and a full Job 8 million pairs), so plain
    numeric input is read by C-level iterators and never made into index tuples; anything else
    (a failed transfer, a non-number, an unknown or repeated node) goes through the general loop."""
    vals = list(pairs.values())
    # plain numbers, none of them nan or infinite (their sum is then finite; a huge sum only
    # sends the input to the general loop)
    if low > 0 and set(map(type, vals)) <= {float, int} and math.isfinite(sum(vals)):
        below = list(map(gt, repeat(float(low)), vals))
        nv = list(compress(vals, below))
        if not nv:
            return [], [], [], True
        flat = None
        if min(nv) > 0:
            try:  # (two or more names: a tuple of indices)
                flat = itemgetter(*chain.from_iterable(compress(pairs, below)))(pos)
            except (KeyError, TypeError):
                flat = None  # a node outside the diagnosis (or a key that is no pair): the general loop
        if flat is not None and len(flat) == 2 * len(nv):
            ia, ib = flat[0::2], flat[1::2]
            if all(map(lt, ia, ib)):  # a Job lists each pair one way round: no reordering needed
                return flat, nv, [], True
            if not any(map(eq, ia, ib)):
                lo, hi = list(map(min, ia, ib)), list(map(max, ia, ib))
                if len(set(zip(lo, hi))) == len(nv):  # no pair given in both orders
                    flat = [*flat]
                    flat[0::2], flat[1::2] = lo, hi
                    return flat, nv, [], True
    get = pos.get
    inf = math.inf
    figures: dict[tuple[int, int], float | None] = {}
    for (a, b), v in zip(pairs, vals):
        tv = type(v)
        if tv is float or tv is int:
            if low <= v < inf and v > 0:
                continue  # above the bar: no evidence against anyone
            if not 0 < v < inf:
                v = None  # as ``figure``: no magnitude
        else:
            v = figure(v)
        i, j = get(a), get(b)
        if i is None or j is None or i == j:
            continue
        figures[(i, j) if i < j else (j, i)] = v
    failed = sorted(k for k, v in figures.items() if v is None)
    slow = [(k, v) for k, v in figures.items() if v is not None] if failed else list(figures.items())
    return [x for k, _v in slow for x in k], [v for _k, v in slow], failed, False


def failure_kind(measured: float | None, reason: str) -> str:
    """slow (ran below the bar), hang (timed out) or crash (died), from what a test left."""
    if measured is not None:
        return "slow"
    return "hang" if "timeout" in (reason or "").lower() or "timedout" in (reason or "").lower() else "crash"


def _outcome(passed: bool, measured: float | None, policy: DiagnosePolicy) -> str:
    if policy.threshold and measured is not None and policy.marginal_band > 0:
        if abs(measured / policy.threshold - 1.0) < policy.marginal_band:
            return "M"
    return "P" if passed else "F"


def _rack_explanations(s: DiagnoseState) -> tuple[set[int], dict[int, int]]:
    """Convicted nodes whose every failing test left their rack, while no test that left the
    rack passed: that rack's uplink explains them as well. Two or more such nodes of one rack
    are folded into the rack (one fault instead of several); a single one keeps its conviction
    with the uplink named as the alternative (or the uplink of the one other rack every failing
    partner test went into). Returns (folded nodes, node -> the rack whose uplink is the
    alternative)."""
    if len(s.domain_names) < 2 or not any(s.domain_names):
        return set(), {}
    crossing_pass: set[int] = set()
    for _r, nodes, _tag, o, _m, _w in s.tests:
        doms = {s.dom[i] for i in nodes}
        if o == "P" and len(doms) > 1:
            crossing_pass.update(doms)
    by_dom: dict[int, list[int]] = {}
    partner_only: set[int] = set()
    inside = {x for data in s.pairs.values() for x in data.get("inside", ())}  # slow inside its rack too
    for x, tids in s.bad_nodes:
        d = s.dom[x]
        if x in inside or d in crossing_pass or (any(d for d in s.domain_names) and not s.domain_names[d]):
            continue
        # a marginal result (near the bar: what a healthy group can read) is no failure here
        fails = [s.tests[t] for t in tids if x in s.tests[t][1] and s.tests[t][3] == "F"]
        if any(t[4] is not None for t in fails):  # a crash is no magnitude: an intermittent partner reads as one
            fails = [t for t in fails if t[4] is not None]
        partner = [t for t in fails if t[2] in PARTNER_TAGS]
        if fails and all(len({s.dom[i] for i in t[1]}) > 1 for t in fails):
            by_dom.setdefault(d, []).append(x)
        elif partner and all(len({s.dom[i] for i in t[1]}) > 1 for t in partner):
            partner_only.add(x)  # its partner tests all left the rack: they cannot tell node from uplink
    folded = {x for xs in by_dom.values() if len(xs) >= 2 for x in xs}
    alternatives = {x: s.dom[x] for xs in by_dom.values() if len(xs) == 1 for x in xs}
    alternatives.update((x, s.dom[x]) for x in partner_only)
    if s.policy.min_group_size > 1:  # a node alone in its rack: every multi-node test leaves it
        for x, _t in s.bad_nodes:
            if x not in folded and sum(1 for d in s.dom if d == s.dom[x]) == 1:
                alternatives.setdefault(x, s.dom[x])
    for x, tids in s.bad_nodes:
        # every failing partner test went into one other rack, whose uplink no crossing test
        # cleared: that rack's uplink reads the same (its nodes pass inside it, so they were
        # "proven good" partners)
        if x in folded or x in alternatives or x in inside:
            continue
        partner = [s.tests[t] for t in tids if x in s.tests[t][1] and s.tests[t][3] == "F" and s.tests[t][2] in PARTNER_TAGS]
        shared = set.intersection(*({s.dom[i] for i in t[1] if i != x} for t in partner)) if partner else set()
        shared = {d for d in shared if d != s.dom[x] and d not in crossing_pass and s.domain_names[d]}
        if shared:
            alternatives[x] = min(shared)
    return folded, alternatives


def folded_racks(s: DiagnoseState, folded: set[int]) -> list[tuple[int, list[int]]]:
    """The racks that explain folded node convictions, with the tests behind them."""
    out: dict[int, set[int]] = {}
    for x, tids in s.bad_nodes:
        if x in folded and not any(d == s.dom[x] for d, _p, _t in s.bad_racks):
            out.setdefault(s.dom[x], set()).update(tids)
    return [(d, sorted(t)) for d, t in sorted(out.items())]


def _capped(notes: list[str], limit: int = 20) -> list[str]:
    """Notes for the status: repeated lines counted once, at most ``limit`` lines."""
    counts: dict[str, int] = {}
    for n in notes:
        counts[n] = counts.get(n, 0) + 1
    out = [n if c == 1 else f"{n} (x{c})" for n, c in counts.items()]
    return out if len(out) <= limit else out[:limit] + [f"... {len(out) - limit} more"]


# ---- verdict -------------------------------------------------------------------------

def verdict(state: DiagnoseState) -> Verdict:
    """The named faults with their evidence (valid once ``next_round`` returns no round)."""
    s = state
    nm = s.names

    def ev(tids: Iterable[int]) -> list[dict]:
        out = []
        for tid in sorted(set(tids)):
            r, nodes, tag, o, m, why = s.tests[tid]
            item = {"round": r, "kind": tag, "passed": o == "P", "size": len(nodes),
                    "nodes": [nm[i] for i in nodes[:8]]}
            if o != "P":
                item["failure"] = failure_kind(m, why)
            if o == "M":
                item["marginal"] = True
            if m is not None:
                item["measured"] = m
            if why:
                item["reason"] = why
            out.append(item)
        return out

    def summary(items: list[dict]) -> str:
        failed = [e for e in items if not e["passed"]]
        parts = []
        for e in items[:6]:
            mark = "passed" if e["passed"] else "failed"
            with_ = ", ".join(e["nodes"][:3]) + (f" +{e['size'] - 3}" if e["size"] > 3 else "")
            val = f" at {e['measured']:.1f}" if e.get("measured") is not None else ""
            parts.append(f"round {e['round']} {e['kind']} [{with_}] {mark}{val}")
        return f"failed {len(failed)} of {len(items)} tests: " + "; ".join(parts)

    folded, alternatives = _rack_explanations(s)
    bad_nodes = []
    for x, tids in s.bad_nodes:
        if x in folded:
            continue
        items = ev(t for t in tids if x in s.tests[t][1])
        measured = any(e.get("measured") is not None and not e["passed"] for e in items)
        entry = {"name": nm[x], "reason": "ThresholdViolation" if measured else "WorkloadFailed",
                 "message": summary(items), "evidence": items}
        if x in alternatives:
            rack = s.domain_names[alternatives[x]] or UNLABELLED
            entry["alternative"] = f"uplink of {rack}"
            where = "all left" if alternatives[x] == s.dom[x] else "that failed all went into"
            entry["message"] += (f" (its partner tests {where} {rack}, so a degraded uplink of that rack"
                                 " would read the same)")
        bad_nodes.append(entry)
    bad_links = []
    for a, b, tids in s.bad_links:
        items = ev(tids)
        bad_links.append({"a": nm[a], "b": nm[b], "message": "fails only when both ends run together: "
                          + summary(items), "evidence": items})
    bad_racks = []
    for d, peer, tids in s.bad_racks + [[d, -1, t] for d, t in folded_racks(s, folded)]:
        items = ev(tids)
        entry = {"rack": s.domain_names[d] or UNLABELLED,
                 "message": "fails only across its boundary: " + summary(items), "evidence": items}
        if peer >= 0 and len(s.domain_names) == 2:
            entry["peer"] = s.domain_names[peer] or UNLABELLED
            entry["message"] = (f"the boundary between {entry['rack']} and {entry['peer']} fails (with two racks "
                                "the side cannot be told): " + summary(items))
        bad_racks.append(entry)
    unresolved = []
    for u in s.unresolved:
        items = ev(u[2] if len(u) > 2 else [])
        entry = {"nodes": [nm[i] for i in u[0]], "message": u[1]}
        if items:
            entry["message"] = f"{u[1]}: {summary(items)}"
            entry["evidence"] = items
        unresolved.append(entry)
    intermittent = []
    for x, fails, tests, tids in s.intermittent:
        items = ev(t for t in tids if x in s.tests[t][1])
        intermittent.append({"name": nm[x], "reason": "Intermittent", "fails": fails, "tests": tests,
                             "message": f"Intermittent: failed {fails} of {tests} tests with proven-good partners "
                                        f"and passed the others; " + summary(items), "evidence": items})
    good = [nm[i] for i, st in enumerate(s.status) if st == "g"]
    return Verdict(
        bad_nodes=bad_nodes, bad_links=bad_links, bad_racks=bad_racks, good_nodes=good,
        unresolved=unresolved, notes=_capped(s.notes), rounds=s.round, tests=len(s.tests),
        node_rounds=sum(len(t[1]) for t in s.tests), intermittent=intermittent,
    )
