"""The case engine behind diagnose: open investigations advanced stage by stage.

Each open *case* owns a disjoint set of nodes (a failing screen group, a suspect pair,
one suspect, a rack, a set being searched). After a stage's results are in, every case
reads its results and closes, continues, or opens smaller cases; then every open case
plans its next tests, all node-disjoint, with proven-good partners claimed once per
round. See ``nvcre.planning.diagnose`` for the fault and error models.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import and_, eq, itemgetter, not_, or_

from nvcre.planning.boundary import UNPROVEN, behind, crossing_passers, open_racks, unexplained_failures
from nvcre.planning.diagnose_model import CROSS_PAIRS, PAIR_TAGS
from nvcre.planning.pair_noise import flips_explain

WAIT = "wait"  # a case that cannot get a partner this round plans nothing and waits
WIDE_ROUND = 8  # more parallel tests than this in one round: one more failure before convicting
BLOCK_SIZE = 32  # blocks re-screened after a failing cross check (see CasePlanner._to_blocks)
MIN_BLOCK_NODES = 32  # up to this many nodes the halving search is as cheap as a block round
MAX_REOPENS = 3  # second looks at failures nothing explains (see CasePlanner.reopen)
MAGNITUDE_TOLERANCE = 0.12  # ratio-to-baseline difference still read as the same bottleneck
SCREEN_BUDGET_SHARE = 6  # with maxConcurrent set, the screen takes at most maxRounds / this many rounds
MATE_GAP = 0.06  # a pair this much slower than its failing member read alone: the mate is slow too
MAX_DEDUCTIONS = 64  # planning steps without a round in one call (each closes or narrows a case)
PAIR_NODE_SHARE = 0.9  # share of a node's (or rack boundary's) pairs that must be slow to blame it
PAIR_INTERMITTENT_SHARE = 0.2  # a node failing this share of its pairs (but not nearly all): intermittent
PAIRWISE_TRIES = 3  # runs of a pairwise Job that died before falling back to the search
CRASH_JOB_MIN = 4  # nodes in the per-pair Job of crashed screens: each measured with 3 others or more
RIDER_TRIES = 2  # runs of the cross check's per-pair Job carrying crashed screens before they are settled alone
MAX_PAIR_LINKS = 16  # more unexplained slow pairs than this: unresolved, not a list of links
PROBE_PARTNERS = 8  # proven-good partners in the per-pair check of a crash-only pair (see _plan_probe)
PROBE_RUNS = 2  # runs of that check before its remaining suspects are reported unresolved
PATH_PARTNERS_MAX = 32  # slow partners of a named node kept for the per-path rule (see decode_columns)



class CasePlanner:
    """Advances open cases with the finished stage's results and plans the next stage."""

    def __init__(self, state: DiagnoseState) -> None:
        self.s = state
        self.busy: set[int] = set()
        self.failed_families: set = set()
        self.claimed: set[int] = set()
        self.reserved: set[int] = set()
        self.planned: list[tuple] = []
        self.batch: tuple[int, int] | None = None  # this round's shared probe: (case id, index in planned)
        self._baseline: float | None = None
        self._density: float | None = None
        self._floor: dict[int, float] | None = None
        self._passed: set[int] | None = None
        self._open: set[int] | None = None
        self._crossers: set[int] | None = None
        self._fails_of: dict[int, list[int]] | None = None

    # -- bookkeeping
    def new_case(self, kind: str, step: str, **data) -> dict:
        if kind == "suspects":  # two findings can point at the same pair: look at it once
            for other in self.s.cases:
                if other["kind"] == "suspects" and other["members"] == data["members"]:
                    return other
        case = {"id": self.s.next_case, "kind": kind, "step": step, **data}
        self.s.next_case += 1
        self.s.cases.append(case)
        return case

    def result(self, case: dict, slot: str) -> tuple[str, int] | None:
        tid = self.s.stage.get(f"{case['id']}:{slot}")
        if tid is None:
            return None
        return self.s.tests[tid][3], tid

    # -- magnitude evidence (see docs/design/050, "Error model")
    def baseline(self) -> float | None:
        """The fleet's healthy bus bandwidth: the median of passing measurements so far."""
        if self._baseline is None:
            values = sorted(t[4] for t in self.s.tests if t[3] == "P" and t[4] is not None)
            if values:
                self._baseline = values[len(values) // 2]
            elif self.s.policy.threshold:
                self._baseline = self.s.policy.threshold
        return self._baseline

    def fault_density(self) -> float:
        """The share of screen groups that failed: how likely a proven-good partner, cleared by
        one screen pass, is a bad node whose screen flipped (that, times p)."""
        if self._density is None:
            screens = [t[3] for t in self.s.tests if t[2] == "screen"]
            self._density = sum(1 for o in screens if o != "P") / len(screens) if screens else 1.0
        return self._density

    def ratio(self, tid: int | None) -> float | None:
        """A test's measured bandwidth over the baseline (None: not measured)."""
        if tid is None:
            return None
        m = self.s.tests[tid][4]
        base = self.baseline()
        return m / base if m is not None and base else None

    def slow(self, tid: int | None) -> bool:
        """A measured failure clearly below the bar (not marginal, not a crash)."""
        return tid is not None and self.s.tests[tid][3] == "F" and self.s.tests[tid][4] is not None

    def consistent(self, solo_tid: int | None, group_tid: int | None) -> bool:
        """Whether a member's own slow reading can explain a group's: the group runs at its
        slowest member, so the member must not read clearly slower than the group did (then
        its partner was the slow one). Unmeasured results are consistent with anything."""
        r_solo, r_group = self.ratio(solo_tid), self.ratio(group_tid)
        if r_solo is None or r_group is None:
            return True
        return r_solo >= r_group - MAGNITUDE_TOLERANCE

    def inside(self, tid: int) -> bool:
        """Whether a test stayed inside one rack (a rack uplink cannot explain it)."""
        return len({self.s.dom[i] for i in self.s.tests[tid][1]}) == 1

    def open_uplink(self, x: int, partners: Iterable[int]) -> int | None:
        """The rack whose degraded uplink would fail every transfer of ``x`` with ``partners``
        as well (x's own rack when all of them are outside it, or the one rack they all share),
        unless a passing test crossed that rack's boundary; None when no uplink can. A per-pair
        Job whose partners all sit behind one such uplink cannot tell a dead node from it."""
        s = self.s
        partners = [p for p in partners if p != x]
        if not partners or len(s.domain_names) < 2 or not any(s.domain_names):
            return None
        doms = {s.dom[p] for p in partners}
        if s.dom[x] in doms:
            return None  # a transfer inside x's rack is no uplink's
        named = {d for d, _peer, _t in s.bad_racks}
        for d in [s.dom[x]] + sorted(doms if len(doms) == 1 else ()):
            if d in named or not any(o == "P" and d in {s.dom[i] for i in nodes}
                                     and len({s.dom[i] for i in nodes}) > 1
                                     for _r, nodes, _tag, o, _m, _w in s.tests):
                return d
        return None

    def open_racks(self) -> set[int]:
        """Racks whose uplink no passing test has cleared (or named bad); empty without racks."""
        if self._open is None:
            s = self.s
            labelled = len(s.domain_names) >= 2 and any(s.domain_names)
            self._open = (open_racks(s.tests, s.dom, len(s.domain_names), {d for d, _p, _t in s.bad_racks})
                          if labelled else set())
        return self._open

    def boundary_doubt(self, x: int) -> tuple[list[int], int] | None:
        """The open racks behind ``x``'s failures when too few of them are x's alone: each of those
        tests had all its other members in one rack whose uplink no pass has cleared, so that
        uplink fails it too (docs/design/050, "one boundary is no evidence"). Counted like
        ``shared_partner``: the failures no named bad node explains and x can explain (its
        measured ones, when two or more). Returns (those racks, the failures left: under two); None
        when at least two are left, or nothing to doubt."""
        s = self.s
        if len(s.domain_names) < 2 or not any(s.domain_names):
            return None  # no racks: no boundary
        racks = self.open_racks()
        bad = {b[0] for b in s.bad_nodes if b[0] != x}
        fails = [t for t, test in enumerate(s.tests) if x in test[1] and test[3] == "F" and test[2] not in PAIR_TAGS
                 and not bad.intersection(test[1]) and self.explains(x, t)]
        measured = [t for t in fails if s.tests[t][4] is not None]
        if len(measured) >= 2:
            fails = measured
        if len(fails) < 2:
            return None
        passed = x in self.passed()
        sides = [behind(x, s.tests[t][1], s.dom, racks, own=passed) for t in fails]
        # a crossing failure beside a partner proven only inside its rack: its NIC may be it. For x
        # that never passed those count as one observation, as one rack does (issue 15, found case
        # seed15-1014: node 8 failed only beside NIC-slow nodes proven inside their NVLink domain)
        if self._crossers is None:
            self._crossers = crossing_passers(s.tests, s.dom)
        proven = self._crossers
        sides = [UNPROVEN if d is None and not self.inside(t) and not proven.issuperset(set(s.tests[t][1]) - {x})
                 else d for d, t in zip(sides, fails)]
        left = unexplained_failures(sides, passed)
        if left >= 2:
            return None
        return sorted({d for d in sides if d is not None and d != UNPROVEN}), left

    def explains(self, x: int, tid: int) -> bool:
        """Whether node ``x`` can be the bottleneck of failing test ``tid``: a group runs at its
        slowest member, so x is at least as fast as any measured failing group that held it
        read; a test clearly slower than that was slowed by someone else."""
        r = self.ratio(tid)
        if r is None:
            return True
        return self.floor(x) <= r + MAGNITUDE_TOLERANCE

    def floor(self, x: int) -> float:
        """The fastest measured failing (or marginal) test that held ``x``, over the baseline:
        x is at least that fast. One pass over the tests per planner (they do not change while
        it plans), not one per question: at 4096 nodes a round asks thousands."""
        if self._floor is None:
            base = self.baseline()
            floors: dict[int, float] = {}
            for test in self.s.tests:
                if test[3] in ("F", "M") and test[4] is not None and base:
                    r = test[4] / base
                    for i in test[1]:
                        if r > floors.get(i, 0.0):
                            floors[i] = r
            self._floor = floors
        return self._floor.get(x, 0.0)

    def mark(self, nodes: Iterable[int], status: str) -> None:
        for i in nodes:
            if self.s.status[i] not in ("b", "x", "i"):
                self.s.status[i] = status

    def shared_partner(self, x: int) -> int | None:
        """A node in every failing test of ``x`` (its measured ones, when two or more) that no
        convicted node explains: then a link to that node (or the node itself) explains the
        failures as well as ``x`` does, and once x passed a test without it, better (docs/design/050,
        "one partner is no evidence"). None when the failures had different partners."""
        s = self.s
        held = [i for i, t in enumerate(s.tests) if x in t[1]]
        if any(s.tests[i][2] in PAIR_TAGS for i in held):
            return None  # measured per pair: decode_pairs weighed each partner
        bad = {b[0] for b in s.bad_nodes if b[0] != x}
        fails = [s.tests[i] for i in held if s.tests[i][3] == "F" and s.tests[i][2] not in PAIR_TAGS
                 and not bad.intersection(s.tests[i][1]) and self.explains(x, i) and not self.covered(x, i)]
        measured = [t for t in fails if t[4] is not None]
        if len(measured) >= 2:  # a crash has no magnitude (an intermittent partner reads as one)
            fails = measured
        if len(fails) < 2:
            return None
        common = set.intersection(*(set(t[1]) - {x} for t in fails))
        return min(common) if common else None

    def covered(self, x: int, tid: int) -> bool:
        """Whether failing test ``tid`` is explained without ``x``: a measured failing test of some
        of its other members (x not among them) read as slow or slower (a group runs at its
        slowest member, so that bottleneck alone gives the figure; a screen triple whose pair
        without x read the same, issue 15). Unmeasured tests are never covered."""
        s = self.s
        r = self.ratio(tid)
        if r is None:
            return False
        if self._fails_of is None:
            self._fails_of = {}
            for t, test in enumerate(s.tests):
                if test[3] == "F" and test[4] is not None and test[2] not in PAIR_TAGS:
                    for i in test[1]:
                        self._fails_of.setdefault(i, []).append(t)
        others = set(s.tests[tid][1]) - {x}
        return any(t != tid and x not in s.tests[t][1] and others.issuperset(s.tests[t][1])
                   and (self.ratio(t) or 1.0) <= r + MAGNITUDE_TOLERANCE
                   for i in others for t in self._fails_of.get(i, ()))

    def convict_node(self, x: int, tids: list[int]) -> None:
        y = self.shared_partner(x) if self.s.status[x] != "b" else None
        if y is not None:
            # every failure of x had y in it and x passed without y: a link x-y (or y) reads the same
            pair = sorted((x, y))
            own = [t for t, test in enumerate(self.s.tests) if x in test[1] and test[3] != "P"]
            if self.s.status[y] == "b":
                self.mark([x], "g")
            elif (any(x in t[1] and t[3] == "P" for t in self.s.tests)
                  and any(y in t[1] and x not in t[1] and t[3] == "P" for t in self.s.tests)):
                self.convict_link(pair[0], pair[1], own)
            else:
                self.unresolved(pair, f"{self.s.names[x]} failed only in tests with {self.s.names[y]} and passed "
                                "without it: a link between them or a fault of the latter", own)
            return
        doubt = self.boundary_doubt(x) if self.s.status[x] not in ("b", "i") else None
        if doubt:
            self._confirm_past(x, *doubt, why="failed only beside partners whose NIC no crossing pass has "
                               "proven (or behind an open uplink): confirmed with a proven-good partner")
            return
        if self.s.status[x] == "i":  # proven bad after all (e.g. slow in every pair): not intermittent
            self.s.intermittent = [e for e in self.s.intermittent if e[0] != x]
        elif self.s.status[x] != "b" and self._crashes_beside_a_pass(x, tids):
            return
        if self.s.status[x] != "b":
            self.s.status[x] = "b"
            self.s.bad_nodes.append([x, sorted(set(tids))])
            self._settled(x)

    def _confirm_past(self, x: int, racks: list[int], fails: int,
                      why: str = "read slow in a per-pair Job beside fewer than two partners that ever "
                                 "passed a test: confirmed with a proven-good partner") -> None:
        """``x`` about to be named on failures that open rack uplinks (or partners proven only
        inside their rack) explain: confirmed with a proven-good partner outside those racks
        instead (inside its own rack, or past a cleared uplink), never one it failed with before;
        with none free it waits, and the round budget reports it unresolved. ``why``: the note
        when no rack is named."""
        s = self.s
        s.status[x] = "s"
        s.notes.append(f"{s.names[x]} failed with partners behind the uplink of "
                       f"{', '.join(s.domain_names[d] for d in racks)}, which no passing test crossed: "
                       "confirmed with a partner outside it" if racks else f"{s.names[x]} {why}")
        own = [t for t, test in enumerate(s.tests) if x in test[1] and test[3] != "P"]
        failed_with = sorted({i for t in own if len(s.tests[t][1]) == 2 for i in s.tests[t][1] if i != x})
        self.new_case("node", "confirm", member=x, fails=fails, passes=0, crashes=0, exclude=list(racks),
                      origin=own, partners=[], mates=failed_with)

    def _settled(self, x: int) -> None:
        """Drop a node just named bad or intermittent from earlier unresolved entries: the
        verdict puts each node in one of good, bad, intermittent or unresolved."""
        kept = []
        for u in self.s.unresolved:
            u[0] = [i for i in u[0] if i != x]
            if u[0]:
                kept.append(u)
        self.s.unresolved = kept

    def _crashes_beside_a_pass(self, x: int, tids: list[int]) -> bool:
        """Whether ``x``, about to be named bad, has only crashes against it (no figure) and a
        pass of its own: a dead node passes only by a flip, an intermittent one by design, and
        crash-only evidence cannot tell the two apart while the pass says it works at times. It
        is then named Intermittent with its counts, never bad (docs/design/050, intermittent)."""
        mine = [t for t in self.s.tests if x in t[1]]
        fails = [t for t in mine if t[3] != "P"]
        if len(fails) < 2 or any(t[3] != "F" or t[4] is not None for t in fails):
            return False
        passes = sum(1 for t in mine if t[3] == "P")
        if not passes:
            return False
        self.mark_intermittent(x, len(fails), len(fails) + passes, tids)
        return True

    def mark_intermittent(self, x: int, fails: int, tests: int, tids: list[int]) -> None:
        if self.s.status[x] not in ("b", "i"):  # named once (a probe and a per-pair Job may both read it)
            self.s.status[x] = "i"
            self.s.intermittent.append([x, fails, tests, sorted(set(tids))])
            self._settled(x)

    def convict_link(self, a: int, b: int, tids: list[int], family: int | None = None) -> None:
        a, b = min(a, b), max(a, b)
        own = [t for t in tids if set(self.s.tests[t][1]) == {a, b}]
        if own and not any(self.slow(t) for t in own) and not any(self.s.tests[t][2] in PAIR_TAGS for t in tids):
            # a degraded link reads slow; a pair that only ever crashed together while both ends
            # pass with others is flaky (one pass) or unexplained, not a measured link fault
            crashes = sum(1 for t in own if self.s.tests[t][3] == "F")
            if crashes >= 2 and self.s.policy.link_check == "pairwise" and not any(
                    self.s.tests[t][2] in PAIR_TAGS for t in tids):
                # beyond independent flips (O(p^3)): one end fails intermittently; measure each
                # end with proven-good partners in one Job to say which (see _plan_probe)
                self.mark((a, b), "s")
                self.new_case("probe", "run", members=[a, b], origin=sorted(set(tids)))
            elif crashes >= 3:  # beyond independent flips (O(p^3)): one end fails intermittently
                self.unresolved((a, b), f"crashed {crashes} of {len(own)} runs together while both ends passed "
                                "with other partners: one of them fails intermittently", tids)
            elif any(self.s.tests[t][3] == "P" for t in own):
                self.mark((a, b), "g")
                self.s.notes.append(f"pair {self.s.names[a]}, {self.s.names[b]} crashed together but never read "
                                    "slow and passed once; treated as flaky")
            else:
                self.unresolved((a, b), "crashes only when both run together, never measured slow", tids)
            return
        if not any(x == a and y == b for x, y, _ in self.s.bad_links):
            self.s.bad_links.append([a, b, sorted(set(tids))])
        self.mark((a, b), "g")
        if family is not None:
            self.failed_families.add(family)

    def convict_rack(self, d: int, peer: int, tids: list[int]) -> None:
        two_sided = len(self.s.domain_names) == 2  # with two domains only the boundary can be named
        for x, y, _ in self.s.bad_racks:
            if x == d or (two_sided and x == peer and y == d):
                return
        self.s.bad_racks.append([d, peer, sorted(set(tids))])

    def unresolved(self, nodes: Iterable[int], note: str, tids: Iterable[int] = ()) -> None:
        """Suspects the diagnosis could not settle, with the tests that implicate them."""
        asked = set(nodes)
        nodes = sorted(i for i in asked if self.s.status[i] not in ("b", "i"))  # named ones stay named
        if not nodes:
            if asked:
                self.s.notes.append(note)
            return
        for i in nodes:
            self.s.status[i] = "x"
        self.s.unresolved.append([nodes, note, sorted(set(tids))])

    # -- screen
    def screen_groups(self) -> list[list[int]]:
        s = self.s
        pol = s.policy
        labelled = any(s.domain_names)
        cap = pol.max_screen_size if labelled else max(2, min(pol.max_screen_size, 16,
                                                            math.ceil(math.sqrt(len(s.names)))))
        if pol.max_concurrent:
            # maxConcurrent splits a round: the screen must leave the follow-ups most of maxRounds
            # (116 pair screens at maxConcurrent 1 would take 116 rounds), so fewer, larger groups
            allowed = pol.max_concurrent * max(1, pol.max_rounds // SCREEN_BUDGET_SHARE)
            if math.ceil(len(s.names) / cap) > allowed:
                cap = max(cap, math.ceil(len(s.names) / allowed))
        groups: list[list[int]] = []
        singles: list[int] = []
        start = 0
        while start < len(s.names):
            end = start
            while end < len(s.names) and s.dom[end] == s.dom[start]:
                end += 1
            members = list(range(start, end))
            if len(members) < max(2, pol.min_group_size) and pol.min_group_size > 1:
                singles.extend(members)
            else:
                k = math.ceil(len(members) / cap)
                size = math.ceil(len(members) / k)
                chunks = [members[i:i + size] for i in range(0, len(members), size)]
                if len(chunks) > 1 and len(chunks[-1]) < max(2, pol.min_group_size):
                    last = chunks.pop()  # never leave a node to test alone
                    chunks[-1] = chunks[-1] + last
                groups.extend(chunks)
            start = end
        if singles:
            if len(singles) >= 2:
                groups.append(singles)
            elif groups:
                groups[-1] = groups[-1] + singles
            else:
                groups.append(singles)
        return groups

    # -- stage machinery
    def advance(self) -> None:
        open_cases = list(self.s.cases)
        self.s.cases = []
        self.failed_families: set = set()
        for case in open_cases:
            if case.pop("wait", False):
                self.s.cases.append(case)  # it ran nothing this stage (no partner was free)
                continue
            handler = getattr(self, f"_done_{case['kind']}")
            keep = handler(case)
            if keep:
                self.s.cases.append(case)
        self.s.stage = {}
        if self.failed_families:  # a search family found its failure: drop its untested hypotheses
            self.s.cases = [c for c in self.s.cases
                            if not (c.get("deduced") and c.get("family") in self.failed_families)]
        self.s.cases.sort(key=lambda c: c["id"])

    def plan_stage(self) -> None:
        """Plan the next stage; deduction-only stages advance without a round (bounded loop)."""
        for _ in range(MAX_DEDUCTIONS):
            if not self._plan_once():
                return
        # every step either plans a round or closes cases; this many in a row is a planner bug:
        # report what is open instead of looping
        self.give_up("the planner could not make progress on these suspects")
        self.s.pending = []

    def give_up(self, note: str) -> None:
        """Close every open case as unresolved, naming its nodes and the failures behind it."""
        for case in self.s.cases:
            nodes = _case_nodes(case) or ([case["member"]] if "member" in case else [])
            if nodes:
                self.unresolved(nodes, f"{note} ({case['kind']})", case.get("origin", []))
            else:
                self.s.notes.append(f"{note}: the {case['kind']} check did not run")
        self.s.cases = []

    def _plan_once(self) -> bool:
        """One planning step; True when it must run again (nothing planned, cases moved on)."""
        s = self.s
        limit_reached = s.round >= s.policy.max_rounds
        if limit_reached and s.cases:
            self.give_up(f"round limit {s.policy.max_rounds} reached")
        self.busy = set()
        self.claimed = set()
        self.planned = []
        self.batch = None
        self.reserved = set()
        for case in s.cases:
            self.reserved.update(_case_nodes(case))
        kept = []
        for case in s.cases:
            claimed = set(self.claimed)
            used = {k: list(v) for k, v in case.get("used", {}).items()}
            if self.busy.intersection(_case_nodes(case)):
                tests = WAIT  # overlaps a case planned earlier this round: next round
            else:
                tests = getattr(self, f"_plan_{case['kind']}")(case)
            if tests is None:
                continue  # the case closed itself while planning
            if tests == WAIT:  # no partner free this round: try again next round
                self.claimed = claimed
                case["used"] = used
                case["wait"] = True
                kept.append(case)
                continue
            for slot, nodes, tag in tests:
                self.add(case, slot, nodes, tag)
            kept.append(case)
        s.cases = kept
        s.pending = self.planned
        if s.pending:
            return False
        if s.cases and all(c.get("wait") for c in s.cases):
            for case in s.cases:
                self.unresolved(_case_nodes(case) or [case.get("member", 0)],
                                "no proven-good partner is left to test these suspects against",
                                case.get("origin", []))
            s.cases = []
        if s.cases:
            # Every open case moved on by deduction; advance again without a round.
            self.advance()
            return True
        self.leftover_pairs()  # a deduction: it runs past the round budget too
        if limit_reached:
            return False  # no second looks past the round budget
        return self.reopen() or self.late_cross_check()

    def leftover_pairs(self) -> None:
        """At the end of a run, the slow pairs of a node a per-pair Job read slow with its partners
        and a confirmation then cleared (``_behind_open``, ``shared``): a measured slow pair is no
        flip, so none may vanish from the verdict (issue 15, found case seed14-6139). A pair that a
        named fault explains is settled (``_pair_explained``); one inside a rack whose ends are good
        and each passed twice without the other is a link (the bad-link rule); the rest, where an
        uplink or an end's NIC no crossing pass proved reads the same, are reported unresolved with
        the Job behind them. Idempotent: what it settles is explained the next time it runs."""
        s = self.s
        for key, data in sorted(s.pairs.items(), key=lambda kv: int(kv[0])):
            tid = int(key)
            for x, ys in data.get("partners", ()):
                if s.status[x] != "g":
                    continue  # named, unresolved or Intermittent: x explains its pairs
                left = [y for y in ys if not self._pair_explained(x, y, data)]
                links = [y for y in left if s.dom[x] == s.dom[y] and self._link_ends_cleared(x, y)]
                for y in links:
                    s.notes.append(f"{s.names[x]} read slow beside {s.names[y]} in round {s.tests[tid][0]}'s "
                                   "per-pair Job and was cleared since; both ends passed without each other: "
                                   "the link between them")
                    self.convict_link(x, y, [tid])
                rest = [y for y in left if y not in links]
                if rest:
                    self.unresolved([x], self._leftover_note(x, rest), [tid])

    def _leftover_note(self, x: int, partners: Sequence[int]) -> str:
        """Why x, cleared since, stays unresolved: the partners of its unexplained slow pairs (the
        suspects beside x) and the open uplinks that read the same. Only x, their common end, is
        listed: its partners may be healthy and keep their own verdicts."""
        s = self.s
        racks = open_racks(s.tests, s.dom, len(s.domain_names), {d for d, _p, _t in s.bad_racks}) \
            if len(s.domain_names) >= 2 and any(s.domain_names) else set()
        crossing = sorted({d for y in partners if s.dom[y] != s.dom[x] for d in (s.dom[x], s.dom[y]) if d in racks})
        uplinks = f"; no passing test crossed the uplink of {', '.join(s.domain_names[d] for d in crossing)}" \
            if crossing else ""
        return (f"{s.names[x]} read slow beside {', '.join(s.names[y] for y in partners)} in a per-pair Job and "
                f"was cleared since: nothing named explains those pairs (a link to each, or a fault on the "
                f"partners' path, reads the same{uplinks})")

    def _pair_explained(self, x: int, y: int, data: Mapping) -> bool:
        """Whether a named fault explains the slow pair x-y of a per-pair Job (``data``): y named bad
        or unresolved, a named link x-y, a named rack the pair crosses, or y read intermittent in that
        Job's pairs. An end Intermittent on crashes elsewhere does not: a crash has no figure."""
        s = self.s
        if s.status[y] in ("b", "x") or y in {z for z, _f, _t in data.get("intermittent", ())}:
            return True
        if any({a, b} == {x, y} for a, b, _t in s.bad_links):
            return True
        return s.dom[x] != s.dom[y] and any(d in (s.dom[x], s.dom[y]) for d, _p, _t in s.bad_racks)

    def _link_ends_cleared(self, a: int, b: int) -> bool:
        """Whether both ends of pair a-b are good and each passed at least twice without the other
        (the bad-link rule's evidence that neither end is the bottleneck)."""
        s = self.s
        for x, y in ((a, b), (b, a)):
            if s.status[x] != "g" or sum(1 for t in s.tests if t[3] == "P" and x in t[1] and y not in t[1]) < 2:
                return False
        return True

    def late_cross_check(self) -> bool:
        """Run the skipped cross check when every screen failure turned out to be noise."""
        s = self.s
        # open questions (unresolved, intermittent) do not explain a fault elsewhere: the check
        # still runs then, without those nodes (only proven-good nodes take part)
        found = bool(s.bad_nodes or s.bad_links or s.bad_racks)
        if s.policy.cross_check == "none" or (found and not s.policy.cross_check_after_faults):
            return False
        if any(t[2] == "cross" or (t[2] == CROSS_PAIRS and (t[3] == "P" or t[4] is not None or str(i) in s.pairs))
               for i, t in enumerate(s.tests)):  # a per-pair Job that died read nothing: it does not count
            return self.completing_cross_check()
        if not any(t[2] == "screen" and t[3] != "P" for t in s.tests):
            return False
        if sum(1 for t in s.tests if t[2] == "screen") < 2:
            return False
        members = [i for i, st in enumerate(s.status) if st == "g"]
        if len(members) < 2:
            return False
        s.notes = [n for n in s.notes if not n.startswith("cross-group check skipped")]
        s.notes.append("the cross-group check ran after the screen failures were settled"
                       + (" (without the nodes named bad)" if found else ""))
        step = "giant" if s.policy.cross_check == "full" else "repgroup"
        self.new_case("cross", step, members=members)
        return True

    def completing_cross_check(self) -> bool:
        """After a cross check that ran beside the follow-ups (``parallel``): the nodes it could
        not hold (partners claimed that round, suspects cleared since) join the proven-good ones
        in one more cross check, so a link or uplink at one of them is not missed. Without the
        nodes of a named rack and one end of each named link (those fail any such group)."""
        s = self.s
        crosses = [set(t[1]) for t in s.tests if t[2] in ("cross", CROSS_PAIRS)]
        covered = set().union(*crosses)
        for t in s.tests:  # a per-pair Job holding a whole cross check's set measured its nodes with all of them
            if t[2] in PAIR_TAGS and any(c <= set(t[1]) for c in crosses):
                covered.update(t[1])
        good = [i for i, st in enumerate(s.status) if st == "g"]
        if not s.policy.cross_check_after_faults or all(i in covered for i in good):
            return False
        racks = {d for d, _p, _t in s.bad_racks}
        ends = {b for _a, b, _t in s.bad_links}
        members = [i for i in good if s.dom[i] not in racks and i not in ends]
        if len(members) < 2 or all(i in covered for i in members):
            return False
        s.notes.append(f"{sum(1 for i in members if i not in covered)} node(s) the parallel cross check could not "
                       "hold (partners, suspects since cleared) were checked across the cluster afterwards")
        self.new_case("cross", "giant", members=members)
        return True

    def explained(self, nodes: Sequence[int]) -> bool:
        """Whether a failing test is accounted for by a fault already named."""
        s = self.s
        members = set(nodes)
        if any(s.status[i] in ("b", "x", "i") for i in nodes):
            return True
        if any(a in members and b in members for a, b, _ in s.bad_links):
            return True
        doms = {s.dom[i] for i in nodes}
        return len(doms) > 1 and any(d in doms for d, _, _ in s.bad_racks)

    def reopen(self) -> bool:
        """Re-investigate the oldest failure nothing explains and nothing contradicted.

        A flip in the middle of a search can send it down a wrong branch; the
        failing set it started from is still on record, so look again (bounded).
        """
        s = self.s
        if s.reopens >= MAX_REOPENS:
            return False
        screens: list[int] = []
        other: int | None = None
        for tid, (_r, nodes, tag, outcome, _m, _w) in enumerate(s.tests):
            if outcome == "P" or len(nodes) < 3 or tag not in ("screen", "cross", "retest", "search", "block"):
                continue
            if self.explained(nodes):
                continue
            members = set(nodes)
            if any(t[3] == "P" and members <= set(t[1]) for t in s.tests[tid + 1:]):
                continue  # a later run of the same nodes (or more) passed: it was noise
            if any(str(j) in s.pairs and members <= set(s.tests[j][1]) for j in range(tid + 1, len(s.tests))):
                continue  # a later per-pair Job measured each of them with every other member: read there
            if tag == "screen":
                screens.append(tid)
            elif other is None:
                other = tid
        if not screens and other is None:
            return False
        r, nodes, tag = s.tests[other][:3] if other is not None else (0, (), "")
        if (not screens and tag == "cross" and self._blocks_apply(list(nodes))
                and not any(t[2] == "block" for t in s.tests[other + 1:])):
            # the rack probes' failures were all noise: the blocks are the normal next step after
            # a failing cross check, not a second look (it does not count against the limit)
            self.mark(nodes, "g")
            self.new_case("cross", "blocks", members=list(nodes), origin=[other])
            return True
        s.reopens += 1
        if screens:  # disjoint screen groups: run each once more, all in one round
            for tid in screens:
                nodes = s.tests[tid][1]
                self.mark(nodes, "g")
                self.new_case("group", "retest", members=list(nodes), origin=[tid])
            s.notes.append(f"{len(screens)} screen failure(s) were still unexplained; ran them again")
            return True
        self.mark(nodes, "g")
        s.notes.append(f"round {r} {tag} failure of {len(nodes)} node(s) was still unexplained; searched it again")
        self.new_case("search", "split", members=list(nodes), origin=[other])
        return True

    def add(self, case: dict, slot: str, nodes: Sequence[int], tag: str) -> None:
        overlap = {i for i in nodes if i in self.busy and i not in self.claimed}
        if overlap:  # a planner bug would break node-disjointness; refuse loudly
            raise AssertionError(f"node {sorted(overlap)[:3]} planned twice in one round")
        self.busy.update(nodes)
        self.claimed.difference_update(nodes)
        self.planned.append((tuple(sorted(nodes)), tag, case["id"], slot))

    def helper(self, x: int, avoid: Iterable[int] = (), mode: str = "own-first",
               exclude_domains: Iterable[int] = ()) -> int | None:
        """A proven-good partner for ``x`` that is free this round.

        ``mode``: "own" (same domain only), "own-first" (same domain, else the
        nearest other one), "other" (another domain, not in ``exclude_domains``).
        """
        s = self.s
        avoid = set(avoid)
        # a named bad link's other end is no neutral partner: their test fails for the link
        avoid.update(b if a == x else a for a, b, _t in s.bad_links if x in (a, b))
        excluded = set(exclude_domains)
        d = s.dom[x]

        passed = self.passed()

        def ok(i: int) -> bool:
            return (s.status[i] == "g" and i in passed and i not in self.busy and i not in self.claimed
                    and i not in self.reserved and i not in avoid and i != x)

        if mode in ("own", "own-first"):
            lo = x
            while lo > 0 and s.dom[lo - 1] == d:
                lo -= 1
            i = lo
            while i < len(s.names) and s.dom[i] == d:
                if ok(i):
                    return i
                i += 1
            if mode == "own":
                return None
        n = len(s.names)
        for step in range(1, n):  # nearest other domains first keeps partners spread
            i = (x + step) % n
            if s.dom[i] == d or s.dom[i] in excluded:
                continue
            if ok(i):
                return i
        return None

    def passed(self) -> set[int]:
        """Nodes in at least one passing test. Only these are partners: a node cleared by
        inference alone (e.g. the far end of a named link) may still be slow itself, and a
        partner's fault would be read as the suspect's (docs/design/050, proven-good)."""
        if self._passed is None:
            self._passed = {i for t in self.s.tests if t[3] == "P" for i in t[1]}
        return self._passed

    def solo_test(self, case: dict, x: int, slot: str, tag: str, avoid: Iterable[int] = (),
                  mode: str = "own-first", exclude_domains: Iterable[int] = ()) -> tuple | None:
        """``x`` with a proven-good partner (or alone when single-node tests are allowed)."""
        if self.s.policy.min_group_size <= 1 and mode != "other":
            return (slot, [x], tag)
        h = self.helper(x, avoid, mode, exclude_domains)
        if h is None:
            return None
        used = case.setdefault("used", {})
        used[str(x)] = used.get(str(x), []) + [h]
        self.claimed.add(h)
        return (slot, [x, h], tag)

    # -- screen ------------------------------------------------------------------
    def _plan_screen(self, case: dict) -> list:
        return [(f"g{i}", g, "screen") for i, g in enumerate(case["groups"])]

    def _done_screen(self, case: dict) -> bool:
        failing = []
        marginal = []
        for i, g in enumerate(case["groups"]):
            outcome, tid = self.result(case, f"g{i}")
            if outcome == "P":
                self.mark(g, "g")
            else:
                self.mark(g, "s")
                failing.append((g, tid))
                if outcome == "M":
                    marginal.append(tid)
        multi = len(case["groups"]) > 1
        if failing and len(marginal) == len(failing) and multi and self.s.policy.cross_check == "full":
            # Only results near the threshold (bandwidth noise, common among thousands of pair
            # screens): the all-node cross check contains these nodes too, so let it decide.
            self.new_case("cross", "giant", members=list(range(len(self.s.names))), marginal=marginal,
                          width=len(case["groups"]))
            return False
        if failing and len(marginal) == len(failing) and multi and self.s.policy.cross_check == "representatives":
            # the representatives' group does not contain them: re-run them beside it, same round
            # (on their own, no partners: the representatives are claimed this round)
            for g, tid in failing:
                self.open_group(g, [tid], recheck=max(len(case["groups"]), WIDE_ROUND + 1))
            self.new_case("cross", "repgroup", members=list(range(len(self.s.names))))
            return False
        if (failing and multi and not any(self.slow(tid) or "timeout" in self.s.tests[tid][5] for _g, tid in failing)
                and self._cross_in_pairs({"step": "giant"}, range(len(self.s.names)))):
            # Only crashes (and results near the threshold): under the error model a flip reads as a
            # crash, and so does a dead or intermittent node. The cross check runs when they turn out
            # to be noise anyway; as one per-pair Job it measures each of these nodes with every other
            # node now (a dead node fails every transfer, an intermittent one a share, a healthy one
            # none), so no re-run, third run or partner test of theirs is needed (docs/design/050)
            crashed = [tid for _g, tid in failing if tid not in marginal]
            self.new_case("cross", "giant", members=list(range(len(self.s.names))), marginal=marginal,
                          crashed=crashed, width=len(case["groups"]))
            return False
        pol = self.s.policy
        crashed = [(g, tid) for g, tid in failing if tid not in marginal and not self.slow(tid)
                   and "timeout" not in self.s.tests[tid][5]]
        if crashed and multi and pol.link_check == "pairwise" and not pol.cross_check_after_faults:
            # Crashes the cross check does not take (a measured fault beside them skips it, or it
            # is no per-pair Job here): a flip reads as a crash, and so do a dead and an
            # intermittent node. One per-pair Job over all of them (with proven-good partners up to
            # CRASH_JOB_MIN nodes) measures each against the others in one round: 2 node-rounds per
            # crashed pair instead of a re-run and a third run (4); a dead node fails every transfer,
            # an intermittent one a share, a healthy one none (docs/design/050)
            self.new_case("pairwise", "run", members=sorted(i for g, _t in crashed for i in g),
                          origin=[t for _g, t in crashed], screens=[t for _g, t in crashed],
                          width=len(case["groups"]))
        else:
            crashed = []
        # Among many parallel screen pairs two flips on one pair happen: a failing pair
        # is run once more on its own before partner tests can convict on one failure.
        recheck = len(case["groups"]) if len(case["groups"]) > WIDE_ROUND else 0
        for g, tid in failing:
            if (g, tid) not in crashed:
                self.open_group(g, [tid], recheck=recheck)
        if failing and multi and self.s.policy.cross_check == "full" and self.s.policy.cross_check_after_faults:
            # the cross check runs beside the follow-ups (rounds are node-disjoint): a link or uplink
            # elsewhere is then measured while the screen failures are settled, not after them
            self.new_case("cross", "giant", members=[], parallel=True)
        if failing:
            if multi and self.s.policy.cross_check != "none" and not self.s.policy.cross_check_after_faults:
                self.s.notes.append(
                    f"cross-group check skipped: {len(failing)} screen group(s) failed; cross-rack links and "
                    "rack uplinks are certified by a clean diagnose run after repair")
        elif multi and self.s.policy.cross_check == "full":
            self.new_case("cross", "giant", members=list(range(len(self.s.names))))
        elif multi and self.s.policy.cross_check == "representatives":
            self.new_case("cross", "repgroup", members=list(range(len(self.s.names))))
        return False

    def open_group(self, members: list[int], origin: list[int], recheck: int = 0, strict: bool = False) -> None:
        """A failing screen group; ``recheck`` = the width of a wide screen round (0: narrow).

        ``strict``: its nodes passed an earlier screen (a block after the cross check), so a
        pair failing inside it already disagrees with one result: confirm before naming.
        """
        if recheck and origin and self.slow(origin[-1]):
            # measured clearly below the bar: under the error model a flip never reads as a slow
            # measurement (it reads as a crash), so this failure is not one of the wide round's
            # flips; the partner tests that follow are the second, independent observation
            recheck = 0
        if len(members) == 1:  # a single-node test failed (minGroupSize 1): only the node explains it
            first = self.s.tests[origin[-1]][3] if origin else "F"
            self.new_case("node", "confirm", member=members[0], fails=1 if first == "F" else 0, passes=0,
                          origin=list(origin), partners=[])
            return
        if len(members) == 3 and not recheck and not strict and origin and self.slow(origin[-1]):
            self.new_case("triple", "split", members=list(members), origin=list(origin))
            return
        if len(members) <= 3:
            # a link, too, needs one failure more than two flips; among thousands of screen
            # pairs three flips on one pair happen as well: the node is confirmed once more
            extra = {"need": 3, "strict": recheck > WIDE_ROUND ** 2} if recheck else {}
            if strict:
                extra["strict"] = True
            self.new_case("suspects", "together" if recheck else "solo", members=list(members),
                          origin=list(origin), **extra)
        else:
            self.new_case("group", "pairs", members=list(members), origin=list(origin),
                          **({"strict": True} if strict else {}))

    # -- group: a failing screen group, split into pairs -------------------------
    @staticmethod
    def _pairs(members: list[int]) -> list[list[int]]:
        pairs = [members[i:i + 2] for i in range(0, len(members), 2)]
        if len(pairs) > 1 and len(pairs[-1]) == 1:
            last = pairs.pop()
            pairs[-1] = pairs[-1] + last
        return pairs

    def _plan_group(self, case: dict) -> list:
        if case["step"] == "pairs":
            return [(f"p{i}", p, "pairs") for i, p in enumerate(self._pairs(case["members"]))]
        return [("all", case["members"], "retest")]

    def _done_group(self, case: dict) -> bool:
        if case["step"] == "pairs":
            failing = False
            for i, p in enumerate(self._pairs(case["members"])):
                outcome, tid = self.result(case, f"p{i}")
                if outcome == "P":
                    self.mark(p, "g")
                else:
                    failing = True
                    self.new_case("suspects", "solo", members=list(p), origin=case["origin"] + [tid],
                                  **({"strict": True} if case.get("strict") else {}))
            if failing:
                return False
            case["step"] = "retest"
            return True
        outcome, tid = self.result(case, "all")
        if outcome == "P":
            self.mark(case["members"], "g")
            self.s.notes.append(
                f"screen failure of {len(case['members'])} node(s) not reproduced (round {self.s.tests[tid][0]}); "
                "treated as a flaky result")
            return False
        self.mark(case["members"], "g")
        self.new_case("search", "split", members=list(case["members"]), origin=case["origin"] + [tid])
        return False

    # -- suspects: 2-3 nodes that failed together --------------------------------
    def _plan_suspects(self, case: dict) -> list | None:
        step = case["step"]
        members = case["members"]
        if step in ("solo", "linkcheck"):
            tests = []
            for i, x in enumerate(members):
                avoid = case.get("used", {}).get(str(x), []) + members
                t = self.solo_test(case, x, f"s{i}", "solo" if step == "solo" else "confirm", avoid)
                if t is None:
                    return WAIT
                tests.append(t)
            return tests
        if step == "together":
            return [("all", members, "retest")]
        if step == "foreign":
            tests = []
            doms = {self.s.dom[x] for x in members}
            used_doms: set[int] = set()
            for i, x in enumerate(members):
                t = self.solo_test(case, x, f"f{i}", "cross-probe", members, mode="other",
                                   exclude_domains=doms | used_doms)
                if t is None:  # only these domains exist: fall back to partners across the pair
                    t = self.solo_test(case, x, f"f{i}", "cross-probe", members, mode="other",
                                       exclude_domains={self.s.dom[x]})
                if t is None:
                    return WAIT
                used_doms.add(self.s.dom[t[1][1]])
                tests.append(t)
            return tests
        raise AssertionError(step)

    def _exact_failures(self, case: dict, marginal_weight: float = 1.0) -> float:
        """How often exactly this pair failed on its own (the only direct link evidence)."""
        members = set(case["members"])
        weight = {"F": 1.0, "M": marginal_weight}
        return sum(weight.get(self.s.tests[t][3], 0.0) for t in case["origin"] if set(self.s.tests[t][1]) == members)

    def _exact_passes(self, case: dict) -> int:
        """How often exactly this pair passed on its own."""
        members = set(case["members"])
        return sum(1 for t in case["origin"] if self.s.tests[t][3] == "P" and set(self.s.tests[t][1]) == members)

    def _last_exact_failure(self, case: dict) -> int | None:
        members = set(case["members"])
        hits = [t for t in case["origin"] if set(self.s.tests[t][1]) == members and self.s.tests[t][3] == "F"]
        return hits[-1] if hits else None

    def _link_proven(self, case: dict) -> bool:
        """Two own failures of the pair, or one on top of a search that deduced the pair.

        A pair that came out of a wide round (one of hundreds of parallel rack probes)
        needs a third failure: among that many tests two flips on one pair happen.
        """
        e = self._exact_failures(case)
        need = case.get("need", 2)
        members = set(case["members"])
        if any(self.slow(t) and set(self.s.tests[t][1]) == members for t in case["origin"]):
            # the pair itself read clearly slow: a flip never reads as a slow measurement (error
            # model), so one such run is the pair's own evidence; its ends' partner passes rule
            # out a slow end
            return True
        return e >= need or (e >= need - 1 and case.get("deduced", False))

    def _done_suspects(self, case: dict) -> bool:
        step = case["step"]
        members = case["members"]
        same_domain = len({self.s.dom[x] for x in members}) == 1
        needed = 2 if case.get("ctx", "node") == "node" else 1  # partner checks before a link
        if step == "together":
            outcome, tid = self.result(case, "all")
            case["origin"] = case["origin"] + [tid]
            crashes = self._crash_disagreement(case)
            own = sum(1 for t in case["origin"] if set(self.s.tests[t][1]) == set(members)
                      and self.s.tests[t][3] == "F")
            alone = crashes == "disagree" and own >= 2  # beyond one flip: a probe even without a per-pair Job to join
            if crashes and (alone or not case.get("probed")):
                # the pair's own runs crashed and passed (or crashed twice), never slow: a flip or
                # an intermittent member, and one Job with proven-good partners tells which. One
                # crash beside a pass is one flip: a probe of its own (2 + 8 node-rounds; at p = 5 %
                # hundreds of flipped pairs would each claim 8 partners) only once the pair crashed
                # twice beside its pass; before that, and after two crashes (a dead node reads the
                # same), it joins a per-pair Job of the cross check when one runs this round, else
                # the pair runs once more or goes to its partner tests, as before
                self.mark(members, "s")
                self.new_case("probe", "run", members=list(members), origin=list(case["origin"]),
                              **({} if alone else {"ride_only": "solo" if crashes == "twice" else "together",
                                                   **{k: case[k] for k in ("need", "strict") if k in case}}))
                return False
            if outcome == "P":
                passes = self._exact_passes(case)
                # One against one: a third run decides (a marginal result weighs half: it never
                # convicts alone, one clean pass settles it). But once both ends passed with
                # proven-good partners only a link is left to explain the pair's failures, and a
                # link's prior is far below a flip's: as many passes as failures clear the pair (a
                # link missed this way still fails the all-node check that runs when nothing else
                # was found).
                fails = self._exact_failures(case, marginal_weight=0.5)
                settled = case.get("solo_ok", 0) >= 1 and case.get("ctx", "node") == "node" and passes >= fails
                if fails >= passes and not settled:
                    self.mark(members, "s")
                    return True
                self.mark(members, "g")  # the pair failure (or the deduction) did not hold up
                first = self.s.tests[case["origin"][0]] if case["origin"] else None
                if first is not None and first[2] == "screen" and first[3] != "P":
                    self.s.notes.append(f"screen failure of {len(members)} node(s) not reproduced (round {first[0]}); "
                                        "treated as a flaky result")
                return False
            case["deduced"] = False
            if same_domain:
                if case.get("solo_ok", 0) >= needed and self._link_proven(case):
                    self.convict_link(members[0], members[1], case["origin"], case.get("family"))
                    return False
                passes = self._exact_passes(case)
                if case.get("solo_ok", 0) >= needed:
                    case["step"] = "together"
                elif not case.get("solo_ok") and "need" in case and passes and self._exact_failures(case) - passes < 2:
                    # a wide-round pair that failed, passed, failed: most likely a twice-flipped healthy
                    # pair (two flips against one plus a bad node's prior): one more run of the pair
                    # settles that for 2 node-rounds; partner tests (4) only if it fails again
                    case["step"] = "together"
                else:
                    case["step"] = "linkcheck" if case.get("solo_ok", 0) else "solo"
            else:
                if case.get("foreign_ok") and self._link_proven(case):
                    self.convict_link(members[0], members[1], case["origin"], case.get("family"))
                    return False
                case["step"] = "together" if case.get("foreign_ok") else "foreign"
            self.mark(members, "s")
            return True
        slot = "f" if step == "foreign" else "s"
        res = [self.result(case, f"{slot}{i}") for i in range(len(members))]
        case["origin"] = case["origin"] + [tid for _, tid in res]
        fails = [(x, o, tid) for x, (o, tid) in zip(members, res) if o != "P"]
        if step == "foreign":
            if not fails:
                case["foreign_ok"] = True
                if len(members) > 2:
                    self.new_case("search", "split", members=list(members), origin=case["origin"])
                    return False
                if self._link_proven(case):
                    self.convict_link(members[0], members[1], case["origin"], case.get("family"))
                    return False
                case["step"] = "together"
                return True
            for x, _o, tid in fails:
                partner = [i for i in self.s.tests[tid][1] if i != x][0]
                others = [m for m in members if m != x]
                linked = others[0] if len(members) == 2 and self._exact_failures(case) else -1
                self.new_case("rack", "confirm", member=x, origin=case["origin"], partners=[partner],
                              link=linked, peer=self.s.dom[others[0]] if others else -1)
            return False
        for x, (o, _tid) in zip(members, res):
            if o == "P" and self.s.status[x] not in ("b", "i"):
                self.s.status[x] = "g"
        if fails and case.get("ctx") == "link":
            # These nodes already passed their screen: one failed partner test is more
            # likely a flip than a node fault. Count per node and test again.
            tally = case.setdefault("tally", {})
            for x, (o, tid) in zip(members, res):
                t = tally.setdefault(str(x), [0, 0])
                if o != "F" or self.explains(x, tid):  # clearly slower than x has read: not x's
                    t[0 if o == "F" else 1] += 1
            bad = [x for x in members if tally[str(x)][0] >= 2]
            for x in bad:
                self.convict_node(x, [t for t in case["origin"] if x in self.s.tests[t][1]])
            if bad:
                for x in members:
                    if x not in bad:
                        self.mark([x], "g")
                return False
            case["step"] = "linkcheck"
            self.mark(members, "s")
            return True
        if fails:
            direct = self._exact_failures(case, marginal_weight=0.0) >= 1
            pair_tid = self._last_exact_failure(case)
            self._doubt_passing_mates(case, fails, pair_tid)
            if (step == "solo" and len(fails) == 1 and fails[0][1] == "F" and direct and not case.get("strict")
                    and self.slow(pair_tid) and self.slow(fails[0][2])  # crashes are confirmed (intermittent?)
                    and self.consistent(fails[0][2], pair_tid)
                    and not self._faster(fails[0][2], pair_tid)):
                # the pair failed, its mate passed with a good partner, this node failed with
                # one (at the pair's magnitude when both were measured): any other explanation
                # needs two independent flips (a pair clearly slower than that had another
                # bottleneck, the mate: ``_doubt_passing_mates``; the node is then confirmed)
                x, _o, tid = fails[0]
                self.convict_node(x, case["origin"])
                return False
            if (step == "solo" and len(fails) == len(members) == 2 and direct and not case.get("strict")
                    and self.fault_density() <= 1 / WIDE_ROUND
                    and self.slow(pair_tid) and all(o == "F" and self.slow(t) for _x, o, t in fails)
                    and min(self.ratio(t) for _x, _o, t in fails) <= self.ratio(pair_tid) + MAGNITUDE_TOLERANCE):
                # both ends read slow beside proven-good partners and the slower of them matches the
                # pair's figure: two measured bottlenecks (a flip never reads slow); a wrong one would
                # need a second fault on its partner test (a bad partner whose own screen flipped:
                # p times the share of bad screens, so only where few screens failed)
                for x, _o, _t in fails:
                    self.convict_node(x, [t for t in case["origin"] if x in self.s.tests[t][1]])
                return False
            # both ends failing goes to one confirmation each with new partners: a bad partner
            # or a link on the partner test must not convict the second node
            # the pair's own failures count for a lone failing end once its mates passed with
            # proven-good partners (a crash-only node: intermittent or not, see _done_node)
            extra = int(self._exact_failures(case, marginal_weight=0.0)) if len(fails) == 1 else 0
            for x, o, tid in fails:
                self.new_case("node", "confirm", member=x, fails=1 if o == "F" else 0, passes=case.get("solo_ok", 0),
                              crashes=1 if o == "F" and not self.slow(tid) else 0,
                              origin=[t for t in case["origin"] if x in self.s.tests[t][1]],
                              partners=case.get("used", {}).get(str(x), []),
                              mates=[m for m in members if m != x], **({"extra": extra} if extra else {}))
            return False
        case["solo_ok"] = case.get("solo_ok", 0) + 1
        if len(members) == 3:
            self.new_case("search", "split", members=list(members), origin=case["origin"])
            return False
        if case["solo_ok"] >= needed and self._link_proven(case):
            self.convict_link(members[0], members[1], case["origin"], case.get("family"))
            return False
        self.mark(members, "s")
        if case["solo_ok"] >= needed:  # the ends are proven; the pair itself must fail once more
            case["step"] = "together"
        else:
            # second partners only once the pair's own failures would prove a link; else the pair first
            case["step"] = "linkcheck" if self._link_proven(case) else "together"
        if case["step"] == "together" and self._one_crash(case):
            # a screen pair that crashed once and passed a partner test: instead of one more run of
            # the pair (an intermittent member passes it half the time and is cleared), the shared
            # probe of this round reads each member against proven-good partners (``_plan_probe``)
            self.new_case("probe", "run", members=list(members), origin=list(case["origin"]), ride_only="together",
                          **{k: case[k] for k in ("need", "strict", "solo_ok", "used", "ctx") if k in case})
            return False
        return True

    def _one_crash(self, case: dict) -> bool:
        """A node-context screen pair whose only own failure is one crash (no figure), with the
        per-pair check at hand: a flip or an intermittent member (docs/design/050, intermittent)."""
        s = self.s
        members = set(case["members"])
        if s.policy.link_check != "pairwise" or case.get("ctx", "node") != "node" or len(members) != 2:
            return False
        own = [t for t in case["origin"] if set(s.tests[t][1]) == members and s.tests[t][3] != "P"]
        return len(own) == 1 and s.tests[own[0]][3] == "F" and s.tests[own[0]][4] is None

    def _crash_disagreement(self, case: dict) -> str | bool:
        """Whether a wide-round pair's own runs point at an intermittent member (docs/design/050,
        intermittent): every failure a crash (no magnitude), and a crash beside a pass of the same
        membership ("disagree"), or two crashes ("twice": a dead node reads the same). Only with
        the per-pair check (it measures each member with several partners in one Job), only for
        a wide round's screen pair (a search's pair is a link doubt) and only before partner tests."""
        s = self.s
        if (s.policy.link_check != "pairwise" or case.get("ctx", "node") != "node" or len(case["members"]) != 2
                or "need" not in case):
            return False
        members = set(case["members"])
        own = [t for t in case["origin"] if set(s.tests[t][1]) == members]
        if any(s.tests[t][3] == "M" or self.slow(t) for t in own):
            return False  # a measured reading is magnitude evidence: the partner tests decide
        crashes = sum(1 for t in own if s.tests[t][3] == "F")
        passes = sum(1 for t in own if s.tests[t][3] == "P")
        if case.get("solo_ok"):
            return False  # the ends passed with partners: a link question (convict_link)
        if crashes >= 1 and passes >= 1:
            return "disagree"
        return "twice" if crashes >= 2 else False

    # -- probe: a crash-only pair, each member measured with proven-good partners ----
    # One pairwise Job holds the pair and up to PROBE_PARTNERS proven-good partners, so each
    # member runs a transfer with every partner in one round: an intermittent member fails a
    # share of them (two or more, completing others), a dead one fails all, a healthy one none
    # (a flip crashes the whole Job, not one transfer). Repeated once (new partners) when a
    # member failed exactly one transfer or the Job died; never clears a member that failed.
    def _plan_probe(self, case: dict) -> list | None:
        members = case["members"]
        if not case.get("runs"):
            ride = next((c for c in self.s.cases if c["kind"] == "pairwise" and c.get("widen")
                         and c["id"] > case["id"]), None)
            if ride is not None:
                # a per-pair Job over the proven-good nodes runs this round: the pair joins it
                # and its reading decides (``_done_pairwise``), one Job and no partners claimed
                ride["riders"] = sorted(set(ride.get("riders", [])) | set(members))
                ride["origin"] = sorted(set(ride["origin"]) | set(case["origin"]))
                self.s.notes.append(f"pair {', '.join(self.s.names[i] for i in members)} (crashed and passed "
                                    "together) joined the per-pair check of the cross check")
                return None
            fallback = case.pop("ride_only", "")
            if fallback == "together" and self.batch is not None:
                # a crash beside a pass: instead of one more run of the pair (a majority of three
                # clears an intermittent member that passed twice), the pair joins this round's
                # shared probe, which holds the proven-good partners once for every such pair
                host, at = self.batch
                nodes, tag, cid, slot = self.planned[at]
                self.planned[at] = (tuple(sorted(set(nodes) | set(members))), tag, cid, slot)
                self.busy.update(members)
                case["host"], case["batched"] = host, fallback
                return []
            if fallback == "together":  # the first such pair this round hosts the shared probe
                case["batched"] = fallback
            elif fallback:  # no per-pair check to join: the partner tests or one more run, as before
                case["kind"], case["step"], case["probed"] = "suspects", fallback, True
                return self._plan_suspects(case)
        avoid = list(members) + [p for ps in case.get("used", {}).values() for p in ps]
        partners: list[int] = []
        for _ in range(PROBE_PARTNERS):
            x = members[len(partners) % len(members)]
            h = self.helper(x, avoid + partners)
            if h is None:
                break
            partners.append(h)
            self.claimed.add(h)
        if not partners:
            if case.pop("batched", ""):  # no partner free: one more run of the pair, as before
                case["kind"], case["step"], case["probed"] = "suspects", "together", True
                return self._plan_suspects(case)
            return WAIT
        used = case.setdefault("used", {})
        used["p"] = used.get("p", []) + partners
        if case.get("batched") and not case.get("runs"):
            self.batch = (case["id"], len(self.planned))  # add() appends the group next
        return [("all", list(members) + partners, "pairwise")]

    def _done_probe(self, case: dict) -> bool:
        s = self.s
        _o, tid = self.result({"id": case.pop("host", case["id"])}, "all")  # a shared probe: its host's
        batched = case.pop("batched", "")
        case["origin"] = case["origin"] + [tid]
        members = case["members"]
        nodes = s.tests[tid][1]
        data = s.pairs.get(str(tid))
        runs = int(case.get("runs", 0)) + 1
        case["runs"] = runs
        own = [t for t in case["origin"] if set(s.tests[t][1]) == set(members)]
        pair_crashes = sum(1 for t in own if s.tests[t][3] == "F")
        pair_passes = sum(1 for t in own if s.tests[t][3] == "P")
        if data is None and batched:
            # the shared probe died as a whole (a flip reads as a crash): the pair runs once more,
            # as it would have without the probe
            case["kind"], case["step"], case["probed"] = "suspects", "together", True
            return True
        if data is None:
            if s.tests[tid][4] is None and runs < PROBE_RUNS and len(members) > 1:
                return True  # the Job died as a whole (a flip reads as a crash): once more
            if len(members) == 1:  # no figures: the third crash with partners, and no pass (as before)
                self.convict_node(members[0], case["origin"])
                return False
            # no per-pair figures (the runner gives none, or the Job died twice): partner tests
            self.new_case("suspects", "solo", members=list(members), origin=list(case["origin"]))
            return False
        m = len(nodes)
        tally = case.setdefault("tally", {})
        dead = set(data["nodes"]) - {x for x, _k, _t in data.get("intermittent", [])}
        some = {x: k for x, k, _t in data.get("intermittent", [])}
        one = {x for x, _k, mates in data.get("crashed", []) if not set(mates) <= set(members)}
        between = {x for x, _k, mates in data.get("crashed", []) if mates and set(mates) <= set(members)}
        partners = [i for i in nodes if i not in members]
        behind = case.setdefault("uplink", {})  # member -> [the rack whose open uplink explains its Job]
        for x in members:
            # [failed transfers, transfers, failed transfers with the mate (either end's)]
            t = tally.setdefault(str(x), [0, 0, 0])
            if x in between:
                t[2] += 1
            uplink = self.open_uplink(x, partners)
            if uplink is None:
                behind.pop(str(x), None)
            else:
                behind[str(x)] = [uplink]  # a case's dict values are lists (the codec keeps them so)
            if x in dead:
                if data["slow"] >= m - 1 and not data.get("failed") and uplink is None:
                    self.convict_node(x, case["origin"])  # slow with every proven-good partner
                    continue
                t[0] += m - 1
            elif x in some:
                t[0] += some[x]
            elif x in one:
                t[0] += 1
            t[1] += m - 1
        undecided = []
        for x in members:
            if s.status[x] in ("b", "i"):
                continue
            fails, tests, _with_mate = tally[str(x)]
            if fails >= 2 and (fails < tests or pair_passes):
                # both outcomes, failures with two or more proven-good partners: beyond the noise
                # model (a flip crashes the whole Job); neither healthy nor its partners' fault
                self.mark_intermittent(x, fails, tests, case["origin"])
            elif fails >= 3 and str(x) not in behind:
                self.convict_node(x, case["origin"])  # failed every transfer and never passed: dead
            elif fails:
                undecided.append(x)
        named = [x for x in members if s.status[x] in ("b", "i")]
        clean = [x for x in members if x not in named and not tally[str(x)][0]]
        if not named:  # a failed transfer between the two ends: either may be the one
            undecided += [x for x in clean if tally[str(x)][2]]
            clean = [x for x in clean if x not in undecided]
        if undecided and runs < PROBE_RUNS:
            return True
        for x in undecided:
            fails, tests, with_mate = tally[str(x)]
            mate = f" and {with_mate} with its pair-mate" if with_mate else ""
            before = (f"pair's {pair_crashes} crash(es)" if len(members) > 1
                      else f"{case.get('crashes', 0)} crashes with partners")
            if str(x) in behind:
                rack = s.domain_names[behind[str(x)][0]] or "unlabelled"
                why = (f"its partners were all across the uplink of {rack}, which no passing test has "
                       "cleared: a degraded uplink reads the same")
            else:
                why = "too few to name it intermittent, too many to clear it"
            self.unresolved([x], f"failed {fails} of {tests} transfers with proven-good partners{mate} beside its "
                            f"{before}: {why}", [t for t in case["origin"] if x in s.tests[t][1]])
        if named or undecided:
            self.mark(clean, "g")  # the failures are its mate's: a clean member is not blamed
        elif max(pair_crashes, case.get("crashes", 0)) >= 2 and not case.get("passes"):
            # neither member failed a transfer, yet the pair crashed twice together: more than one
            # flip explains (O(p^2)); an intermittent member that did not show this time is possible
            if len(members) == 1:
                self.unresolved(members, f"crashed {case.get('crashes', 0)} times with proven-good partners and "
                                "never passed, yet completed every transfer of the per-pair check: it may fail "
                                "intermittently", case["origin"])
            else:
                self.unresolved(members, f"crashed {pair_crashes} of {len(own)} runs together, yet both completed "
                                "every transfer with proven-good partners: one of them may fail intermittently",
                                case["origin"])
        else:
            self.mark(members, "g")
            first = s.tests[own[0]][0] if own else s.round
            s.notes.append(f"screen failure of {len(members)} node(s) not reproduced (round {first}): the pair "
                           "crashed once, then completed every transfer with proven-good partners; treated as a "
                           "flaky result")
        return False

    def _doubt_passing_mates(self, case: dict, fails: list, pair_tid: int | None) -> None:
        """A group runs at its slowest member: when the pair read clearly slower (MATE_GAP) than
        every failing member did with a proven-good partner, none of them explains the pair's
        figure, so a member that passed its partner test is slow too and that pass was the flip
        (a flip reads healthy). Such a mate is confirmed with a new partner, the unexplained pair
        figure counting as its first failure, instead of being cleared by one pass."""
        r_pair = self.ratio(pair_tid) if self.slow(pair_tid) else None
        if r_pair is None:
            return
        solos = [self.ratio(tid) if self.slow(tid) else None for _x, _o, tid in fails]
        if any(r is None or r < r_pair + MATE_GAP for r in solos):
            return  # a failing member (or a crash) can explain the pair's figure
        failing = {x for x, _o, _t in fails}
        for m in case["members"]:
            if m in failing or self.s.status[m] in ("b", "i"):
                continue
            self.s.notes.append(f"pair {', '.join(self.s.names[i] for i in case['members'])} read {r_pair:.2f} of the "
                                f"baseline, below what its failing member read alone; {self.s.names[m]} is confirmed")
            self.s.status[m] = "s"
            self.new_case("node", "confirm", member=m, fails=1, passes=1, gap=True,
                          origin=[t for t in case["origin"] if m in self.s.tests[t][1]],
                          partners=case.get("used", {}).get(str(m), []), mates=sorted(failing))

    # -- triple: a screen of three (an odd rack) that read slow ---------------------
    # Round 1 after the screen runs (a, b) and c with a proven-good partner: a slow c is named
    # (the triple is slow, (a, b) passed together, c is slow beside a good node), a slow (a, b)
    # becomes a failing pair. Both passing leaves a link (a, c) or (b, c): (a, c) with b beside
    # a partner, then (b, c). Every end of the named link has passed twice (a partner test or
    # a passing pair holding it), so a link is named at most 3 rounds after the screen, a node
    # at most 2 (solo tests of all three first, as before, take 4 rounds for a link).
    def _plan_triple(self, case: dict) -> list | None:
        a, b, c = case["members"]
        step = case["step"]
        if step == "bc":
            return [("bc", [b, c], "retest")]
        if step == "ends":
            tests = []
            for i, x in enumerate(case["ends"]):
                t = self.solo_test(case, x, f"e{i}", "confirm", case.get("used", {}).get(str(x), []) + case["members"])
                if t is None:
                    return WAIT
                tests.append(t)
            return tests
        pair, lone = ((a, b), c) if step == "split" else ((a, c), b)
        t = self.solo_test(case, lone, "lone", "solo" if step == "split" else "confirm",
                           case.get("used", {}).get(str(lone), []) + case["members"])
        if t is None:
            return WAIT
        return [("pair", list(pair), "pairs"), t]

    def _done_triple(self, case: dict) -> bool:
        a, b, c = case["members"]
        step = case["step"]
        s = self.s
        if step in ("split", "ac"):
            (po, ptid), (lo, ltid) = self.result(case, "pair"), self.result(case, "lone")
            case["origin"] = case["origin"] + [ptid, ltid]
            pair, lone = ([a, b], c) if step == "split" else ([a, c], b)
            if lo != "P":
                if (po == "P" and step == "split" and self.slow(ltid) and self.consistent(ltid, case["origin"][0])
                        and not self._faster(ltid, case["origin"][0])):
                    self.convict_node(lone, [t for t in case["origin"] if lone in s.tests[t][1]])
                else:
                    self.new_case("node", "confirm", member=lone, fails=1 if lo == "F" else 0, passes=0,
                                  origin=[t for t in case["origin"] if lone in s.tests[t][1]],
                                  partners=case.get("used", {}).get(str(lone), []), mates=pair)
                if po == "P":
                    self.mark(pair, "g")
                else:
                    self.new_case("suspects", "solo", members=pair, origin=case["origin"])
                return False
            if po != "P":
                self.mark([lone], "g")
                if step == "split":
                    self.new_case("suspects", "solo", members=pair, origin=case["origin"])
                    return False
                # (a, c) slow: a passed in (a, b), c beside one partner; one partner test each
                case["step"], case["ends"], case["link"] = "ends", [a, c], [a, c]
                return True
            case["step"] = "ac" if step == "split" else "bc"
            return True
        if step == "bc":
            o, tid = self.result(case, "bc")
            case["origin"] = case["origin"] + [tid]
            if o != "P":  # b: (a, b) and a partner; c: two partners and (a, c): only the link is left
                self.convict_link(b, c, case["origin"])
                return False
            self.mark(case["members"], "g")
            self.new_case("search", "split", members=list(case["members"]), origin=case["origin"])
            return False
        res = [self.result(case, f"e{i}") for i in range(len(case["ends"]))]
        case["origin"] = case["origin"] + [tid for _o, tid in res]
        bad = [(x, o) for x, (o, _t) in zip(case["ends"], res) if o != "P"]
        for x, o in bad:
            self.new_case("node", "confirm", member=x, fails=1 if o == "F" else 0, passes=1,
                          origin=[t for t in case["origin"] if x in s.tests[t][1]],
                          partners=case.get("used", {}).get(str(x), []), mates=[m for m in case["link"] if m != x])
        if not bad:
            self.convict_link(case["link"][0], case["link"][1], case["origin"])
        else:
            self.mark([m for m in case["members"] if m not in {x for x, _o in bad}], "g")
        return False

    # -- node: one suspect, tested with new partners until two results agree -----
    def _plan_node(self, case: dict) -> list | None:
        x = case["member"]
        # never the mate it failed with: a pass beside it would say nothing about x alone
        mates = case.get("mates", [])
        past = case.get("exclude", [])  # racks whose open uplink would read as x (``boundary_doubt``)
        t = self.solo_test(case, x, "x", "confirm", case["partners"] + mates, exclude_domains=past)
        if t is None:
            t = self.solo_test(case, x, "x", "confirm", mates, exclude_domains=past)
        if t is None:
            return WAIT
        case["partners"] = case["partners"] + [t[1][1]] if len(t[1]) > 1 else case["partners"]
        return [t]

    def _done_node(self, case: dict) -> bool:
        outcome, tid = self.result(case, "x")
        case["origin"] = case["origin"] + [tid]
        x = case["member"]
        if case.pop("gap", False) and outcome == "F" and self.slow(tid) and self.explains(x, tid):
            # the pair's unexplained figure and now a slow reading beside a proven-good partner:
            # two measured observations against one pass (the flip)
            self.convict_node(x, case["origin"])
            return False
        if outcome == "F" and self.explains(x, tid):
            case["fails"] += 1
            if not self.slow(tid):
                case["crashes"] = case.get("crashes", 0) + 1
        else:  # a marginal result never convicts (near the bar is what a healthy node can read),
            # nor does a failure slower than x has ever read (its partner was the slow one)
            case["passes"] += 1
        f, q = case["fails"], case["passes"]
        crash_only = case.get("crashes", 0) >= f - 1 and not any(  # a pairwise Job's figure is its slowest pair's
            self.slow(t) for t in case["origin"] if x in self.s.tests[t][1] and self.s.tests[t][2] not in PAIR_TAGS)
        if crash_only:
            # crashes only: a job dying is what flips and intermittent faults look like, so a
            # node is named bad on three crashes and no pass; two and a pass make it intermittent,
            # and so do three counting the failures of its pair whose mate passed without it
            if f >= 2 and q == 0 and self.s.policy.link_check == "pairwise":
                # two crashes with partners and no pass: dead, or intermittent and unlucky (1 in 4
                # at a crash rate of 1/2; then it crashed its screen and re-run too). The third
                # look is one per-pair Job with proven-good partners instead of a third partner
                # test: a dead node fails every transfer (bad), an intermittent one some
                # (Intermittent); a Job that died as a whole is the third crash (``_done_probe``)
                self.mark([x], "s")
                self.new_case("probe", "run", members=[x], origin=list(case["origin"]), crashes=f)
                return False
            if f >= 3 and q == 0:
                self.convict_node(x, case["origin"])
                return False
            if (f >= 2 or f + case.get("extra", 0) >= 3) and q >= 1:
                f += case.get("extra", 0)  # reported with the pair failures that count for it
                self.mark_intermittent(x, f, f + q, case["origin"])
                return False
        elif ((f >= 2 and q == 0 and f - case.get("crashes", 0) >= 2) or f >= q + 2 + case.get("crashes", 0)) \
                and self._agreeing_slow(x, case["origin"]) >= 2:
            # measured slow twice: a crash is no magnitude (an intermittent partner or a flip
            # reads as one), so it never makes up the second slow reading
            self.convict_node(x, case["origin"])
            return False
        if f >= 2 and q >= 2:
            # both outcomes twice with proven-good partners: more disagreement than the noise
            # model's independent flips explain (O(p^2)); neither healthy nor its partners' fault
            self.mark_intermittent(x, f, f + q, case["origin"])
            return False
        mine = [t for t in self.s.tests if x in t[1] and t[3] == "F"]
        if (q >= 2 and self.s.policy.link_check == "pairwise" and not case.get("probed")
                and len(mine) >= 2 and all(t[4] is None for t in mine)):
            # two crashes (one with a proven-good partner, one in its pair whose mate passed without
            # it), then passes: two flips on one node (O(p^2), but among hundreds of pairs) or an
            # intermittent node; the per-pair probe decides instead of clearing it
            self.mark([x], "s")
            self.new_case("probe", "run", members=[x], origin=list(case["origin"]), crashes=f + case.get("extra", 0),
                          passes=q)
            return False
        if q >= 2:
            self.mark([x], "g")
            self._doubt_cleared_mates(case, x)
            return False
        self.mark([x], "s")
        return True

    def _doubt_cleared_mates(self, case: dict, x: int) -> None:
        """``x`` is cleared, yet a pair holding it read slow: a flip never reads slow, so that
        figure had a bottleneck. A mate cleared by one pass (a flip reads healthy) is confirmed
        with a new partner, the pair's figure counting as its first failure, instead of leaving
        the figure unexplained until the all-node cross check finds the node (n node-rounds)."""
        s = self.s
        for m in case.get("mates", []):
            if s.status[m] != "g" or any(a in (x, m) and b in (x, m) for a, b, _t in s.bad_links):
                continue
            pair = [t for t, test in enumerate(s.tests) if set(test[1]) == {x, m} and self.slow(t)]
            passes = sum(1 for test in s.tests if m in test[1] and test[3] == "P" and len(test[1]) <= 3)
            if not pair or passes >= 2 or not self.explains(m, pair[-1]):
                continue
            s.notes.append(f"pair {s.names[x]}, {s.names[m]} read slow and {s.names[x]} passed twice alone; "
                           f"{s.names[m]}, cleared by one pass, is confirmed")
            s.status[m] = "s"
            self.new_case("node", "confirm", member=m, fails=1, passes=passes, gap=True,
                          origin=[t for t in case["origin"] if m in s.tests[t][1]] + pair,
                          partners=[p for t in s.tests if m in t[1] and t[3] == "P" and len(t[1]) == 2
                                    for p in t[1] if p != m], mates=[x])

    def _faster(self, tid: int, group_tid: int) -> bool:
        """Whether test ``tid`` read clearly faster (MATE_GAP) than the group ``group_tid``: then
        the group's figure came from someone else in it (a slow NIC whose tests inside its rack
        ran over NVLink and passed), so ``tid`` alone does not convict."""
        r, g = self.ratio(tid), self.ratio(group_tid)
        return r is not None and g is not None and self.slow(group_tid) and r > g + MATE_GAP

    def _agreeing_slow(self, x: int, origin: Sequence[int]) -> int:
        """How many of ``x``'s slow readings x itself can explain now. A failure counted when
        it came in stops counting once x read clearly faster (MATE_GAP) beside another partner (a
        group runs at its slowest member: that earlier partner was slower than x), so readings
        at different magnitudes with different partners are one observation of x, not two."""
        floor = self.floor(x)
        return sum(1 for t in set(origin) if x in self.s.tests[t][1] and self.slow(t)
                   and (self.ratio(t) or 0.0) >= floor - MATE_GAP)

    def _crossing_agrees(self, x: int, origin: Sequence[int], intra: int) -> bool:
        """Whether x's reading inside its rack matches one of its measured crossing failures
        (within MATE_GAP): then one bottleneck, x, explains both. Crossing failures all clearly
        slower than x read inside its rack had another bottleneck (its uplink; issue 15, found case
        `rack-probe-inside-reading-is-not-the-crossing-one`); unmeasured ones say nothing."""
        r = self.ratio(intra) or 0.0
        crossing = [self.ratio(t) for t in origin if x in self.s.tests[t][1] and self.slow(t)
                    and self.s.tests[t][2] not in PAIR_TAGS and not self.inside(t)]
        return not crossing or any(c >= r - MATE_GAP for c in crossing if c is not None)

    # -- rack: a crossing test failed for one end; confirm with other nodes -------
    def _plan_rack(self, case: dict) -> list | None:
        s = self.s
        x = case["member"]
        d = s.dom[x]
        exclude = {d, case["peer"]} | {s.dom[p] for p in case["partners"]}
        tests = []
        intra = self.helper(x, case["partners"], mode="own")
        if intra is not None:
            self.claimed.add(intra)
            tests.append(("intra", [x, intra], "confirm"))
        mate = self.helper(x, case["partners"], mode="own")
        probe_from = mate if mate is not None else (x if intra is None else None)
        if probe_from is not None:
            self.claimed.add(probe_from)
            far = self.helper(probe_from, case["partners"], mode="other", exclude_domains=exclude)
            if far is None:
                far = self.helper(probe_from, case["partners"], mode="other", exclude_domains={d})
            if far is not None:
                self.claimed.add(far)
                tests.append(("cross", [probe_from, far], "cross-probe"))
        if not tests:
            return WAIT
        return tests

    def _done_rack(self, case: dict) -> bool:
        x = case["member"]
        intra = self.result(case, "intra")
        cross = self.result(case, "cross")
        tids = case["origin"] + [r[1] for r in (intra, cross) if r]
        if intra and intra[0] != "P":
            if cross and cross[0] != "P":
                self.new_case("node", "confirm", member=x, fails=1, passes=0, origin=tids,
                              partners=case["partners"])
            elif (intra[0] == "F" and self.slow(intra[1]) and (self.ratio(intra[1]) or 0.0) >= self.floor(x) - MATE_GAP
                  and self._crossing_agrees(x, case["origin"], intra[1])):
                # slow inside its own rack too, at the magnitude of its crossing failures: a node fault
                self.convict_node(x, tids)
            elif intra[0] == "F" and self.slow(intra[1]):
                # inside its rack clearly slower than x read elsewhere: the partner or their link
                # was slower, and x's crossing failures the uplink can explain; one more partner
                mate = [i for i in self.s.tests[intra[1]][1] if i != x]
                self.new_case("node", "confirm", member=x, fails=0, passes=0, origin=tids,
                              partners=case["partners"] + mate)
            elif intra[0] == "F":  # crashed inside its rack: crash evidence (its partner may be the one)
                mate = [i for i in self.s.tests[intra[1]][1] if i != x]
                self.new_case("node", "confirm", member=x, fails=1, crashes=1, passes=0, origin=tids,
                              partners=case["partners"] + mate)
            else:  # only marginal inside the rack: confirm before naming anyone
                self.new_case("node", "confirm", member=x, fails=0, passes=0, origin=tids,
                              partners=case["partners"])
            return False
        if cross and cross[0] != "P":
            self.convict_rack(self.s.dom[x], case["peer"], tids)
            return False
        if case["link"] >= 0:  # neither the node nor its rack: the pair itself, if it fails again
            a, b = sorted((x, case["link"]))
            self.new_case("suspects", "together", members=[a, b], origin=tids, ctx="link", deduced=False)
        else:
            self.mark([x], "g")
        return False

    # -- cross: everything passed its screen; check across groups -----------------
    def _plan_cross(self, case: dict) -> list:
        if case.get("parallel") and case["step"] == "giant":
            # beside the follow-ups: every proven-good node no other case runs or claimed this round
            passed = self.passed()
            s = self.s
            case["members"] = [i for i, st in enumerate(s.status) if st == "g" and i in passed
                               and i not in self.busy and i not in self.claimed and i not in self.reserved]
            if len(case["members"]) < 2:
                return None  # nothing to check beside them: the late cross check runs after them
        if case["step"] in ("giant", "repgroup"):
            nodes = case["members"] if case["step"] == "giant" else self._reps()
            return [("all", nodes, CROSS_PAIRS if self._cross_in_pairs(case, nodes) else "cross")]
        if case["step"] == "blocks":  # never a node another case runs (or claimed) this round
            free = [i for i in case["members"] if i not in self.busy and i not in self.claimed]
            case["groups"] = self._blocks(free)
            return [(f"k{i}", g, "block") for i, g in enumerate(case["groups"])]
        case["groups"] = self._rep_pairs()
        return [(f"r{i}", g, "rack-probe") for i, g in enumerate(case["groups"])]

    def _cross_in_pairs(self, case: dict, nodes: Sequence[int]) -> bool:
        """Whether the all-node cross check runs as one per-pair Job (docs/design/050, "The cross
        check in pairs"): with ``linkCheck: pairwise`` the Job that would follow a failing
        all-node group holds the same nodes and certifies every pair, so it is the check itself
        and a link, rack or hidden bad node costs n after the screen, not 2n. The cross check
        beside the follow-ups (``crossCheckAfterFaults``) stays a collective: its per-pair Job
        gathers the nodes and crash-only pairs that come free meanwhile (``_widen``)."""
        pol = self.s.policy
        return (case["step"] == "giant" and pol.link_check == "pairwise" and not pol.cross_check_after_faults
                and not case.get("parallel") and not case.get("no_pairs") and len(nodes) >= 3)

    def _reps(self) -> list[int]:
        seen: dict[int, int] = {}
        for i, d in enumerate(self.s.dom):  # never a node another case runs (or claimed) this round
            if d not in seen and self.s.status[i] == "g" and i not in self.busy and i not in self.claimed:
                seen[d] = i
        return list(seen.values())

    def _rep_pairs(self) -> list[list[int]]:
        """Pairs of rack representatives; none when fewer than two racks have a free one (a
        group of one crosses no boundary, and a lone probe once read as a one-node "link")."""
        reps = self._reps()
        return self._pairs(reps) if len(reps) >= 2 else []

    def _done_cross(self, case: dict) -> bool:
        if case["step"] in ("giant", "repgroup"):
            outcome, tid = self.result(case, "all")
            if self.s.tests[tid][2] == CROSS_PAIRS:
                return self._done_cross_pairs(case, outcome, tid)
            self._settle_marginal(case, passed=outcome == "P")
            if outcome == "P":
                return False
            case["origin"] = [tid]
            if case["step"] == "giant" and self.s.policy.link_check == "pairwise" and not case.get("no_pairs"):
                # one Job measures every pair of the failed set: a slow node, rack or link shows
                # in its pairs directly (see _done_pairwise)
                self.new_case("pairwise", "run", members=list(case["members"]), origin=[tid],
                              **({"widen": True} if case.get("parallel") else {}))
                return False
            return self._after_cross(case)
        if case["step"] == "blocks":
            return self._done_blocks(case)
        failing = []
        for i, g in enumerate(case["groups"]):
            outcome, tid = self.result(case, f"r{i}")
            if outcome != "P":
                failing.append((g, tid))
        for g, tid in failing:
            self.new_case("suspects", "foreign", members=list(g), origin=case["origin"] + [tid], ctx="link",
                          need=3 if len(case["groups"]) > WIDE_ROUND else 2)
        if not failing:
            return self._to_blocks(case)
        return False

    def _done_cross_pairs(self, case: dict, outcome: str, tid: int) -> bool:
        """The cross check ran as one per-pair Job: its pairs are read like the per-pair Job after
        a failing cross check (``_done_pairwise``). A Job that died without a figure is run again
        (a flip crashes whole Jobs; ``PAIRWISE_TRIES`` in all), then the collective and the
        narrowing search; a runner that gave one figure and no pairs gets the narrowing at once."""
        s = self.s
        data = s.pairs.get(str(tid))
        measured = s.tests[tid][4]
        if outcome != "P" and data is None:
            tries = int(case.get("retried", 0)) + 1
            riders = bool(case.get("crashed"))
            if measured is None and tries < (RIDER_TRIES if riders else PAIRWISE_TRIES):
                case["retried"] = tries
                return True
            if measured is None and riders:
                # it died again with crashed screens aboard: a dead node among them kills every Job
                # that holds it, so they are settled on their own first (re-run, partners), and the
                # cross check runs after them if they turn out to be noise (late_cross_check)
                s.notes.append(f"the cross check's per-pair Job died {tries} times; the crashed screens are "
                               "settled first")
                self._settle_marginal(case, passed=False)
                return False
            case["no_pairs"] = True
            if measured is None:  # every try died: the collective cross check, then the narrowing
                case.pop("retried", None)
                return True
            case["origin"] = [tid]
            self._settle_marginal(case, passed=False)
            return self._after_cross(case)
        clean = outcome == "P" or (data is not None and not data["slow"] and not data.get("failed"))
        self._settle_marginal(case, passed=clean, measured_pairs=data is not None)
        if clean:
            self.mark(case["members"], "g")
            return False
        case.update(kind="pairwise", step="run", origin=[])
        return self._done_pairwise(case)

    def _settle_marginal(self, case: dict, passed: bool, measured_pairs: bool = False) -> None:
        """Screens that came out near the threshold rode in the cross check: cleared by its pass
        (or by every pair of theirs read in it), else opened like failing screens."""
        marginal = case.pop("marginal", [])
        crashed = case.pop("crashed", [])
        width = case.pop("width", 0)
        for m in marginal + crashed:
            if measured_pairs or (passed and m in marginal):
                if passed:
                    self.mark(self.s.tests[m][1], "g")
            else:  # a crash is not settled by one passing collective: an intermittent node passes some
                self.open_group(list(self.s.tests[m][1]), [m], recheck=width if width > WIDE_ROUND else 0)
        if marginal and passed:
            self.s.notes.append(f"{len(marginal)} screen result(s) near the threshold; cleared by the passing "
                                "cross check that contains them")
        if crashed and measured_pairs:
            self.s.notes.append(f"screen failure of {len(crashed)} group(s) that crashed measured pair by pair in "
                                "the cross check" + ("; not reproduced, every pair above the bar (treated as flaky "
                                                     "results)" if passed else ""))

    def _after_cross(self, case: dict) -> bool:
        """The narrowing after a failing cross check, without per-pair figures."""
        if len(self._reps()) >= 2 and any(self.s.domain_names):
            case["step"] = "reps"
            return True
        return self._to_blocks(case)

    # -- pairwise: every pair of a failed set measured in one Job ------------------
    def _plan_pairwise(self, case: dict) -> list:
        if case.get("widen"):
            self._widen(case)
        if case.get("screens") and len(case["members"]) < CRASH_JOB_MIN:
            # too few crashed nodes to measure each against several others: proven-good partners
            have = list(case["members"])
            while len(case["members"]) < CRASH_JOB_MIN:
                h = self.helper(have[len(case["members"]) % len(have)], case["members"])
                if h is None:
                    break
                self.claimed.add(h)
                case["members"] = sorted(case["members"] + [h])
        return [("all", case["members"], "pairwise")]

    def _widen(self, case: dict) -> None:
        """The per-pair Job after a cross check that ran beside the follow-ups also measures the
        proven-good nodes that check could not hold and that are free now (their pairs with every
        other node, so no second cross check is needed for them), and the members of crash-only
        pairs waiting for a probe (``_plan_probe`` hands them over: each is measured against every
        other member, more transfers than a probe's partners give)."""
        s = self.s
        passed = self.passed()
        have = set(case["members"])
        extra = [i for i, st in enumerate(s.status) if st == "g" and i in passed and i not in have
                 and i not in self.busy and i not in self.claimed and i not in self.reserved]
        extra += [x for x in case.pop("riders", []) if x not in have]
        case["members"] = sorted(have.union(extra))

    def _done_pairwise(self, case: dict) -> bool:
        """Read the per-pair figures: a node slow with (nearly) every partner is a bad node, a
        rack whose every boundary-crossing pair is slow while pairs inside pass is a bad rack,
        and a slow pair neither explains is a bad link. Each is the second observation after
        the failing cross check, and a measured slow pair is not a flip (flips crash whole jobs).
        Without figures (the job died or the runner gave none) the narrowing falls back to
        representatives, blocks and the halving search."""
        s = self.s
        _o, tid = self.result(case, "all")
        origin = case["origin"] + [tid]
        data = s.pairs.get(str(tid))
        members = case["members"]
        if case.get("screens") and (data is None or (not data["slow"] and not data.get("failed"))):
            return self._done_crash_job(case, tid, data)
        if data is None and s.tests[tid][4] is None and int(case.get("retried", 0)) < PAIRWISE_TRIES - 1:
            # the job died (a flip reads as a crash): again before the search, which costs many n
            case["retried"] = int(case.get("retried", 0)) + 1
            return True
        if data is None:
            fallback = self.new_case("cross", "giant", members=list(members), origin=case["origin"], no_pairs=True)
            if not self._after_cross(fallback):
                s.cases.remove(fallback)
            return False
        if not data["slow"] and not data.get("failed"):
            self.mark(members, "g")
            s.notes.append(f"round {s.tests[tid][0]}: every pair of {len(members)} nodes measured above the bar; "
                           "the failing cross check was not reproduced (treated as a flaky result)")
            return False
        doubted: set[int] = set()
        shared = set(data.get("shared", ()))
        behind_open = self._behind_open(data, members)
        for x in data["nodes"]:
            if x in behind_open and s.status[x] != "b":  # an open uplink reads the same (_behind_open)
                doubted.add(x)
                self._confirm_past(x, behind_open[x], 1)
                continue
            if x in shared and s.status[x] != "b":
                # slow with nearly every partner here, yet each of its slow partners is slow with
                # others too: its partners may be the slow ones (NIC faults that NVLink-only tests
                # inside a rack never show, a degraded uplink), whether or not it passed before.
                # One test with a proven-good partner decides, not this Job alone.
                s.status[x] = "s"
                doubted.add(x)
                self.new_case("node", "confirm", member=x, fails=1, passes=0, crashes=0,
                              origin=[t for t in origin if x in s.tests[t][1]], partners=[], mates=[])
                continue
            self.convict_node(x, [t for t in origin if x in s.tests[t][1]])
        for x, fails, tests in data.get("intermittent", []):
            self.mark_intermittent(x, fails, tests, [t for t in origin if x in s.tests[t][1]])
        for d in data["racks"]:
            peer = next((e for e in sorted({s.dom[i] for i in members}) if e != d), -1)
            self.convict_rack(d, peer, origin)
        many = data["unexplained"] > MAX_PAIR_LINKS
        if many:
            self.unresolved(sorted({i for a, b, _m in data["links"] for i in (a, b)}),
                            f"{data['unexplained']} slow pairs that no single node, rack or link explains", origin)
        else:
            for a, b, _m in data["links"]:
                self.convict_link(a, b, origin)
        follow = {x: (fails, mates) for x, fails, mates in data.get("crashed", [])
                  if s.status[x] not in ("b", "i", "x") and x not in doubted}
        if not many:
            self.mark([i for i in members if s.status[i] in ("u", "s") and i not in follow and i not in doubted], "g")
        for x, (fails, mates) in sorted(follow.items()):
            # a failed transfer or two: crash evidence, too little to name anyone (a healthy end
            # fails its one transfer with a crashing node); confirmed with proven-good partners
            s.status[x] = "s"
            self.new_case("node", "confirm", member=x, fails=fails, crashes=fails, passes=0,
                          origin=[t for t in origin if x in s.tests[t][1]], partners=[], mates=list(mates))
        return False

    def _behind_open(self, data: dict, members: Sequence[int]) -> dict[int, list[int]]:
        """The nodes a per-pair Job read slow with every partner whose slow pairs an open rack
        uplink explains, with that rack: all partners in one other open rack, or (for a node that
        passed before, being bad would need a flip) none inside its own open rack; and, with no
        rack, those beside fewer than two members that ever passed a test (a small Job of crashed
        screens: two bad partners read the same; issue 15, found case `job-of-unproven-partners`).
        Each is confirmed with a proven-good partner instead of named on the Job."""
        s = self.s
        out = {x: [d] for x, d in data.get("sided", ()) if d in self.open_racks()}
        passed = self.passed()
        dead = set(data.get("dead", ()))  # (failed transfers with every partner: its own, named)
        for x in data["nodes"]:  # slow beside fewer than two partners that ever passed: theirs may be the faults
            if x not in out and x not in dead and sum(1 for i in members if i != x and i in passed) < 2:
                out[x] = []
        inside = set(data.get("inside", ()))
        for x in data["nodes"]:
            if x not in out and x not in inside and x in self.passed() and s.dom[x] in self.open_racks():
                out[x] = [s.dom[x]]
        for x, ys in data.get("partners", ()):
            if x not in out and x not in dead and self._passed_without(x, ys):
                racks = self._path_doubt(x, ys)
                if racks is not None:
                    out[x] = racks
        return out

    def _passed_without(self, x: int, partners: Sequence[int]) -> bool:
        """Whether ``x`` passed a test that held none of ``partners``: a pass beside a partner it
        then read slow with needs a flip whatever slowed their pair (x, the partner or a link
        between them), so it says nothing for x (two bad rack mates whose screen pair flipped to a
        pass were left unresolved when it counted)."""
        avoid = set(partners)
        return any(t[3] == "P" and x in t[1] and avoid.isdisjoint(t[1]) for t in self.s.tests)

    def _path_doubt(self, x: int, partners: Sequence[int]) -> list[int] | None:
        """For ``x`` that passed a test (bad only through a flip), slow in a per-pair Job beside
        ``partners``: the open racks behind its slow pairs when fewer than two pairs are left that
        neither an open uplink (its own or the partner's) nor a partner proven only inside its rack
        explains (the per-path rule of ``boundary_doubt``, pair by pair); None when two are left.
        Two faults (a link inside its rack, an uplink across) once read as one slow node."""
        s = self.s
        if self._crossers is None:
            self._crossers = crossing_passers(s.tests, s.dom)
        racks = self.open_racks()
        sides = [behind(x, (x, y), s.dom, racks, own=True) for y in partners]
        sides = [UNPROVEN if d is None and s.dom[y] != s.dom[x] and y not in self._crossers else d
                 for d, y in zip(sides, partners)]
        if unexplained_failures(sides, True) >= 2:
            return None
        return sorted({d for d in sides if d is not None and d != UNPROVEN})

    def _done_crash_job(self, case: dict, tid: int, data: dict | None) -> bool:
        """The per-pair Job of crashed screens (``_done_screen``) when it read nothing against
        anyone: every pair above the bar clears them (each completed a transfer with every other
        member); a Job that died gives no figure: it runs once more, and after a second death the
        screens are opened as before (re-run; a dead node may kill every Job that holds it)."""
        s = self.s
        if data is None and s.tests[tid][4] is None and int(case.get("retried", 0)) < RIDER_TRIES - 1:
            case["retried"] = int(case.get("retried", 0)) + 1  # died (a flip reads as a crash): once more,
            return True  # 2 node-rounds per crashed pair against 4 for re-running them on their own
        if data is None:
            width = case.get("width", 0)
            for t in case["screens"]:
                self.open_group(list(s.tests[t][1]), [t], recheck=width if width > WIDE_ROUND else 0)
            s.notes.append(f"the per-pair Job of {len(case['screens'])} crashed screen group(s) died; they "
                           "were run again on their own")
            return False
        self.mark(case["members"], "g")
        s.notes.append(f"screen failure of {len(case['screens'])} group(s) that crashed not reproduced (round "
                       f"{s.tests[tid][0]}): every pair of theirs completed above the bar in one per-pair Job; "
                       "treated as flaky results")
        return False

    def _to_blocks(self, case: dict) -> bool:
        """The cross check failed and no rack probe did: screen the blocks (racks) again first.

        What is left is a node whose screen flipped to a pass, a link inside a rack whose
        ends were not screened together, a cross-rack link or a flipped cross check. One
        round of one group per block (n node-rounds, the price of the search's first
        split) puts the first two inside one block, where pairs and partners name them
        in two or three rounds, instead of a halving search over all nodes (about 2n).
        """
        if not self._blocks_apply(case["members"]):
            self.new_case("search", "split", members=list(case["members"]), origin=case["origin"])
            return False
        case["step"] = "blocks"
        return True

    def _blocks_apply(self, members: list[int]) -> bool:
        """Blocks pay off above MIN_BLOCK_NODES nodes; below, halving costs about the same
        and a block round would only add a round to a cross-rack link's search."""
        return len(members) > MIN_BLOCK_NODES and len(self._blocks(members)) >= 2

    def _blocks(self, members: list[int]) -> list[list[int]]:
        """``members`` cut at domain boundaries into blocks of at most BLOCK_SIZE nodes
        (chunks of ceil(sqrt(n)) without topology labels); no block of one node."""
        s = self.s
        cap = BLOCK_SIZE if any(s.domain_names) else max(2, min(BLOCK_SIZE, math.ceil(math.sqrt(len(members)))))
        out: list[list[int]] = []
        run: list[int] = []
        for i in sorted(members):
            if run and s.dom[i] != s.dom[run[-1]]:
                out.extend(self._chunks(run, cap))
                run = []
            run.append(i)
        if run:
            out.extend(self._chunks(run, cap))
        singles = [b for b in out if len(b) < 2]
        out = [b for b in out if len(b) >= 2]
        for b in singles:  # a lone node rides along with the previous block (never a test alone)
            if out:
                out[-1] = out[-1] + b
        return out

    @staticmethod
    def _chunks(members: list[int], cap: int) -> list[list[int]]:
        k = math.ceil(len(members) / cap)
        size = math.ceil(len(members) / k)
        return [members[i:i + size] for i in range(0, len(members), size)]

    def _done_blocks(self, case: dict) -> bool:
        """Failing blocks are opened like failing screen groups (confirming before naming);
        when every block passes, the fault crosses blocks: the halving search."""
        failing = []
        for i, g in enumerate(case["groups"]):
            outcome, tid = self.result(case, f"k{i}")
            if outcome != "P":
                failing.append((g, tid))
        width = len(case["groups"])
        for g, tid in failing:
            self.mark(g, "s")
            self.open_group(list(g), case["origin"] + [tid], recheck=width if width > WIDE_ROUND else 0,
                            strict=True)
        if not failing:
            self.new_case("search", "split", members=list(case["members"]), origin=case["origin"])
        return False

    # -- search: a set known to fail, no single node to blame ---------------------
    def _split(self, members: list[int]) -> tuple[list[int], list[int]]:
        if len(members) == 3:
            return members[:2], members[2:]
        mid = len(members) // 2
        doms = self.s.dom
        best = None
        for cut in range(1, len(members)):  # prefer a domain boundary near the middle
            if doms[members[cut]] != doms[members[cut - 1]]:
                if best is None or abs(cut - mid) < abs(best - mid):
                    best = cut
        if best is not None and len(members) // 4 <= best <= len(members) - len(members) // 4:
            mid = best
        return members[:mid], members[mid:]

    def _plan_search(self, case: dict) -> list:
        a, b = self._split(case["members"])
        tests = []
        if len(a) >= 2:
            tests.append(("A", a, "search"))
        if len(b) >= 2:
            tests.append(("B", b, "search"))
        return tests

    def _done_search(self, case: dict) -> bool:
        a, b = self._split(case["members"])
        ra, rb = self.result(case, "A"), self.result(case, "B")
        failed = False
        for half, r in ((a, ra), (b, rb)):
            if r and r[0] != "P":
                failed = True
                self.open_failing_set(half, case["origin"] + [r[1]])
        if not failed:
            self.open_bipartite(a, b, case["origin"] + [r[1] for r in (ra, rb) if r])
        return False

    def open_failing_set(self, members: list[int], origin: list[int]) -> None:
        if len(members) == 2:
            self.open_pair(members[0], members[1], origin, tested=True)
        else:
            self.new_case("search", "split", members=list(members), origin=origin)

    def open_pair(self, a: int, b: int, origin: list[int], tested: bool, family: int | None = None) -> None:
        """A pair the search narrowed to: tell node, link and rack apart.

        When the pair itself just failed, go straight to the partner tests;
        when it was only deduced, run it once on its own first.
        """
        if not tested:
            step = "together"
        else:
            step = "foreign" if self.s.dom[a] != self.s.dom[b] else "solo"
        self.new_case("suspects", step, members=[a, b], origin=origin, ctx="link", deduced=not tested,
                      family=family)

    def open_bipartite(self, a: list[int], b: list[int], origin: list[int], tested: bool = False,
                       family: int | None = None) -> None:
        if family is None:
            family = self.s.next_case
        if len(a) == 1 and len(b) == 1:
            self.open_pair(a[0], b[0], origin, tested, family)
        else:
            self.new_case("bipartite", "mix", A=list(a), B=list(b), origin=origin, family=family,
                          deduced=not tested)

    # -- bipartite: the fault crosses A x B ---------------------------------------
    @staticmethod
    def _halves(x: list[int]) -> tuple[list[int], list[int]]:
        h = (len(x) + 1) // 2
        return x[:h], x[h:]

    def _plan_bipartite(self, case: dict) -> list:
        a1, a2 = self._halves(case["A"])
        b1, b2 = self._halves(case["B"])
        if case["step"] == "mix":
            combos = [("m0", a1, b1), ("m1", a2, b2)]
        elif case["step"] == "swap":
            combos = [("s0", a1, b2), ("s1", a2, b1)]
        else:
            return [("all", case["A"] + case["B"], "retest")]
        return [(slot, x + y, "search") for slot, x, y in combos if x and y]

    def _done_bipartite(self, case: dict) -> bool:
        """Narrow a fault known to cross A x B by halving both sides.

        ``mix`` tests A1+B1 and A2+B2. If both pass the fault is in A1xB2 or A2xB1.
        Right after a real failure both cells are searched at once (their nodes are
        disjoint), which saves the round that would tell them apart; a cell that is
        only a hypothesis is instead tested whole (``swap``) so hypotheses never
        multiply. The first failure in a cell that had already failed once drops the
        remaining hypotheses of the same search.
        """
        a1, a2 = self._halves(case["A"])
        b1, b2 = self._halves(case["B"])
        origin = case["origin"]
        family = case.get("family")
        step = case["step"]
        if step == "verify":
            outcome, tid = self.result(case, "all")
            if outcome == "P":
                if not case.get("deduced"):
                    self.s.notes.append(f"a failing set of {len(case['A']) + len(case['B'])} nodes was not "
                                        "reproduced; treated as a flaky result")
            elif self.s.reopens < MAX_REOPENS:  # reproduced: a flip misled the narrowing; start over on it
                self.s.reopens += 1
                self.new_case("search", "split", members=sorted(case["A"] + case["B"]), origin=origin + [tid])
            else:
                self.unresolved(case["A"] + case["B"],
                                "the set fails but no part of it can be narrowed down (intermittent fault?)",
                                origin + [tid])
            return False
        slots = ("m0", "m1") if step == "mix" else ("s0", "s1")
        cells = [(a1, b1), (a2, b2)] if step == "mix" else [(a1, b2), (a2, b1)]
        failed = False
        for slot, (x, y) in zip(slots, cells):
            r = self.result(case, slot)
            if r and r[0] != "P":
                failed = True
                self.open_bipartite(x, y, origin + [r[1]], tested=True, family=family)
        if failed:
            if not case.get("deduced"):
                self.failed_families.add(family)
            return False
        if step == "swap":
            case["step"] = "verify"
            return True
        left = [(x, y) for x, y in ((a1, b2), (a2, b1)) if x and y]
        if len(left) == 1:
            self.open_bipartite(left[0][0], left[0][1], origin, tested=False, family=family)
            return False
        if not left:
            case["step"] = "verify"
            return True
        if case.get("deduced"):
            case["step"] = "swap"
            return True
        for x, y in left:
            self.open_bipartite(x, y, origin, tested=False, family=family)
        return False


def _case_nodes(case: Mapping) -> list[int]:
    nodes: list[int] = []
    for key in ("members", "A", "B"):
        v = case.get(key)
        if isinstance(v, list):
            nodes.extend(v)
    if "member" in case:
        nodes.append(case["member"])
    if case.get("kind") == "cross":
        return []  # nodes stay usable as partners: the cross check doubts pairs, not nodes
    if case.get("kind") == "screen":
        return [i for g in case["groups"] for i in g]
    return nodes


def decode_pairs(slow: Sequence[tuple[int, int, float]], members: Sequence[int], dom: Sequence[int],
                 labelled: bool, failed: Sequence[tuple[int, int]] = (),
                 known: Iterable[tuple[int, int]] = ()) -> dict:
    """What a pairwise test's slow pairs and failed transfers say (pure; run once when the
    result is recorded).

    A node slow with at least PAIR_NODE_SHARE of the partners it was measured with is a bad
    node; a rack whose measured boundary-crossing pairs (among the rest) are that slow is a bad
    rack; a slow pair neither explains is a link. A failed transfer has no figure: it is crash
    evidence (docs/design/050, failed measurements), never a slow pair, so it cannot make a
    node, rack or link slow. Failed transfers are charged to the node failing most of them
    (greedily, as long as one fails two or more): failing every transfer (three or more) names
    it bad, and so does failing all but what flips explain (``pair_noise.flips_explain``);
    failing some while more completed names it intermittent; what is left is at most
    one failed transfer per node (``crashed``: followed up, never convicted here). Only these
    findings are kept in the state, not the pairs (8 million at 4096 nodes). A slow pair on a
    ``known`` bad link (named before) is explained already: it counts for neither end, so the
    two ends of a named link are not both "slow with every partner" in a small set.
    """
    return decode_columns([x for a, b, _v in slow for x in (a, b)], [v for _a, _b, v in slow],
                          members, dom, labelled, failed, known)


def decode_columns(flat: Sequence[int], vals: list[float], members: Sequence[int], dom: Sequence[int],
                   labelled: bool, failed: Sequence[tuple[int, int]] = (),
                   known: Iterable[tuple[int, int]] = (),
                   lookup: Callable[[int, int], float | None] | None = None) -> dict:
    """``decode_pairs`` with the slow pairs as columns: ``flat`` their ends in turn (a0, b0, a1,
    b1, ...), ``vals`` their figures. A rack uplink at 4096 nodes is 65,000 slow pairs and the
    findings need only per-node counts and a few pairs: the pairs are read by a handful of
    C-level passes (degrees, the racks of both ends); a rack's boundary count is the sum of its
    nodes' crossing degrees; tuples are made only of the pairs that touch a suspect node, lie
    inside a rack, or are left unexplained. ``lookup(i, j)`` (i < j), where given, is the figure
    of pair i-j when it is one of the slow pairs, else None: the pairs inside a small rack are
    then looked up instead of found by a pass over all pairs."""
    m = len(members)
    fdeg: dict[int, int] = {}
    for a, b in failed:
        fdeg[a] = fdeg.get(a, 0) + 1
        fdeg[b] = fdeg.get(b, 0) + 1
    known = {(a, b) if a < b else (b, a) for a, b in known}
    explained: list[tuple[int, int]] = []
    if known and vals:
        hit = list(map(known.__contains__, zip(flat[0::2], flat[1::2])))
        if any(hit):
            explained = list(compress(zip(flat[0::2], flat[1::2]), hit))
            keep = list(map(not_, hit))
            flat = list(chain.from_iterable(compress(zip(flat[0::2], flat[1::2]), keep)))
            vals = list(compress(vals, keep))
        for a, b in explained:  # no evidence either way, as a failed transfer for the denominator
            fdeg[a] = fdeg.get(a, 0) + 1
            fdeg[b] = fdeg.get(b, 0) + 1
    n = len(vals)
    ia, ib = flat[0::2], flat[1::2]

    def touching(nodes: set[int]) -> list[tuple[int, int, float]]:
        """The slow pairs with an end in ``nodes`` (a few nodes: a few partners' worth)."""
        hit = map(or_, map(nodes.__contains__, ia), map(nodes.__contains__, ib))
        return [(ia[k], ib[k], vals[k]) for k in compress(range(n), hit)]

    deg = Counter(flat)
    # slow with nearly every partner measured (no node needs fewer than ``least``)
    least = max(2, math.ceil(PAIR_NODE_SHARE * (m - 1 - max(fdeg.values(), default=0))))
    bad = sorted(x for x, k in deg.items() if k >= least
                 and m >= 3 and k >= max(2, math.ceil(PAIR_NODE_SHARE * (m - 1 - fdeg.get(x, 0)))))
    inside_of = _InsidePairs(ia, ib, vals, dom, lookup, known)
    near: list[tuple[int, int, float]] = []  # the slow pairs touching a named node
    if bad and labelled:
        named = set(bad)
        uplink = _uplink_reads_same(named, {x: inside_of.degree(x) for x in named}, lambda: touching(named),
                                    members, dom, failed)
        bad = [x for x in bad if x not in uplink]
    if bad:
        near = touching(set(bad))
        # a slow node reads its own figure with every healthy partner and never faster (a pair
        # runs at its slowest end): readings clearly below its fastest one (MAGNITUDE_TOLERANCE)
        # were another bottleneck's, and do not count (the typical one, as before, let a pair at
        # 0.88 beside two at 0.35 name a node the 0.88 pair clears; issue 15, found case
        # `job-pair-faster-than-the-node-clears-it`)
        values: dict[int, list[float]] = {x: [] for x in bad}
        for a, b, v in near:
            if a in values:
                values[a].append(v)
            if b in values:
                values[b].append(v)
        agreeing = {}
        levels: dict[int, float] = {}
        for x, vs in values.items():
            level = levels[x] = max(vs) * (1.0 - MAGNITUDE_TOLERANCE)
            agreeing[x] = sum(1 for v in vs if v >= level)
        bad = [x for x in bad if agreeing[x] >= max(2, math.ceil(PAIR_NODE_SHARE * (m - 1 - fdeg.get(x, 0))))]
    bad_set = set(bad)
    near = [p for p in near if p[0] in bad_set or p[1] in bad_set] if bad_set else []
    # a named node none of whose slow partners is slow only with it: every pair that names it
    # has another slow end, which may be the bottleneck (several slow NICs that tests inside a
    # rack never showed); kept as "shared" for a confirmation when the node passed before
    clean: dict[int, int] = {}
    for a, b, _v in near:
        if a in bad_set and deg[b] == 1:
            clean[a] = clean.get(a, 0) + 1
        if b in bad_set and deg[a] == 1:
            clean[b] = clean.get(b, 0) + 1
    shared = sorted(x for x in bad if clean.get(x, 0) < 2)
    sided = _sided(near, bad, dom) if labelled else []
    partners = _few_inside(near, {x: levels[x] for x in bad}, dom) if labelled and bad else []
    # the pairs left to explain, as a mask over the columns (None: all of them)
    keep: list[bool] | None = None
    if bad_set:
        keep = list(map(not_, map(or_, map(bad_set.__contains__, ia), map(bad_set.__contains__, ib))))
    n_left = n if keep is None else sum(keep)
    left: list[tuple[int, int, float]] | None = None
    racks: list[int] = []
    if labelled and n_left:
        size = Counter(map(dom.__getitem__, members))
        for i in bad_set.intersection(members):
            size[dom[i]] -= 1
            if not size[dom[i]]:
                del size[dom[i]]
        total = sum(size.values())
        unmeasured: dict[int, int] = {}  # failed boundary-crossing transfers: no figure either way
        for a, b in list(failed) + explained:
            if dom[a] != dom[b] and a not in bad_set and b not in bad_set:
                unmeasured[dom[a]] = unmeasured.get(dom[a], 0) + 1
                unmeasured[dom[b]] = unmeasured.get(dom[b], 0) + 1
        # a rack's boundary-crossing slow pairs (among those left), counted once at each end:
        # the sum of its nodes' crossing degrees, less their crossing pairs with a named node
        off: Counter = Counter()
        for a, b, _v in near:
            if dom[a] != dom[b]:
                if a not in bad_set:
                    off[a] += 1
                if b not in bad_set:
                    off[b] += 1
        # (bounded first without the pairs inside racks: only a rack that can reach its share
        # has them counted)
        most: dict[int, int] = {}
        get = most.get
        for x, k in deg.items():
            most[dom[x]] = get(dom[x], 0) + k
        for x, k in off.items():
            most[dom[x]] -= k
        for x in bad_set:
            most[dom[x]] -= deg[x]
        hits: dict[int, int] = {}
        for d, k in sorted(most.items()):
            crossing = size.get(d, 0) * (total - size.get(d, 0)) - unmeasured.get(d, 0)
            if crossing <= 0 or k < max(2, math.ceil(PAIR_NODE_SHARE * crossing)):
                continue
            k -= sum((a not in bad_set) + (b not in bad_set) for a, b, _v in inside_of.rack(d))
            hits[d] = k
            if k >= max(2, math.ceil(PAIR_NODE_SHARE * crossing)):
                racks.append(d)
                if len(size) == 2:
                    break  # two racks: one boundary, named once
        if racks:
            # drop the crossing pairs with an end in a named rack; when every pair left but
            # those inside the one named rack crosses into it, those are all that stay (no pass)
            rack_set = set(racks)
            own = [p for p in inside_of.rack(racks[0]) if p[0] not in bad_set and p[1] not in bad_set]
            if len(racks) == 1 and n_left - hits[racks[0]] == len(own):
                left = own
            else:
                same = inside_of.same()
                in_rack = list(map(rack_set.__contains__, map(dom.__getitem__, flat)))
                stay = list(map(or_, same, map(not_, map(or_, in_rack[0::2], in_rack[1::2]))))
                keep = stay if keep is None else list(map(and_, keep, stay))
    if left is None:
        left = list(zip(ia, ib, vals)) if keep is None else [(ia[k], ib[k], vals[k]) for k in compress(range(n), keep)]
    # a node that failed with a good share of its partners but far from all: its pairs disagree
    # with each other far beyond independent noise (a link is one pair, a bad node nearly all)
    # (its pairs explained by a named node or rack are no evidence either way; a node slow with
    # all the rest but what flips explain is not intermittent: its pairs stay to be explained)
    ldeg = _degrees(left)
    measured = {x: m - 1 - fdeg.get(x, 0) - (deg[x] - k) for x, k in ldeg.items()}
    intermittent = _flaky(left, ldeg, measured, m)
    flaky_set = {x for x, _k, _t in intermittent}
    left = sorted((a, b, v) for a, b, v in left if a not in flaky_set and b not in flaky_set)
    dead, some, follow = _charge_failures(failed, m, bad_set | flaky_set)
    bad.extend(x for x, _k in dead)
    intermittent.extend([x, k, m - 1] for x, k in some)
    # a bad node slow with a partner of its own rack: no rack uplink explains that pair, so the
    # verdict never folds it into its rack (docs/design/050, observationally equivalent faults)
    inside = sorted({x for a, b, _v in near if dom[a] == dom[b] for x in (a, b) if x in bad_set}
                    if labelled and bad_set else ())
    return {"nodes": sorted(bad), "racks": racks, "links": [list(x) for x in left[:MAX_PAIR_LINKS + 1]],
            "inside": inside, "unexplained": len(left), "slow": n, "failed": len(failed),
            "intermittent": sorted(intermittent), "crashed": sorted(follow), "shared": shared, "sided": sided,
            "dead": sorted(x for x, _k in dead), "partners": partners}


def _few_inside(near: Sequence[tuple[int, int, float]], levels: Mapping[int, float],
                dom: Sequence[int]) -> list[list]:
    """[node, its slow partners at its own figure] for each named node with fewer than two of them
    inside its rack (at most ``PATH_PARTNERS_MAX``): its crossing partners may be behind an open
    uplink or proven only inside their rack, which the planner weighs against what passed (issue
    15, found case seed14-6139). A node with two slow rack mates is evidence whatever crossed."""
    mates: dict[int, list[int]] = {x: [] for x in levels}
    for a, b, v in near:
        if a in mates and v >= levels[a]:
            mates[a].append(b)
        if b in mates and v >= levels[b]:
            mates[b].append(a)
    return [[x, sorted(ys)] for x, ys in sorted(mates.items())
            if sum(1 for y in ys if dom[y] == dom[x]) < 2 and len(ys) <= PATH_PARTNERS_MAX]


def _flaky(left: Sequence[tuple[int, int, float]], ldeg: Mapping[int, int], measured: Mapping[int, int],
           m: int) -> list[list[int]]:
    """[node, slow pairs, pairs measured] for each node slow with a good share of its partners but
    far from all (beyond what flips explain): intermittent. The most-failing first, and a pair with
    a node already found counts for neither end (it is that node's: with MNNVL a NIC-slow node is
    slow with every partner outside its NVLink domain, a share, and a healthy node slow only
    beside three of them was reported Intermittent; issue 15)."""
    need = max(3, math.ceil(PAIR_INTERMITTENT_SHARE * (m - 1)))
    if m < 5:
        return []
    out: list[list[int]] = []
    shared: Counter = Counter()  # node -> its slow pairs with nodes already found
    for x in sorted((x for x, k in ldeg.items() if k >= need), key=lambda x: (-ldeg[x], x)):
        k, t = ldeg[x] - shared[x], measured[x] - shared[x]
        if k < need or flips_explain(k, max(0, t - k)):
            continue
        out.append([x, k, t])
        shared.update(b if a == x else a for a, b, _v in left if x in (a, b))
    return sorted(out)


def _sided(near: Sequence[tuple[int, int, float]], bad: Iterable[int], dom: Sequence[int]) -> list[list[int]]:
    """[node, rack] for each named node whose slow partners all sit in one other rack: that rack's
    uplink slows the same pairs (the planner doubts the node when no pass has crossed it)."""
    sides: dict[int, set[int]] = {x: set() for x in bad}
    for a, b, _v in near:
        if a in sides:
            sides[a].add(dom[b])
        if b in sides:
            sides[b].add(dom[a])
    return sorted([x, min(ds)] for x, ds in sides.items() if len(ds) == 1 and min(ds) != dom[x])


class _InsidePairs:
    """The slow pairs with both ends in one rack, by rack, found when first asked for: looked up
    pair by pair in a small rack (when a lookup is given), else by one pass over all pairs."""

    def __init__(self, ia: Sequence[int], ib: Sequence[int], vals: Sequence[float], dom: Sequence[int],
                 lookup: Callable[[int, int], float | None] | None, known: set[tuple[int, int]]) -> None:
        self.ia, self.ib, self.vals, self.dom = ia, ib, vals, dom
        self.lookup, self.known = lookup, known
        self.by_rack: dict[int, list[tuple[int, int, float]]] = {}
        self.mask: list[bool] | None = None  # per pair: both ends in one rack (after a pass)
        self.degrees: dict[int, Counter] = {}  # rack -> node -> its pairs inside the rack

    def rack(self, d: int) -> list[tuple[int, int, float]]:
        if self.mask is None and d not in self.by_rack:
            rack = list(compress(range(len(self.dom)), map(eq, self.dom, repeat(d)))) if self.lookup else []
            if self.lookup is not None and len(rack) * (len(rack) - 1) <= max(128, len(self.vals) // 4):
                look, known = self.lookup, self.known
                found = []
                for k, x in enumerate(rack):
                    for y in rack[k + 1:]:
                        v = look(x, y)
                        if v is not None and (x, y) not in known:
                            found.append((x, y, v))
                self.by_rack[d] = found
            else:
                self.same()
        return self.by_rack.get(d, [])

    def same(self) -> list[bool]:
        """The pass: per pair, whether both ends lie in one rack."""
        if self.mask is None:
            ia, ib, vals, dom = self.ia, self.ib, self.vals, self.dom
            self.mask = list(map(eq, map(dom.__getitem__, ia), map(dom.__getitem__, ib)))
            self.by_rack = {}
            for k in compress(range(len(vals)), self.mask):
                self.by_rack.setdefault(dom[ia[k]], []).append((ia[k], ib[k], vals[k]))
        return self.mask

    def degree(self, x: int) -> int:
        """x's slow pairs inside its rack (a pair of x with itself counts twice)."""
        d = self.dom[x]
        if d not in self.degrees:
            pairs = self.rack(d)
            self.degrees[d] = Counter(map(itemgetter(0), pairs)) + Counter(map(itemgetter(1), pairs))
        return self.degrees[d][x]


def _degrees(pairs: Sequence[tuple]) -> Counter:
    """How many of ``pairs`` each node is an end of (counted by C-level iterators)."""
    out = Counter(map(itemgetter(0), pairs))
    out.update(map(itemgetter(1), pairs))
    return out


def _uplink_reads_same(named: set[int], inside_deg: Mapping[int, int],
                       touching: Callable[[], list[tuple[int, int, float]]], members: Sequence[int],
                       dom: Sequence[int], failed: Sequence[tuple[int, int]]) -> set[int]:
    """The ``named`` nodes (slow with nearly every partner) better read as their rack's uplink:
    each has partners of its own rack in the set, and its pairs with them are not slow at the
    magnitude of its boundary-crossing pairs (they pass, or read clearly slower: a link). A slow
    node reads its own figure with every partner, inside its rack or not; an uplink slows only
    the crossing pairs. Without a partner of its own rack nothing tells them apart (the verdict
    then names the node with the uplink as the alternative). ``inside_deg`` counts each node's
    slow pairs inside its rack, ``touching()`` gives the slow pairs touching a named node; a node's
    figures are read only when it has enough slow pairs inside its rack (an uplink at 4096 nodes
    is 65,000 crossing pairs and none inside)."""
    size: dict[int, int] = {}
    for i in members:
        size[dom[i]] = size.get(dom[i], 0) + 1
    own_failed: dict[int, set[int]] = {}  # rack mates its transfer with failed (no figure)
    for a, b in failed:
        if dom[a] == dom[b]:
            for x, y in ((a, b), (b, a)):
                if x in named:
                    own_failed.setdefault(x, set()).add(y)
    named_in: dict[int, set[int]] = {}  # rack -> its named nodes
    for x in named:
        named_in.setdefault(dom[x], set()).add(x)
    out = set()
    near: list[tuple[int, int, float]] | None = None
    for x in named:
        gone = own_failed.get(x, set())
        own = size.get(dom[x], 1) - 1 - len(gone)
        if own <= 0:
            continue
        # a pair with another named node of its rack reads the slower end's figure: no evidence
        # about x's uplink either way, so it is left out while x keeps another rack mate
        mates = named_in.get(dom[x], set()) - {x}
        if mates and own - len(mates - gone) > 0:
            own -= len(mates - gone)
        else:
            mates = set()
        need = max(1, math.ceil(PAIR_NODE_SHARE * own))
        if inside_deg.get(x, 0) < need:  # (an uplink: no slow pair inside its rack, nothing read)
            out.add(x)  # too few slow pairs inside its rack, whatever their figures
            continue
        if near is None:
            near = touching()
        mate_pairs = sum(1 for a, b, _v in near if (a == x and b in mates) or (b == x and a in mates)) if mates else 0
        if inside_deg.get(x, 0) - mate_pairs < need:
            out.add(x)
            continue
        values = sorted(v for a, b, v in near if x in (a, b) and dom[a] != dom[b])
        if not values:
            continue
        inside = [v for a, b, v in near if dom[a] == dom[b] and a not in mates and b not in mates
                  for y in (a, b) if y == x]
        level = values[len(values) // 2] * (1.0 - MAGNITUDE_TOLERANCE)
        if sum(1 for v in inside if v >= level) < need:
            out.add(x)
    return out


def _charge_failures(failed: Sequence[tuple[int, int]], m: int, named: set[int]) -> tuple[list, list, list]:
    """Failed transfers charged to nodes, the node failing most of them first (ties: lowest
    index), as long as it fails two or more: a healthy partner of a crashing node fails only its
    one transfer with it, so it is never charged. Transfers of an already named node are
    explained by it. Returns ([node, fails] that failed three or more transfers and completed
    at most what flips explain (dead; ``pair_noise.flips_explain``), [node, fails] that failed
    two or more and completed more than that (intermittent), [node, fails,
    mates] too few to decide on: followed up with proven-good partners)."""
    pending = [(a, b) for a, b in failed if a not in named and b not in named]
    dead: list[list[int]] = []
    some: list[list[int]] = []
    follow: list[list] = []
    while pending:
        fdeg: dict[int, int] = {}
        for a, b in pending:
            fdeg[a] = fdeg.get(a, 0) + 1
            fdeg[b] = fdeg.get(b, 0) + 1
        x, k = min(fdeg.items(), key=lambda e: (-e[1], e[0]))
        if k < 2:
            break
        total = sum(1 for a, b in failed if x in (a, b))
        if total >= 3 and flips_explain(total, m - 1 - total):  # its completed ones: flips (pair_noise)
            dead.append([x, total])
        elif total < m - 1:
            some.append([x, total])
        else:  # failed both of its two transfers (three nodes): two crashes, no pass
            follow.append([x, total, []])
        pending = [(a, b) for a, b in pending if x not in (a, b)]
    for a, b in pending:  # what is left fails one transfer per node at most
        follow.extend([[a, 1, [b]], [b, 1, [a]]])
    return dead, some, follow
