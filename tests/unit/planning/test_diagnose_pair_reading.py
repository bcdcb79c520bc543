"""The pairwise Job's figures are read by a C-level fast path for plain numeric input and by a
general loop for anything else; both must give the same pairs below the bar."""

from __future__ import annotations

import random

import pytest

from nvcre.planning.diagnose import _below_bar


def _general(pairs, pos, low):
    # a None-valued pair of unknown nodes sends the input to the general loop and is dropped there
    return _below_bar({**pairs, ("nobody", "none"): None}, pos, low)


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
    fast = _below_bar(pairs, pos, 349.2)
    assert fast == _general(pairs, pos, 349.2)
    assert all(v is None or v < 349.2 for v in fast.values())
