"""Rack boundaries as evidence (planning/boundary.py): which failures an open uplink explains."""

from __future__ import annotations

from nvcre.planning.boundary import UNPROVEN, behind, crossing_passers, open_racks, unexplained_failures

DOM = [0, 0, 1, 1, 2, 2]  # node -> rack


def test_open_racks_are_those_no_passing_crossing_test_touched_and_named_ones():
    tests = [(1, (0, 1), "screen", "P", 400.0), (1, (2, 4), "solo", "P", 400.0),
             (2, (3, 5), "solo", "F", 150.0), (2, (4, 5), "screen", "P", 400.0)]
    assert open_racks(tests, DOM, 3, set()) == {0}
    assert open_racks(tests, DOM, 3, {2}) == {0, 2}


def test_behind_is_the_one_other_open_rack_holding_every_partner():
    assert behind(0, (0, 2), DOM, {1}) == 1
    assert behind(0, (0, 2, 3), DOM, {1}) == 1
    assert behind(0, (0, 2), DOM, {2}) is None  # rack 1 was crossed by a pass
    assert behind(0, (0, 2, 4), DOM, {1, 2}) is None  # two racks: no single uplink
    assert behind(0, (0, 1), DOM, {0}) is None  # inside its own rack: no uplink's


def test_behind_its_own_open_rack_only_when_asked_and_every_partner_is_outside():
    assert behind(0, (0, 2, 4), DOM, {0}) is None
    assert behind(0, (0, 2, 4), DOM, {0}, own=True) == 0
    assert behind(0, (0, 2), DOM, {0, 1}, own=True) == 1  # the other rack first
    assert behind(0, (0, 1, 2), DOM, {0}, own=True) is None  # a rack mate aboard: not only crossing
    assert behind(0, (0, 2, 4), DOM, {1, 2}, own=True) is None  # its own rack was crossed by a pass


def test_crossing_passers_are_the_nodes_of_passing_crossing_tests():
    tests = [(1, (0, 1), "screen", "P", 400.0), (1, (2, 4), "solo", "P", 400.0), (2, (3, 5), "solo", "F", 150.0)]
    assert crossing_passers(tests, DOM) == {2, 4}


def test_a_node_that_passed_keeps_only_failures_no_open_uplink_explains():
    assert unexplained_failures([1, 1, None], passed=True) == 1
    assert unexplained_failures([1, 2, None, None], passed=True) == 2
    assert unexplained_failures([UNPROVEN, None], passed=True) == 1


def test_a_node_that_never_passed_counts_the_failures_behind_one_uplink_as_one():
    assert unexplained_failures([1, 1], passed=False) == 1
    assert unexplained_failures([1, 1, 1], passed=False) == 1
    assert unexplained_failures([1, 2], passed=False) == 2
    assert unexplained_failures([None, 1, 1], passed=False) == 2
    assert unexplained_failures([1, 1, 2, None], passed=False) == 3
    assert unexplained_failures([None, None], passed=False) == 2


def test_a_node_that_never_passed_counts_its_failures_beside_unproven_partners_as_one():
    # (issue 15, found case seed15-1014) partners proven only inside their rack: their NICs may be the
    # faults, as one uplink may be, so those failures are one observation together
    assert unexplained_failures([UNPROVEN, UNPROVEN, UNPROVEN], passed=False) == 1
    assert unexplained_failures([UNPROVEN, UNPROVEN, None], passed=False) == 2
    assert unexplained_failures([UNPROVEN, 1, 1], passed=False) == 2
