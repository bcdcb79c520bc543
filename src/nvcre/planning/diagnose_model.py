"""Data of a diagnosis: policy, rounds, results, verdict and the resumable state.

Everything here is plain data with a compact JSON form, so a Workflow status can hold
a diagnosis of 4096 nodes (see ``DiagnoseState.to_dict``). The planning logic lives
in ``diagnose_cases``; the public entry points in ``diagnose``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nvcre.errors import UserError
from nvcre.planning.codec import pack, ranges, seq, unpack, unranges, unseq

STATE_VERSION = 1
CROSS_CHECKS = ("full", "representatives", "none")
LINK_CHECKS = ("pairwise", "search")
# The cross check run as one per-pair Job (linkCheck: pairwise): a cross check in the history
# (it certifies every pair) and a per-pair Job for the runner, which sees the tag "pairwise".
CROSS_PAIRS = "cross-pairwise"
PAIR_TAGS = ("pairwise", CROSS_PAIRS)  # tests whose Job measured every pair of its nodes


def runner_tag(tag: str) -> str:
    """The tag a runner sees: a per-pair Job is "pairwise" whatever the planner runs it for."""
    return "pairwise" if tag in PAIR_TAGS else tag


class DiagnoseError(UserError):
    """The planner was called with inputs it cannot use."""


@dataclass(frozen=True)
class DiagnosePolicy:
    """How diagnose runs. Field names follow the Workflow spec (camelCase in to_dict)."""

    min_group_size: int = 2          # 1 allows single-node tests (no partner needed)
    max_concurrent: int = 0          # groups per round; 0 = unlimited
    topology_key: str = "nvidia.com/gpu.clique"
    max_screen_size: int = 2         # screen groups larger than this are chunked (see docs/design/050)
    cross_check: str = "full"        # full | representatives | none (see module docstring)
    cross_check_after_faults: bool = False  # also run it (without the bad nodes) when faults were found
    threshold: float | None = None   # bandwidth pass line, used to spot marginal results
    marginal_band: float = 0.03      # relative distance to threshold that counts as marginal
    max_rounds: int = 60             # safety net; open questions become "unresolved"
    link_check: str = "pairwise"     # after a failing cross check: one per-pair Job, or the halving search

    def __post_init__(self) -> None:
        if self.min_group_size < 1:
            raise DiagnoseError(f"minGroupSize must be >= 1, got {self.min_group_size}")
        if self.max_concurrent < 0:
            raise DiagnoseError(f"maxConcurrent must be >= 0, got {self.max_concurrent}")
        if self.max_screen_size < 2:
            raise DiagnoseError(f"maxScreenSize must be >= 2, got {self.max_screen_size}")
        if self.cross_check not in CROSS_CHECKS:
            raise DiagnoseError(f"crossCheck must be one of {', '.join(CROSS_CHECKS)}, got {self.cross_check!r}")
        if self.link_check not in LINK_CHECKS:
            raise DiagnoseError(f"linkCheck must be one of {', '.join(LINK_CHECKS)}, got {self.link_check!r}")
        if self.max_rounds < 1:
            raise DiagnoseError(f"maxRounds must be >= 1, got {self.max_rounds}")
        if not 0 <= self.marginal_band < 1:
            raise DiagnoseError(f"marginalBand must be in [0, 1), got {self.marginal_band}")

    def to_dict(self) -> dict:
        out = {
            "minGroupSize": self.min_group_size, "maxConcurrent": self.max_concurrent,
            "topologyKey": self.topology_key, "maxScreenSize": self.max_screen_size,
            "crossCheck": self.cross_check, "crossCheckAfterFaults": self.cross_check_after_faults,
            "marginalBand": self.marginal_band,
            "maxRounds": self.max_rounds, "linkCheck": self.link_check,
        }
        if self.threshold is not None:
            out["threshold"] = self.threshold
        return out

    @classmethod
    def from_dict(cls, d: Mapping) -> DiagnosePolicy:
        return cls(
            min_group_size=d.get("minGroupSize", 2), max_concurrent=d.get("maxConcurrent", 0),
            topology_key=d.get("topologyKey", "nvidia.com/gpu.clique"),
            max_screen_size=d.get("maxScreenSize", 2), cross_check=d.get("crossCheck", "full"),
            cross_check_after_faults=bool(d.get("crossCheckAfterFaults", False)),
            threshold=d.get("threshold"), marginal_band=d.get("marginalBand", 0.03),
            max_rounds=d.get("maxRounds", 60), link_check=d.get("linkCheck", "pairwise"),
        )


@dataclass(frozen=True)
class Round:
    """The groups to run now: node-disjoint, at most ``maxConcurrent`` of them."""

    number: int
    groups: list[list[str]]
    tags: list[str]  # what each group is for: screen, cross, pairs, solo, confirm, ...


FAILURE_KINDS = ("", "slow", "crash", "hang")


@dataclass(frozen=True)
class GroupResult:
    """One group's outcome. ``measured``: the bus bandwidth it reached (None when it did
    not finish); ``kind``: how it failed, "slow" (ran, below the bar), "crash" (the job
    died) or "hang" (timed out); empty when passed or unknown. A crash or hang carries no
    magnitude, and neither does a figure of 0 or less: the planner records those as
    crash evidence, never as a slow measurement (``diagnose.magnitude``)."""

    nodes: Sequence[str]
    passed: bool
    measured: float | None = None
    reason: str = ""
    kind: str = ""
    # a pairwise test: bus bandwidth per node pair; None (or 0) for a transfer that failed (no figure)
    pairs: Mapping[tuple[str, str], float | None] | None = None


@dataclass(frozen=True)
class Verdict:
    bad_nodes: list[dict]
    bad_links: list[dict]
    bad_racks: list[dict]
    good_nodes: list[str]
    unresolved: list[dict]
    notes: list[str]
    rounds: int
    tests: int
    node_rounds: int
    intermittent: list[dict] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not (self.bad_nodes or self.bad_links or self.bad_racks or self.unresolved or self.intermittent)

    def to_dict(self) -> dict:
        return {
            "passed": self.passed, "badNodes": self.bad_nodes, "badLinks": self.bad_links,
            "badRacks": self.bad_racks, "goodNodes": self.good_nodes, "unresolved": self.unresolved,
            "notes": self.notes, "rounds": self.rounds, "tests": self.tests, "nodeRounds": self.node_rounds,
            "intermittent": self.intermittent,
        }


# A recorded test: (round, node indices, tag, outcome P/F/M, measured, reason)
Test = tuple


@dataclass
class DiagnoseState:
    """Everything diagnose knows; JSON-safe through to_dict/from_dict."""

    names: list[str]
    dom: list[int]
    domain_names: list[str]
    policy: DiagnosePolicy
    status: list[str]                       # per node: u(ntested) g(ood) s(uspect) b(ad) x(unresolved) i(ntermittent)
    round: int = 0
    tests: list[Test] = field(default_factory=list)
    pending: list[tuple] = field(default_factory=list)   # (nodes tuple, tag, case id, slot)
    stage: dict = field(default_factory=dict)             # "case:slot" -> test id, this stage
    cases: list[dict] = field(default_factory=list)
    next_case: int = 1
    bad_nodes: list[list] = field(default_factory=list)   # [node, [test ids]]
    bad_links: list[list] = field(default_factory=list)   # [a, b, [test ids]]
    bad_racks: list[list] = field(default_factory=list)   # [domain, peer domain or -1, [test ids]]
    unresolved: list[list] = field(default_factory=list)  # [[nodes], note, [test ids]]
    notes: list[str] = field(default_factory=list)
    reopens: int = 0
    intermittent: list[list] = field(default_factory=list)  # [node, fails, tests, [test ids]]
    pairs: dict = field(default_factory=dict)  # pairwise test id -> {"slow": [[a, b, GB/s]], "median", "truncated"}

    # ---- serialization -------------------------------------------------------------
    def to_dict(self) -> dict:
        runs: list[list] = []
        for d in self.dom:
            if runs and runs[-1][0] == d:
                runs[-1][1] += 1
            else:
                runs.append([d, 1])
        out = self.summary()
        out.update({
            "version": STATE_VERSION,
            "policy": self.policy.to_dict(),
            "nodes": pack(self.names),
            "domains": pack([self.domain_names, runs]),
            "status": pack("".join(self.status)),
            "round": self.round,
            # the planner's working data: packed (a screen of pairs at 4096 nodes is 2048 tests)
            "tests": pack([[r, seq(n), tag, o, m, why] for (r, n, tag, o, m, why) in self.tests]),
            "pending": pack([[seq(n), tag, c, s] for (n, tag, c, s) in self.pending]),
            "stageResults": pack(dict(self.stage)),
            "cases": pack([_case_out(c) for c in self.cases]),
            "nextCase": self.next_case,
            "badNodes": self.bad_nodes, "badLinks": self.bad_links, "badRacks": self.bad_racks,
            "unresolved": [[ranges(u[0]), *u[1:]] for u in self.unresolved],
            "notes": list(self.notes),
            "reopens": self.reopens,
            "intermittent": [list(x) for x in self.intermittent],
            "pairs": pack(self.pairs),
        })
        return out

    def summary(self) -> dict:
        """The human-readable part of the status (the typed fields of Workflow's DiagnoseStatus)."""
        stage = self.pending[0][1] if self.pending else "complete"
        out: dict = {"stage": stage, "round": self.round}
        suspects = [self.names[i] for i, st in enumerate(self.status) if st in ("s", "b")]
        if suspects:
            out["suspectNodes"] = suspects
        if self.bad_links:
            out["suspectLinks"] = [[self.names[a], self.names[b]] for a, b, _ in self.bad_links]
        if self.bad_racks:
            out["suspectDomains"] = [self.domain_names[d] for d, _, _ in self.bad_racks]
        return out

    @classmethod
    def from_dict(cls, d: Mapping) -> DiagnoseState:
        if d.get("version") != STATE_VERSION:
            raise DiagnoseError(f"diagnose state version {d.get('version')!r} is not supported")
        names = unpack(d["nodes"])
        domain_names, runs = unpack(d["domains"])
        dom: list[int] = []
        for di, count in runs:
            dom.extend([di] * count)
        return cls(
            names=names, dom=dom, domain_names=domain_names,
            policy=DiagnosePolicy.from_dict(d["policy"]), status=list(unpack(d["status"])),
            round=d["round"],
            tests=[(r, tuple(unseq(n)), tag, o, m, why) for r, n, tag, o, m, why in _unpacked(d["tests"])],
            pending=[(tuple(unseq(n)), tag, c, s) for n, tag, c, s in _unpacked(d["pending"])],
            stage=dict(_unpacked(d["stageResults"])), cases=[_case_in(c) for c in _unpacked(d["cases"])],
            next_case=d["nextCase"], bad_nodes=[list(x) for x in d["badNodes"]],
            bad_links=[list(x) for x in d["badLinks"]], bad_racks=[list(x) for x in d["badRacks"]],
            unresolved=[[unranges(u[0]), u[1], list(u[2]) if len(u) > 2 else []] for u in d["unresolved"]],
            notes=list(d["notes"]),
            reopens=d.get("reopens", 0),
            intermittent=[[x[0], x[1], x[2], list(x[3])] for x in d.get("intermittent", [])],
            pairs=dict(_unpacked(d["pairs"])) if "pairs" in d else {},
        )

    def clone(self) -> DiagnoseState:
        return DiagnoseState(
            names=self.names, dom=self.dom, domain_names=self.domain_names, policy=self.policy,
            status=list(self.status), round=self.round, tests=list(self.tests),
            pending=list(self.pending), stage=dict(self.stage),
            cases=[_copy_case(c) for c in self.cases],
            next_case=self.next_case, bad_nodes=[list(x) for x in self.bad_nodes],
            bad_links=[list(x) for x in self.bad_links], bad_racks=[list(x) for x in self.bad_racks],
            unresolved=[list(x) for x in self.unresolved], notes=list(self.notes),
            reopens=self.reopens, intermittent=[list(x) for x in self.intermittent],
            pairs=self.pairs,
        )


def _unpacked(value):
    """A packed field, or the same field written as plain JSON by an earlier version."""
    return unpack(value) if isinstance(value, str) else value


_RANGE_FIELDS = ("members", "A", "B")  # ordered node lists: ranges when ascending (see codec.seq)


def _copy_case(case: dict) -> dict:
    out = {}
    for k, v in case.items():
        if isinstance(v, list):
            out[k] = [list(x) if isinstance(x, list) else x for x in v]
        elif isinstance(v, dict):
            out[k] = {kk: list(vv) for kk, vv in v.items()}
        else:
            out[k] = v
    return out


def _case_out(case: dict) -> dict:
    out = {}
    for k, v in case.items():
        if k in _RANGE_FIELDS:
            out[k] = seq(v)
        elif k == "groups":
            out[k] = [seq(g) for g in v]
        else:
            out[k] = v
    return out


def _case_in(case: Mapping) -> dict:
    out = {}
    for k, v in case.items():
        if k in _RANGE_FIELDS:
            out[k] = unseq(v)
        elif k == "groups":
            out[k] = [unseq(g) for g in v]
        elif isinstance(v, list):
            out[k] = list(v)
        elif isinstance(v, dict):
            out[k] = {kk: list(vv) for kk, vv in v.items()}
        else:
            out[k] = v
    return out
