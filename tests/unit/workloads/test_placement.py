"""A Pinned group's compact placement selects exactly the group, and its size follows the
exceptions, not the group (``nvcre.workloads.placement``).

The expression is judged by ``selects`` below, written from the Kubernetes API
reference and independent of the code under test: nodeSelectorTerms ORed, the
matchExpressions of one term ANDed, an empty term matches nothing, ``NotIn`` and
``DoesNotExist`` match a node without the key.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.workloads.placement import HOSTNAME_KEY, hostnames, placement

RACK = "topology.kubernetes.io/rack"
CLIQUE = "nvidia.com/gpu.clique"
KEYS = (CLIQUE, RACK)


def _req(labels: dict, req: dict) -> bool:
    key, op, values = req["key"], req["operator"], req.get("values") or []
    return {"In": lambda: key in labels and labels[key] in values,
            "NotIn": lambda: key not in labels or labels[key] not in values,
            "Exists": lambda: key in labels,
            "DoesNotExist": lambda: key not in labels}[op]()


def selects(terms: list[list[dict]], labels: dict) -> bool:
    """Kubernetes' required node affinity over one node's labels."""
    return any(term and all(_req(labels, r) for r in term) for term in terms)


def as_terms(p, base=()) -> list[list[dict]]:
    return [[r.to_dict() for r in term] + list(base) for term in p.terms]


@st.composite
def fleets(draw):
    """Nodes with a hostname label, maybe a pool, a rack and a clique (some unlabelled);
    a group (with maybe a member not among the nodes), and maybe a base selector."""
    count = draw(st.integers(1, 40))
    racks = draw(st.integers(1, 6))
    nodes: dict[str, dict] = {}
    for i in range(count):
        name = f"node-{i}"
        labels = {HOSTNAME_KEY: name}
        if draw(st.integers(0, 9)):  # most nodes carry a rack
            labels[RACK] = f"r{draw(st.integers(0, racks - 1))}"
        if draw(st.booleans()):
            labels[CLIQUE] = f"c{draw(st.integers(0, 2))}"
        if draw(st.integers(0, 4)):
            labels["pool"] = draw(st.sampled_from(["a", "b"]))
        nodes[name] = labels
    names = sorted(nodes)
    mode = draw(st.sampled_from(["subset", "racks", "all"]))
    if mode == "all":
        group = list(names)
    elif mode == "racks":
        chosen = draw(st.sets(st.sampled_from([f"r{i}" for i in range(racks)]), min_size=1))
        group = [n for n in names if nodes[n].get(RACK) in chosen]
    else:
        group = draw(st.lists(st.sampled_from(names), unique=True))
    drop = draw(st.sets(st.sampled_from(names), max_size=3))  # exceptions: rack/fleet members left out
    group = [n for n in group if n not in drop]
    if draw(st.booleans()):
        group.append("joins-later")  # a member the controller does not know (yet)
    base = draw(st.sampled_from([(), ({"key": "pool", "operator": "In", "values": ["a"]},),
                                 ({"key": "pool", "operator": "NotIn", "values": ["b"]},)]))
    return nodes, group, base


def _universe(nodes, base):
    return {n: labels for n, labels in nodes.items() if all(_req(labels, r) for r in base)}


def _bytes(values) -> int:
    """A list of label values as JSON, give or take the brackets."""
    return sum(len(v) + 3 for v in values)


def _domain_cost(group, universe, key) -> int:
    """Bytes of 'every domain a member is in, minus its other nodes; unlabelled or
    unknown members by hostname': what the exceptions cost for one topology label."""
    wanted = set(group)
    domains = {universe[m][key] for m in group if m in universe and key in universe[m]}
    exceptions = [n for n, labels in universe.items() if labels.get(key) in domains and n not in wanted]
    rest = [m for m in group if m not in universe or key not in universe[m]]
    return _bytes(domains) + _bytes(exceptions) + _bytes(rest)


@settings(max_examples=400, deadline=None)
@given(fleets(), st.sampled_from([0, 30, 100_000]))
def test_selects_exactly_the_group_among_the_nodes(case, cap):
    nodes, group, base = case
    p = placement(group, nodes, base=base, topology_keys=KEYS, explicit_limit=0, cap=cap)
    terms = as_terms(p, base)
    assert all(terms) and len(terms) <= 2
    wanted = set(group)
    for name, labels in nodes.items():
        assert selects(terms, labels) == (name in wanted and all(_req(labels, r) for r in base)), (name, p)
    # a member that joins after the render is still placed (listed by name, or not excepted);
    # a non-member that joins may be too: docs/design/122-compact-placement.md
    if "joins-later" in wanted:
        assert selects(terms, {HOSTNAME_KEY: "joins-later", "pool": "a"})


@settings(max_examples=400, deadline=None)
@given(fleets())
def test_size_is_bounded_by_the_exceptions_not_the_group(case):
    nodes, group, base = case
    p = placement(group, nodes, base=base, topology_keys=KEYS, explicit_limit=0, cap=100_000)
    universe = _universe(nodes, base)
    assert p.size == _bytes(v for term in as_terms(p) for r in term for v in r.get("values", []))
    assert p.size <= _bytes(group)
    complement = _bytes([n for n in universe if n not in set(group)]) + _bytes([m for m in group if m not in universe])
    assert p.size <= complement
    for key in KEYS:
        assert p.size <= _domain_cost(group, universe, key), key


@settings(max_examples=200, deadline=None)
@given(fleets(), st.integers(0, 80))
def test_the_cap_falls_back_to_the_hostnames(case, cap):
    nodes, group, base = case
    p = placement(group, nodes, base=base, topology_keys=KEYS, explicit_limit=0, cap=cap)
    assert p.form == "hostnames" or p.size <= cap
    if p.form == "hostnames":
        assert p == hostnames(group)


def test_small_groups_and_offline_renders_list_their_hostnames():
    nodes = {f"n{i}": {HOSTNAME_KEY: f"n{i}"} for i in range(100)}
    assert placement([f"n{i}" for i in range(64)], nodes).form == "hostnames"  # small: always explicit
    assert placement([f"n{i}" for i in range(65)], None).form == "hostnames"  # no Nodes known: explicit
    full = placement([f"n{i}" for i in range(100)], nodes)
    assert full.form == "complement" and full.values == 0
    assert as_terms(full) == [[{"key": HOSTNAME_KEY, "operator": "Exists"}]]


def test_full_scale_and_rack_groups_at_4096_nodes_name_only_the_exceptions():
    nodes = {f"node-{i:04d}": {HOSTNAME_KEY: f"node-{i:04d}", RACK: f"rack-{i // 16:03d}"} for i in range(4096)}
    names = sorted(nodes)
    cordoned = {"node-0007", "node-1234", "node-4000"}
    full = placement([n for n in names if n not in cordoned], nodes)
    assert full.form == "complement" and full.values == 3
    chosen = [f"rack-{i:03d}" for i in range(1, 9)]
    racks = placement([n for n in names if nodes[n][RACK] in chosen and n != "node-0017"], nodes)
    assert racks.form == f"domains:{RACK}" and racks.values == 9  # eight racks and one exception
    assert racks.size == 8 * len('"rack-001",') + len('"node-0017",')
    assert as_terms(racks) == [[{"key": RACK, "operator": "In", "values": chosen},
                                {"key": HOSTNAME_KEY, "operator": "NotIn", "values": ["node-0017"]}]]
