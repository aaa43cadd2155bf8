"""Grouping chunk outputs for recursive reduce, and the depth guard."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction.errors import InvalidInput, ReduceDepthError
from extraction.strategies.reduce_plan import (
    ensure_depth,
    even_groups,
    group_for_reduce,
    levels_needed,
    uniform_groups,
    uniform_tree,
)


def test_everything_that_fits_is_one_group() -> None:
    assert group_for_reduce([10, 20, 30], 60) == [[0, 1, 2]]


def test_trivial_inputs() -> None:
    assert group_for_reduce([], 10) == []
    assert group_for_reduce([50], 10) == [[0]]


def test_groups_are_consecutive_and_fit() -> None:
    groups = group_for_reduce([4, 4, 4, 4, 4], 8)
    assert [i for g in groups for i in g] == [0, 1, 2, 3, 4]
    assert sorted(map(len, groups)) == [1, 2, 2]  # pairs are all 8 fits; the fifth is the unavoidable single


def test_no_single_item_group_when_a_neighbour_can_take_it() -> None:
    # greedy packing would leave the 6 alone: [2, 2, 2, 2] holds 8, then 6 does not fit
    groups = group_for_reduce([2, 2, 2, 2, 6], 10)
    assert len(groups) == 2 and all(len(g) >= 2 for g in groups)
    assert all(sum([2, 2, 2, 2, 6][i] for i in g) <= 10 for g in groups)


def test_an_item_over_the_budget_stands_alone() -> None:
    assert group_for_reduce([3, 3, 50, 3, 3], 10) == [[0, 1], [2], [3, 4]]


def test_odd_one_out_is_unavoidable_with_pairs_only() -> None:
    groups = group_for_reduce([5, 5, 5], 10)
    assert sorted(map(len, groups)) == [1, 2]


def test_invalid_inputs() -> None:
    with pytest.raises(InvalidInput):
        group_for_reduce([1, 2], 0)
    with pytest.raises(InvalidInput):
        group_for_reduce([1, -2], 10)


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(0, 120), max_size=40), budget=st.integers(1, 300))
def test_groups_partition_in_order_and_fit(sizes: list[int], budget: int) -> None:
    groups = group_for_reduce(sizes, budget)
    assert [i for group in groups for i in group] == list(range(len(sizes)))
    for position, group in enumerate(groups):
        if len(group) > 1:
            assert sum(sizes[i] for i in group) <= budget
        else:
            (item,) = group
            neighbours = [groups[p] for p in (position - 1, position + 1) if 0 <= p < len(groups)]
            # alone only if it could not simply join a neighbouring group
            assert all(sum(sizes[i] for i in other) + sizes[item] > budget for other in neighbours)


def test_even_groups_keep_the_count_and_shrink_the_largest() -> None:
    sizes = [10] * 10
    assert group_for_reduce(sizes, 60) != even_groups(sizes, 60) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert even_groups([10, 20, 30], 60) == [[0, 1, 2]]
    assert even_groups([3, 3, 50, 3, 3], 10) == [[0, 1], [2], [3, 4]], "a lone output keeps the DP's groups"


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(0, 120), max_size=40), budget=st.integers(1, 300))
def test_even_groups_are_as_many_as_and_no_larger_than_the_dps(sizes: list[int], budget: int) -> None:
    plain, even = group_for_reduce(sizes, budget), even_groups(sizes, budget)
    assert [i for group in even for i in group] == list(range(len(sizes))) and len(even) == len(plain)
    largest = lambda groups: max((sum(sizes[i] for i in g) for g in groups), default=0)  # noqa: E731
    assert largest(even) <= largest(plain)


def test_depth_guard() -> None:
    ensure_depth(1, 1)
    ensure_depth(3, 3)
    with pytest.raises(ReduceDepthError) as caught:
        ensure_depth(4, 3)
    assert "level 4" in caught.value.message and "max_reduce_depth is 3" in caught.value.message
    assert caught.value.details == {"level": 4, "max_depth": 3}


def test_levels_needed() -> None:
    assert levels_needed([100], 50, 10) == 0
    assert levels_needed([10, 10, 10], 50, 10) == 1
    assert levels_needed([40] * 10, 100, 40) == 4  # 10 → 5 → 3 (2+2+1) → 2 (2+1) → 1
    with pytest.raises(ReduceDepthError):
        levels_needed([60, 60, 60], 100, 60)


# --- plans fixed by the count of outputs ------------------------------------------------------------
def test_uniform_groups_are_as_few_as_fit_and_even() -> None:
    groups = uniform_groups(128, 3750, 76)  # 49 slots per call: 3 groups, not 49 + 49 + 30
    assert [len(g) for g in groups] == [42, 43, 43]
    assert [i for g in groups for i in g] == list(range(128))


@given(count=st.integers(0, 400), per_call=st.integers(2, 60), slot=st.integers(1, 500))
def test_uniform_groups_cover_in_order_and_fit(count: int, per_call: int, slot: int) -> None:
    budget = per_call * slot
    groups = uniform_groups(count, budget, slot)
    assert [i for g in groups for i in g] == list(range(count))
    assert all(len(g) * slot <= budget for g in groups)
    assert len(groups) == -(-count // per_call)
    assert max(map(len, groups), default=0) - min(map(len, groups), default=0) <= 1


def test_uniform_groups_need_room_for_two_slots() -> None:
    assert uniform_groups(5, 100, 51) is None
    assert uniform_groups(1, 100, 500) == [[0]] and uniform_groups(0, 100, 500) == []


def test_uniform_tree_ends_with_one_final_group() -> None:
    tree = uniform_tree(128, 123_600, 4_108)  # 30 full answers per call: 5 groups, then the final reduce
    assert [len(level) for level in tree] == [5, 1]
    assert tree[1] == [[0, 1, 2, 3, 4]]
    assert uniform_tree(30, 123_600, 4_108) == [[list(range(30))]]
    assert uniform_tree(1, 100, 10) == []
    assert uniform_tree(3, 100, 60) is None


def test_uniform_tree_follows_its_own_group_counts() -> None:
    tree = uniform_tree(1000, 300, 100)  # 3 per call: 1000 → 334 → 112 → 38 → 13 → 5 → 2 → 1
    assert [len(level) for level in tree] == [334, 112, 38, 13, 5, 2, 1]
    for before, level in itertools.pairwise(tree):
        assert sum(map(len, level)) == len(before)
