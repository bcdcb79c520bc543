"""A Pinned group's node set as a compact, exact required node affinity.

Listing every hostname puts the whole group in every pod: at 4096 nodes with real
names that is ~220 KiB a pod and O(n^2) in etcd. Among the Nodes that exist now, the
same set can usually be said by its exceptions instead: "every node the target
matches, except these", or "these racks, except these nodes". ``placement`` picks the
shortest exact form, so its size follows the exceptions, not the group.

Pure: node names and labels in, typed terms out. Kubernetes semantics: the terms of
``nodeSelectorTerms`` are ORed, the requirements of one term ANDed; ``NotIn`` matches a
node without the key; a term with no requirements matches nothing. The target's own
requirements (``base``) are ANDed into every term by the caller, so the universe the
expression must be exact over is the known nodes that satisfy ``base``.

A node that joins after the render and matches a compact form could receive a pod;
docs/design/122-compact-placement.md records what the controller does then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nvcre.discovery.nodes import requirement_matches
from nvcre.discovery.racks import RACK_LABELS

HOSTNAME_KEY = "kubernetes.io/hostname"
EXPLICIT_LIMIT = 64  # groups up to this size always list their hostnames (readable, immune to joining nodes)
COMPACT_CAP = 8 * 1024  # bytes of values; a compact form over it is not used: the exact hostname list is


@dataclass(frozen=True)
class Requirement:
    """One nodeSelectorRequirement."""

    key: str
    operator: str  # In, NotIn, Exists
    values: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        out: dict = {"key": self.key, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        return out


@dataclass(frozen=True)
class Placement:
    """The group as ORed terms of ANDed requirements; ``form`` says which rule made it:
    ``hostnames`` (the explicit list), ``complement`` (everything but the exceptions) or
    ``domains:<label>`` (whole racks/domains minus exceptions, the rest by hostname)."""

    terms: tuple[tuple[Requirement, ...], ...]
    form: str

    @property
    def values(self) -> int:
        """How many label values the expression carries."""
        return sum(len(r.values) for term in self.terms for r in term)

    @property
    def size(self) -> int:
        """The size that matters, in bytes: each value as JSON (quotes and a comma)."""
        return sum(len(v) + 3 for term in self.terms for r in term for v in r.values)


def labels_by_name(nodes: Sequence[Mapping]) -> dict[str, Mapping[str, str]]:
    """Node objects (plain dicts) as the name -> labels map ``placement`` reads."""
    return {(n.get("metadata") or {}).get("name", ""): (n.get("metadata") or {}).get("labels") or {} for n in nodes}


def hostnames(group: Sequence[str]) -> Placement:
    """The explicit form: exact whatever joins later, and as long as the group."""
    return Placement(((Requirement(HOSTNAME_KEY, "In", tuple(group)),),), "hostnames")


def placement(group: Sequence[str], nodes: Mapping[str, Mapping[str, str]] | None, *,
              base: Sequence[Mapping] = (), topology_keys: Sequence[str] = RACK_LABELS,
              explicit_limit: int = EXPLICIT_LIMIT, cap: int = COMPACT_CAP) -> Placement:
    """The shortest exact expression for ``group`` among ``nodes`` (name -> labels: the
    Nodes that exist now; None or empty when unknown, e.g. an offline render).

    Exact: together with ``base``, it selects exactly the group's nodes among ``nodes``
    (group nodes not among them stay listed by hostname). Bounded: never larger (``size``)
    than the hostname list, nor than any candidate form; a compact form is only used when
    its ``size`` is at most ``cap`` bytes. Hostname labels are the node names, as kubelet
    sets them."""
    members = list(dict.fromkeys(group))
    best = hostnames(members)
    if len(members) <= explicit_limit or not nodes:
        return best
    universe = {name: _with_hostname(name, labels) for name, labels in nodes.items()
                if all(requirement_matches(_with_hostname(name, labels), r, numeric=True) for r in base)}
    wanted = set(members)
    for candidate in [_complement(members, universe)] + [_domains(members, wanted, universe, k) for k in topology_keys]:
        if candidate is not None and candidate.size <= cap and candidate.size < best.size:
            best = candidate
    return best


def _bytes(values: Sequence[str]) -> int:
    return sum(len(v) + 3 for v in values)


def _with_hostname(name: str, labels: Mapping[str, str]) -> Mapping[str, str]:
    return labels if HOSTNAME_KEY in labels else {**labels, HOSTNAME_KEY: name}


def _complement(members: list[str], universe: Mapping[str, Mapping[str, str]]) -> Placement:
    """Every known node but the exceptions; members not known (yet) listed by hostname."""
    wanted = set(members)
    others = tuple(sorted(n for n in universe if n not in wanted))
    req = Requirement(HOSTNAME_KEY, "NotIn", others) if others else Requirement(HOSTNAME_KEY, "Exists")
    unknown = tuple(m for m in members if m not in universe)
    return Placement(((req,),) + (((Requirement(HOSTNAME_KEY, "In", unknown),),) if unknown else ()), "complement")


def _domains(members: list[str], wanted: set[str], universe: Mapping[str, Mapping[str, str]],
             key: str) -> Placement | None:
    """Whole domains of ``key`` where naming the domain and its exceptions is shorter (in
    bytes) than naming its members; members elsewhere (or unknown, or unlabelled) by hostname."""
    by_domain: dict[str, list[str]] = {}
    for name, labels in universe.items():
        if key in labels:
            by_domain.setdefault(labels[key], []).append(name)
    if not by_domain:
        return None
    taken: list[str] = []
    exceptions: list[str] = []
    covered: set[str] = set()
    for domain in sorted(by_domain):
        inside = [n for n in by_domain[domain] if n in wanted]
        outside = [n for n in by_domain[domain] if n not in wanted]
        if inside and _bytes([domain, *outside]) < _bytes(inside):
            taken.append(domain)
            exceptions += outside
            covered.update(inside)
    if not taken:
        return None
    rest = tuple(m for m in members if m not in covered)
    whole: tuple[Requirement, ...] = (Requirement(key, "In", tuple(taken)),)
    if exceptions:
        whole += (Requirement(HOSTNAME_KEY, "NotIn", tuple(sorted(exceptions))),)
    terms = (whole,) + (((Requirement(HOSTNAME_KEY, "In", rest),),) if rest else ())
    return Placement(terms, f"domains:{key}")
