"""The pairwise Job's figures are read by a C-level fast path for plain numeric input and by a
general loop for anything else; both must give the same pairs below the bar. They come back as
columns (ends in turn, figures, failed transfers), and what the decoding makes of them must not
depend on how the Job listed the pairs."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.planning.diagnose import DiagnosePolicy, _below_bar, _pair_record, start

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _read(pairs, pos, low):
    """What ``_below_bar`` read, as (i, j) -> figure (None: a failed transfer)."""
    flat, vals, failed, _plain = _below_bar(pairs, pos, low)
    assert len(flat) == 2 * len(vals)
    assert all(i < j for i, j in zip(flat[0::2], flat[1::2]))  # each pair once, lower index first
    assert failed == sorted(failed) and all(i < j for i, j in failed)
    out = dict(zip(zip(flat[0::2], flat[1::2]), vals))
    out.update((k, None) for k in failed)
    assert len(out) == len(vals) + len(failed)  # no pair twice
    return out


def _general(pairs, pos, low):
    # a None-valued pair of unknown nodes sends the input to the general loop and is dropped there
    return _read({**pairs, ("nobody", "none"): None}, pos, low)


@pytest.mark.parametrize("seed", range(30))
def test_fast_path_reads_the_same_pairs_as_the_general_loop(seed):
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(2, 40))]
    pos = {n: i for i, n in enumerate(names)}
    pairs = {}
    for _ in range(rng.randint(1, 200)):
        a, b = rng.sample(names, 2)
        if pos[a] > pos[b] and seed % 2 == 0:
            a, b = b, a  # as a Job lists them (one way round); odd seeds: either order, some twice
        odd = [-1.0, 0] if seed % 3 == 0 else []  # no figure: every third seed (the general loop)
        pairs[(a, b)] = rng.choice([round(rng.uniform(100, 450), 2), rng.randint(100, 450), *odd])
    if seed % 5 == 1:
        pairs[(names[0], "stranger")] = 10.0  # a node outside the diagnosis: ignored
    if seed % 5 == 2:
        pairs[(names[0], names[0])] = 10.0  # a node with itself: ignored
    fast = _read(pairs, pos, 349.2)
    assert fast == _general(pairs, pos, 349.2)
    assert all(v is None or v < 349.2 for v in fast.values())


FIGURES = st.one_of(
    st.floats(100, 450), st.integers(100, 450), st.floats(1, 99),  # plain numbers, some far below
    st.sampled_from([0, 0.0, -1.0, math.nan, math.inf, None, True, "fast", 2**80]),  # no figure
)


@SETTINGS
@given(n=st.integers(2, 30), data=st.data())
def test_any_input_reads_the_same_on_both_paths(n, data):
    """Any mix of orders, repeats (one pair both ways), unknown nodes, self pairs and non-figures."""
    names = [f"n{i:02d}" for i in range(n)]
    pos = {x: i for i, x in enumerate(names)}
    node = st.sampled_from(names + ["stranger"])
    pairs = data.draw(st.dictionaries(st.tuples(node, node), FIGURES, max_size=120))
    low = data.draw(st.sampled_from([349.2, 300, 1e-9]))
    fast = _read(pairs, pos, low)
    assert fast == _general(pairs, pos, low)
    for (i, j), v in fast.items():
        assert i != j and (v is None or (isinstance(v, (int, float)) and 0 < v < low))


@st.composite
def pairwise_jobs(draw):
    """A pairwise Job over racks of uneven size (or no labels) with slow nodes, a slow rack
    boundary, slow links, an intermittent node and failed transfers, as readings per pair."""
    sizes = draw(st.lists(st.integers(1, 9), min_size=1, max_size=5))
    if sum(sizes) < 3:
        sizes.append(3)
    labelled = draw(st.booleans()) or len(sizes) > 1
    names, topo = [], {}
    for r, size in enumerate(sizes):
        for _ in range(size):
            names.append(f"gpu-node-{len(names):03d}")
            if labelled:
                topo[names[-1]] = f"rack-{r}"
    rng = random.Random(draw(st.integers(0, 10_000)))
    slow_nodes = set(rng.sample(names, draw(st.integers(0, 2))))
    slow_rack = draw(st.sampled_from([None, *range(len(sizes))])) if labelled else None
    flaky = rng.choice(names) if draw(st.booleans()) else None
    dead = rng.choice(names) if rng.random() < 0.2 else None
    pairs = {}
    for ai, a in enumerate(names):
        for b in names[ai + 1:]:
            v = 400.0 * rng.uniform(0.97, 1.03)
            if a in slow_nodes or b in slow_nodes:
                v = min(v, rng.choice([200.0, 180.0, 120.0]))
            if slow_rack is not None and topo[a] != topo[b] and f"rack-{slow_rack}" in (topo[a], topo[b]):
                v = min(v, 210.0)
            if rng.random() < 0.04 or flaky in (a, b) and rng.random() < 0.5:
                v = 150.0  # a slow link or an intermittent node's bad moment
            if dead in (a, b) or rng.random() < 0.01:
                v = rng.choice([None, 0, -1.0])
            pairs[(a, b)] = int(v) if isinstance(v, float) and rng.random() < 0.1 else v
    threshold = draw(st.sampled_from([360.0, None]))
    return names, topo, pairs, DiagnosePolicy(threshold=threshold)


@SETTINGS
@given(job=pairwise_jobs(), seed=st.integers(0, 1000))
def test_findings_do_not_depend_on_how_the_job_lists_the_pairs(job, seed):
    """The same readings listed in another order, each pair either way round, give the same
    findings (the ordered listing takes the fast path, a reordered one the min/max or general one)."""
    names, topo, pairs, policy = job
    state = start(names, topo, policy)
    pos = {x: i for i, x in enumerate(state.names)}
    members = list(range(len(state.names)))
    rng = random.Random(seed)
    items = [((b, a) if rng.random() < 0.5 else (a, b), v) for (a, b), v in pairs.items()]
    rng.shuffle(items)
    direct = _pair_record(pairs, pos, members, state)
    assert _pair_record(dict(items), pos, members, state) == direct
    # and through the general loop (an extra unknown pair with no figure is dropped there)
    assert _pair_record({**pairs, ("nobody", "none"): None}, pos, members, state) == direct


@SETTINGS
@given(job=pairwise_jobs())
def test_racks_and_unexplained_pairs_match_a_pair_by_pair_count(job):
    """Rack boundaries and the pairs left unexplained, recounted pair by pair from the readings
    (the decoding counts them from per-node sums and looks pairs inside racks up)."""
    names, topo, pairs, policy = job
    pairs = {k: v for k, v in pairs.items() if isinstance(v, (int, float)) and v > 0}  # no failed transfers
    policy = DiagnosePolicy(threshold=360.0)
    state = start(names, topo, policy)
    pos = {x: i for i, x in enumerate(state.names)}
    members = list(range(len(state.names)))
    out = _pair_record(pairs, pos, members, state)
    low = 360.0 * (1.0 - policy.marginal_band)
    slow = sorted((*sorted((pos[a], pos[b])), v) for (a, b), v in pairs.items() if v < low)
    dom = state.dom
    named = set(out["nodes"])
    flaky = {x for x, _k, _m in out["intermittent"]}
    assert out["slow"] == len(slow)
    racks = []
    if any(state.domain_names):
        size: dict[int, int] = {}
        for i in members:
            if i not in named:
                size[dom[i]] = size.get(dom[i], 0) + 1
        total = sum(size.values())
        hits: dict[int, int] = {}
        for a, b, _v in slow:
            if dom[a] != dom[b] and a not in named and b not in named:
                hits[dom[a]] = hits.get(dom[a], 0) + 1
                hits[dom[b]] = hits.get(dom[b], 0) + 1
        for d, k in sorted(hits.items()):
            crossing = size.get(d, 0) * (total - size.get(d, 0))
            if crossing > 0 and k >= max(2, math.ceil(0.9 * crossing)):
                racks.append(d)
                if len(size) == 2:
                    break
    assert out["racks"] == racks
    left = [(a, b, v) for a, b, v in slow
            if a not in named and b not in named and a not in flaky and b not in flaky
            and not (dom[a] != dom[b] and (dom[a] in racks or dom[b] in racks))]
    assert out["unexplained"] == len(left)
    assert out["links"] == [list(p) for p in left[:len(out["links"])]]
