"""The context's memos stay within their bounds: entries, and the weight of their values."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.controller.context import BoundedMemo


def test_the_oldest_entry_goes_first_past_the_count():
    memo = BoundedMemo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    memo.get("a")  # used: now the newest
    memo.put("c", 3)
    assert memo.keys() == ["a", "c"]


def test_a_weight_bound_drops_the_oldest_until_the_sum_fits():
    memo = BoundedMemo(100, weigh=len, max_weight=10)
    memo.put("a", "xxxx")
    memo.put("b", "yyyy")
    memo.put("c", "zzzz")  # 12 > 10: "a" goes
    assert memo.keys() == ["b", "c"] and memo.weight == 8
    memo.put("b", "y")  # replacing a value re-weighs it
    assert memo.weight == 5
    memo.put("huge", "w" * 50)  # heavier than the bound alone: nothing stays
    assert len(memo) == 0 and memo.weight == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.text(max_size=12), st.booleans()), max_size=60))
def test_weight_and_count_hold_after_any_sequence(ops):
    memo = BoundedMemo(4, weigh=len, max_weight=20)
    for key, value, drop in ops:
        if drop:
            memo.drop_where(lambda k: k == key)
        else:
            memo.put(key, value)
        assert len(memo) <= 4 and memo.weight <= 20
        assert memo.weight == sum(len(memo.get(k)) for k in memo.keys())
