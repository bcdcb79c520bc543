"""Bad or intermittent from one node's per-pair counts, under the error model's noise.

A per-pair Job gives a node t transfers (or measured pairs), ``fails`` of them failed (or slow)
and ``passes`` completed. A node that fails every transfer can still show a few passes when
outcomes flip (the error model allows up to ``FLIP_P`` per outcome, ``diagnose``'s module
docstring), so "failed some and completed others" alone does not make it Intermittent: at 4096
nodes a dead node with 5 % flips completes about 200 of 4095 transfers. The split is a stated
binomial bound, both ways (docs/design/050, item 6):

* the passes are *explained by flips* when at least ``ALPHA`` of a node that fails every transfer
  at flip rate ``FLIP_P`` would complete that many, **and** at most ``ALPHA`` of an intermittent
  node failing a share ``INTERMITTENT_MAX`` would complete so few: the node reads as bad;
* anything else with two or more failures is a share between (Intermittent).

With few transfers no count satisfies both (9 transfers, one pass: an intermittent node failing
80 % completes at most one in 44 % of its Jobs), so small Jobs keep the rule "no pass at all:
bad" and never convict an intermittent node on a short count.
"""

from __future__ import annotations

import math

FLIP_P = 0.05  # the error model's design noise per outcome (diagnose: "designed for p <= 5 %")
INTERMITTENT_MAX = 0.8  # the largest fail share still read as intermittent, never as bad
ALPHA = 1e-3  # tail probability of each bound: a bad node read intermittent, or the reverse


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p). The terms are summed from k away from the mean, where
    they shrink geometrically, until they no longer count (n reaches 4095 and more)."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)

    def pmf(i: int) -> float:
        return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)

    if k < n * p:  # the lower tail: terms fall as i goes down
        total, term, i = 0.0, pmf(k), k
        while i >= 0 and term > total * 1e-17:
            total += term
            term *= i * (1.0 - p) / ((n - i + 1) * p)
            i -= 1
        return min(1.0, total)
    upper, term, i = 0.0, pmf(k + 1), k + 1  # 1 - the upper tail: terms fall as i goes up
    while i <= n and (term > upper * 1e-17 or upper == 0.0):
        upper += term
        term *= (n - i) * p / ((i + 1) * (1.0 - p))
        i += 1
    return max(0.0, 1.0 - upper)


def flips_explain(fails: int, passes: int) -> bool:
    """Whether ``passes`` completed transfers beside ``fails`` failed ones are what flips make of
    a node that fails every transfer (bad), rather than an intermittent node (see module doc)."""
    if fails < 0 or passes < 0:
        raise ValueError(f"fails and passes must be >= 0, got {fails} and {passes}")
    if passes == 0:
        return fails > 0
    t = fails + passes
    if binom_cdf(passes, t, 1.0 - INTERMITTENT_MAX) > ALPHA:  # first: short when it fails
        return False  # an intermittent node completes that many often enough
    return 1.0 - binom_cdf(passes - 1, t, FLIP_P) >= ALPHA
