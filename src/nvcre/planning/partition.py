"""Node groups for each testScale, and the launch scheduler that respects them.

Pure: node names and their labels in, an ordered list of groups out. The rules
follow the reference system so results line up with its reports:

* ``intra-node``: one group per node.
* ``intra-rack``: one group per topology domain (``nvidia.com/gpu.clique`` or the
  platform's key) at its natural size; nodes without the label are excluded with
  a reason (or rejected, when asked to be strict).
* ``full-scale``: one group of every node, or chunks of ``nodes_per_job``; a
  remainder becomes an *overflow* group that borrows already-tested nodes so every
  node is covered and every group has the requested size. With a topology key the
  chunks are packed from as few domains as possible.
* ``Unpinned`` placement: one group with no node list, only a size.

Groups are deterministic: the same nodes and labels always give the same groups in
the same order, which keeps Job names stable across controller restarts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nvcre.errors import UserError

TEST_SCALES = ("full-scale", "intra-node", "intra-rack", "diagnose")
DEFAULT_TOPOLOGY_KEY = "nvidia.com/gpu.clique"


class PartitionError(UserError):
    """The nodes cannot be split as asked (too few nodes, a missing label, ...)."""


@dataclass(frozen=True)
class Group:
    """One Job's worth of nodes. ``nodes`` is empty only for an Unpinned group."""

    name: str
    nodes: tuple[str, ...]
    domains: tuple[str, ...] = ()
    domain_node_counts: Mapping[str, int] | None = None
    overflow: bool = False
    size: int = 0  # number of nodes the workload asks for (== len(nodes) when pinned)

    def to_dict(self) -> dict:
        """The Workflow status shape (camelCase, empty fields left out)."""
        out: dict = {"name": self.name, "nodes": list(self.nodes)}
        if self.domains:
            out["domains"] = list(self.domains)
        if self.domain_node_counts:
            out["domainNodeCounts"] = dict(self.domain_node_counts)
        if self.overflow:
            out["overflow"] = True
        return out


@dataclass(frozen=True)
class Exclusion:
    node: str
    reason: str


@dataclass(frozen=True)
class Partition:
    groups: list[Group]
    excluded: list[Exclusion] = field(default_factory=list)
    placement: str = "Pinned"

    @property
    def covered_nodes(self) -> set[str]:
        return {n for g in self.groups for n in g.nodes}


def _sorted_unique(nodes: Iterable[str]) -> list[str]:
    out = sorted(set(nodes))
    if not out:
        raise PartitionError("no nodes provided")
    return out


def _group(name: str, nodes: Iterable[str], **kw) -> Group:
    ordered = tuple(sorted(nodes))
    return Group(name=name, nodes=ordered, size=len(ordered), **kw)


def partition_intra_node(nodes: Iterable[str]) -> Partition:
    """One group per node: single-node tests (loopback, DCGM, intra-node NCCL)."""
    return Partition([_group(f"group-{i}", [n]) for i, n in enumerate(_sorted_unique(nodes))])


def domains_of(
    nodes: Sequence[str],
    labels: Mapping[str, Mapping[str, str]],
    topology_key: str,
    *,
    strict: bool = False,
) -> tuple[dict[str, list[str]], list[Exclusion]]:
    """Nodes grouped by the value of ``topology_key``; unlabelled nodes excluded (or an error)."""
    by_domain: dict[str, list[str]] = {}
    excluded: list[Exclusion] = []
    for node in nodes:
        value = (labels.get(node) or {}).get(topology_key)
        if not value:
            if strict:
                raise PartitionError(f'node "{node}" missing topology label "{topology_key}"')
            excluded.append(Exclusion(node, f"missing topology label {topology_key}"))
            continue
        by_domain.setdefault(value, []).append(node)
    return by_domain, excluded


def partition_intra_rack(
    nodes: Iterable[str],
    labels: Mapping[str, Mapping[str, str]],
    topology_key: str = DEFAULT_TOPOLOGY_KEY,
    *,
    min_group_size: int = 1,
    strict: bool = False,
) -> Partition:
    """One group per domain at its natural size (the reference's strictDomain).

    Domains are ordered by size (largest first), then name. A domain smaller than
    ``min_group_size`` cannot run the test and is excluded with a reason, so the
    report shows it as not certified instead of silently passing.
    """
    ordered = _sorted_unique(nodes)
    by_domain, excluded = domains_of(ordered, labels, topology_key, strict=strict)
    groups: list[Group] = []
    for domain in sorted(by_domain, key=lambda d: (-len(by_domain[d]), d)):
        members = by_domain[domain]
        if len(members) < min_group_size:
            excluded.extend(
                Exclusion(n, f"{topology_key}={domain} has {len(members)} node(s); "
                             f"the test needs at least {min_group_size}")
                for n in members
            )
            continue
        groups.append(_group(f"group-{len(groups)}", members, domains=(domain,)))
    if not groups:
        raise PartitionError(f"no topology domain ({topology_key}) has enough nodes to form a group")
    return Partition(groups, sorted(excluded, key=lambda e: e.node))


def _check_size(nodes_per_job: int, total: int) -> None:
    if nodes_per_job < 1:
        raise PartitionError("nodesPerJob must be >= 1")
    if nodes_per_job > total:
        raise PartitionError(f"nodesPerJob {nodes_per_job} is larger than the {total} eligible node(s)")


def partition_simple(nodes: Iterable[str], nodes_per_job: int) -> Partition:
    """Chunks of ``nodes_per_job`` by name; a remainder borrows from the last full chunk."""
    ordered = _sorted_unique(nodes)
    _check_size(nodes_per_job, len(ordered))
    full = len(ordered) // nodes_per_job
    groups = [
        _group(f"group-{i}", ordered[i * nodes_per_job:(i + 1) * nodes_per_job]) for i in range(full)
    ]
    rest = ordered[full * nodes_per_job:]
    if rest:
        borrowed = ordered[full * nodes_per_job - (nodes_per_job - len(rest)):full * nodes_per_job]
        groups.append(_group(f"group-{full}-overflow", list(borrowed) + rest, overflow=True))
    return Partition(groups)


def partition_topology(
    nodes: Iterable[str],
    labels: Mapping[str, Mapping[str, str]],
    topology_key: str,
    nodes_per_job: int,
    *,
    strict: bool = True,
) -> Partition:
    """Chunks of ``nodes_per_job`` packed from as few domains as possible.

    Greedy like the reference: take the domains with the most untested nodes first
    (at most ``ceil(npj / largest domain)`` of them per group). What cannot fill a
    whole group becomes overflow groups that top up from already-tested nodes of
    the same racks, so every node runs at least once at the requested size.
    """
    ordered = _sorted_unique(nodes)
    by_domain, excluded = domains_of(ordered, labels, topology_key, strict=strict)
    total = sum(len(v) for v in by_domain.values())
    if total == 0:
        raise PartitionError(f"no node carries the topology label {topology_key}")
    _check_size(nodes_per_job, total)
    remaining = {d: list(v) for d, v in by_domain.items()}
    largest = max(len(v) for v in by_domain.values())
    per_group = math.ceil(nodes_per_job / largest)
    groups: list[Group] = []
    while True:
        unassigned = sum(len(v) for v in remaining.values())
        if unassigned < nodes_per_job:
            break
        avail = sorted((d for d in remaining if remaining[d]), key=lambda d: (-len(remaining[d]), d))
        top = avail[:per_group]
        if sum(len(remaining[d]) for d in top) < nodes_per_job:
            break
        taken: list[str] = []
        counts: dict[str, int] = {}
        for d in top:
            need = nodes_per_job - len(taken)
            if need == 0:
                break
            chunk, remaining[d] = remaining[d][:need], remaining[d][need:]
            taken.extend(chunk)
            counts[d] = len(chunk)
        groups.append(_group(
            f"group-{len(groups)}", taken, domains=tuple(sorted(counts)),
            domain_node_counts=counts if len(counts) > 1 else None,
        ))
    untested = {d: v for d, v in remaining.items() if v}
    if not groups:
        everyone = [n for v in by_domain.values() for n in v]
        doms = tuple(sorted(by_domain))
        counts = {d: len(by_domain[d]) for d in doms}
        return Partition([_group("group-0", everyone, domains=doms,
                                 domain_node_counts=counts if len(doms) > 1 else None)], excluded)
    groups.extend(_overflow_groups(by_domain, untested, nodes_per_job, len(groups)))
    return Partition(groups, sorted(excluded, key=lambda e: e.node))


def _overflow_groups(
    by_domain: Mapping[str, list[str]],
    untested: Mapping[str, list[str]],
    nodes_per_job: int,
    first_index: int,
) -> list[Group]:
    """Cover leftover nodes in full-size groups, borrowing tested nodes rack by rack."""
    pools: dict[str, list[str]] = {}
    fresh: dict[str, int] = {}
    for d, members in by_domain.items():
        left = list(untested.get(d, []))
        reusable = [n for n in members if n not in set(left)]
        pools[d] = left + reusable
        fresh[d] = len(left)
    out: list[Group] = []
    while sum(fresh.values()) > 0:
        order = sorted(pools, key=lambda d: (-fresh[d], -len(pools[d]), d))
        taken: list[str] = []
        counts: dict[str, int] = {}
        for d in order:
            need = nodes_per_job - len(taken)
            if need == 0:
                break
            chunk, pools[d] = pools[d][:need], pools[d][need:]
            if not chunk:
                continue
            fresh[d] = max(0, fresh[d] - len(chunk))
            taken.extend(chunk)
            counts[d] = len(chunk)
        if not taken:
            break
        out.append(_group(
            f"group-{first_index + len(out)}-overflow", taken, domains=tuple(sorted(counts)),
            domain_node_counts=counts if len(counts) > 1 else None, overflow=True,
        ))
    return out


def partition_full_scale(
    nodes: Iterable[str],
    nodes_per_job: int | None = None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    topology_key: str | None = None,
) -> Partition:
    """Everything in one group, or chunks of ``nodes_per_job`` (``None`` or < 1: all nodes)."""
    ordered = _sorted_unique(nodes)
    if nodes_per_job is None or nodes_per_job < 1 or nodes_per_job == len(ordered) and not topology_key:
        if nodes_per_job is not None and nodes_per_job > len(ordered):
            _check_size(nodes_per_job, len(ordered))
        return Partition([_group("group-0", ordered)])
    if topology_key:
        return partition_topology(ordered, labels or {}, topology_key, nodes_per_job)
    return partition_simple(ordered, nodes_per_job)


def partition_unpinned(nodes: Iterable[str], nodes_per_job: int | None) -> Partition:
    """One group with no node list: the scheduler places ``nodes_per_job`` pods on the target."""
    ordered = _sorted_unique(nodes)
    if nodes_per_job is None or nodes_per_job < 1:
        raise PartitionError("placement Unpinned needs an explicit nodesPerJob (>= 1)")
    if nodes_per_job > len(ordered):
        raise PartitionError(
            f"placement Unpinned: nodesPerJob {nodes_per_job} is larger than the {len(ordered)} target node(s)"
        )
    return Partition([Group(name="group-0", nodes=(), size=nodes_per_job)], placement="Unpinned")


def plan_groups(
    test_scale: str,
    nodes: Iterable[str],
    labels: Mapping[str, Mapping[str, str]] | None = None,
    *,
    nodes_per_job: int | None = None,
    topology_key: str | None = None,
    placement: str = "Pinned",
) -> Partition:
    """The groups a Workflow runs for ``test_scale`` (diagnose plans rounds instead)."""
    labels = labels or {}
    if placement not in ("Pinned", "Unpinned", ""):
        raise PartitionError(f"placement must be Pinned or Unpinned, got {placement!r}")
    if placement == "Unpinned":
        if test_scale == "diagnose":
            raise PartitionError("placement Unpinned cannot be used with testScale diagnose")
        if test_scale == "intra-rack":
            raise PartitionError("placement Unpinned cannot be used with testScale intra-rack (strict domains)")
        return partition_unpinned(nodes, 1 if test_scale == "intra-node" else nodes_per_job)
    if test_scale == "intra-node":
        return partition_intra_node(nodes)
    if test_scale == "intra-rack":
        return partition_intra_rack(nodes, labels, topology_key or DEFAULT_TOPOLOGY_KEY)
    if test_scale == "full-scale":
        return partition_full_scale(nodes, nodes_per_job, labels, topology_key)
    if test_scale == "diagnose":
        raise PartitionError("testScale diagnose is planned round by round (nvcre.planning.diagnose)")
    raise PartitionError(f"testScale must be one of {', '.join(TEST_SCALES)}, got {test_scale!r}")


def next_batch(
    groups: Sequence[Group],
    running: Iterable[str],
    done: Iterable[str],
    max_concurrent: int = 0,
) -> list[str]:
    """Names of the groups to launch now, in order.

    Honours ``max_concurrent`` (0 = unlimited) and never starts a group that
    shares a node with a running group or with one chosen in this batch (overflow
    groups wait for the nodes they borrow).
    """
    running = set(running)
    finished = set(done)
    busy: set[str] = set()
    for g in groups:
        if g.name in running:
            busy.update(g.nodes)
    slots = None if max_concurrent <= 0 else max_concurrent - len(running)
    chosen: list[str] = []
    for g in groups:
        if slots is not None and len(chosen) >= slots:
            break
        if g.name in running or g.name in finished:
            continue
        if busy.intersection(g.nodes):
            continue
        chosen.append(g.name)
        busy.update(g.nodes)
    return chosen
