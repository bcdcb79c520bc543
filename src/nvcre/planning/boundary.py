"""Rack boundaries as evidence (pure; docs/design/050, "one boundary is no evidence").

A degraded rack uplink fails every test that crosses its rack's boundary, so a test whose
other members all sit in one rack D (not the suspect's own) fails for D's uplink as well as
for the suspect, unless a passing test has crossed D's boundary (the uplink is then proven
open). Partners "proven good" by passes inside their rack (over NVLink with MNNVL, or beside
rack mates) say nothing about that path. These functions decide which of a suspect's
failures such an uplink explains; the case engine keeps the state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def open_racks(tests: Sequence[tuple], dom: Sequence[int], n_racks: int, named: set[int]) -> set[int]:
    """Racks whose boundary no passing test crossed, and racks named bad: their uplink may be
    the bottleneck of any test that crosses into them."""
    crossed: set[int] = set()
    for test in tests:
        if test[3] == "P":
            doms = {dom[i] for i in test[1]}
            if len(doms) > 1:
                crossed.update(doms)
    return (set(range(n_racks)) - crossed) | named


def crossing_passers(tests: Sequence[tuple], dom: Sequence[int]) -> set[int]:
    """Nodes in a passing test that crossed a rack boundary: their NIC path is proven. A pass
    inside a rack proves nothing about it (with MNNVL it ran over NVLink)."""
    out: set[int] = set()
    for test in tests:
        if test[3] == "P" and len({dom[i] for i in test[1]}) > 1:
            out.update(test[1])
    return out


UNPROVEN = -1  # a crossing failure beside a member whose NIC path no crossing pass has proven


def behind(x: int, nodes: Sequence[int], dom: Sequence[int], racks: set[int], own: bool = False) -> int | None:
    """The rack D in ``racks`` that holds every member of test ``nodes`` but ``x``, when D is not
    x's rack: D's uplink fails that test as well. ``own``: x's own rack counts too, when it is
    open and every other member is outside it (for a suspect that passed a test: being bad needs
    a flip, its own uplink none). None when no single open rack explains the test."""
    doms = {dom[i] for i in nodes if i != x}
    if not doms or dom[x] in doms:
        return None
    if len(doms) == 1 and next(iter(doms)) in racks:
        return next(iter(doms))
    return dom[x] if own and dom[x] in racks else None


def unexplained_failures(sides: Sequence[int | None], passed: bool) -> int:
    """How many of a suspect's failures no uplink explains. ``sides``: per failure, the open rack
    behind it (``behind``, or ``UNPROVEN``) or None. A suspect that never passed is bad on one
    fault, so the failures behind the one rack that explains most of them count as one
    observation (of x or of that uplink: one uplink is one fault, as one partner is one node;
    the failures beside partners proven only inside their rack, ``UNPROVEN``, count as one too);
    a suspect that passed a test is bad only through a flip, so every failure behind an open
    rack is left out (at p = 0 no bad node passes)."""
    if passed:
        return sum(1 for d in sides if d is None)
    counts = Counter(d for d in sides if d is not None)
    if not counts:
        return len(sides)
    return len(sides) - max(counts.values()) + 1
