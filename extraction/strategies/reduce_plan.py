"""Recursive reduce planning: which chunk outputs go into which reduce call, level after level.

When all chunk outputs fit one reduce call there is one group and one call. Otherwise the
outputs are split into consecutive groups that each fit, every group is reduced to one output,
and the same is done again with those outputs, until one call can take them all. Groups keep
document order, so each reduce sees neighbouring chunks together.

The job groups the outputs it really has, by their real sizes (`even_groups`); the plans fixed by
a count alone (`uniform_groups`, `uniform_tree`: every output a full answer) are the estimate's
upper bound, never what the job runs.
"""

from __future__ import annotations

from extraction.errors import InvalidInput, ReduceDepthError


def group_for_reduce(sizes: list[int], budget_tokens: int) -> list[list[int]]:
    """Consecutive index groups whose summed `sizes` fit `budget_tokens`.

    Among the partitions into fitting groups this picks the one with the fewest single-item
    groups (a reduce of one output does nothing), then the fewest groups (fewest calls).
    A single item is alone only when it cannot share a call with a neighbour, e.g. an item
    larger than the budget. Dynamic programming over prefixes: O(n × longest group).
    """
    _check(sizes, budget_tokens)
    best: list[tuple[int, int]] = [(0, 0)]
    cut: list[int] = [0]
    for end in range(1, len(sizes) + 1):
        choice = _best_group_ending_at(end, sizes, budget_tokens, best)
        best.append(choice[0])
        cut.append(choice[1])
    return _groups_from_cuts(cut, len(sizes))


def _check(sizes: list[int], budget_tokens: int) -> None:
    if budget_tokens <= 0:
        raise InvalidInput(f"reduce budget must be positive, got {budget_tokens}", budget_tokens=budget_tokens)
    if any(size < 0 for size in sizes):
        raise InvalidInput("output sizes must not be negative", sizes=sizes)


def _best_group_ending_at(
    end: int, sizes: list[int], budget: int, best: list[tuple[int, int]]
) -> tuple[tuple[int, int], int]:
    """(cost, start) of the best last group [start, end); cost = (single-item groups, groups)."""
    singles, groups = best[end - 1]
    choice = ((singles + 1, groups + 1), end - 1)
    total = sizes[end - 1]
    for start in range(end - 2, -1, -1):
        total += sizes[start]
        if total > budget:
            break
        singles, groups = best[start]
        choice = min(choice, ((singles, groups + 1), start))
    return choice


def _groups_from_cuts(cut: list[int], count: int) -> list[list[int]]:
    groups, end = [], count
    while end > 0:
        groups.append(list(range(cut[end], end)))
        end = cut[end]
    return groups[::-1]


def even_groups(sizes: list[int], budget_tokens: int) -> list[list[int]]:
    """`group_for_reduce`'s groups, with their sizes evened out: the same number of groups, the largest
    as small as it can be (the groups' calls run in parallel, so the longest one sets the pace).

    The smallest cap that still packs into that many groups is found by bisection; greedy packing at
    that cap gives the groups. Kept as `group_for_reduce` made them when it had to leave an output alone.
    """
    groups = group_for_reduce(sizes, budget_tokens)
    if len(groups) <= 1 or any(len(group) == 1 for group in groups):
        return groups
    low, high = max(sizes), budget_tokens
    while low < high:
        cap = (low + high) // 2
        if len(_packed(sizes, cap)) <= len(groups):
            high = cap
        else:
            low = cap + 1
    even = _packed(sizes, low)
    return even if len(even) == len(groups) and all(len(group) > 1 for group in even) else groups


def _packed(sizes: list[int], cap: int) -> list[list[int]]:
    """Consecutive groups filled in order up to `cap` each (the fewest groups any cap-bound split has)."""
    groups: list[list[int]] = []
    total = cap + 1
    for index, size in enumerate(sizes):
        if total + size > cap:
            groups.append([])
            total = 0
        groups[-1].append(index)
        total += size
    return groups


def ensure_depth(level: int, max_depth: int) -> None:
    """Refuse reduce level `level` (1 = the first reduce round) when it exceeds `max_depth`."""
    if level > max_depth:
        raise ReduceDepthError(
            f"reduce would need level {level} but max_reduce_depth is {max_depth}: the chunk outputs are too large"
            " to merge within the allowed levels (raise max_reduce_depth or ask for a narrower extract)",
            level=level,
            max_depth=max_depth,
        )


def levels_needed(sizes: list[int], budget_tokens: int, assumed_output_tokens: int) -> int:
    """Reduce levels until one output remains, if every reduce answers `assumed_output_tokens`.

    0 for a single output (it is already the answer), 1 when all outputs fit one call. Raises
    `ReduceDepthError` when a level would not shrink the number of outputs.
    """
    level = 0
    while len(sizes) > 1:
        groups = group_for_reduce(sizes, budget_tokens)
        if len(groups) >= len(sizes):
            raise ReduceDepthError(
                f"reduce cannot converge: {len(sizes)} outputs form {len(groups)} groups at budget {budget_tokens}",
                outputs=len(sizes),
                budget_tokens=budget_tokens,
            )
        sizes = [sizes[g[0]] if len(g) == 1 else assumed_output_tokens for g in groups]
        level += 1
    return level


def uniform_groups(count: int, budget_tokens: int, slot_tokens: int) -> list[list[int]] | None:
    """Consecutive groups for `count` outputs that may each take `slot_tokens`: a plan fixed by the count alone
    (the most groups outputs of at most `slot_tokens` each can need: the estimate's bound).

    As few groups as fit (`budget_tokens // slot_tokens` outputs per call at most), sized evenly, so
    no group's call is much longer than its siblings' (they run in parallel). None when such a plan
    could never shrink the outputs (two slots do not fit one call); a single output is one group.
    """
    _check([slot_tokens], budget_tokens)
    if count <= 1:
        return [[0]] if count == 1 else []
    per_call = budget_tokens // max(slot_tokens, 1)
    if per_call < 2:
        return None
    groups = -(-count // per_call)
    bounds = [count * g // groups for g in range(groups + 1)]
    return [list(range(bounds[g], bounds[g + 1])) for g in range(groups)]


def uniform_tree(count: int, budget_tokens: int, slot_tokens: int) -> list[list[list[int]]] | None:
    """Every reduce level's groups for `count` outputs of `slot_tokens` each, the final reduce last.

    Level n's groups are planned over level n − 1's group outputs (each again at most one slot). Empty
    for a single output (it is the answer: no reduce call); None when `uniform_groups` has no plan.
    """
    levels: list[list[list[int]]] = []
    while count > 1:
        groups = uniform_groups(count, budget_tokens, slot_tokens)
        if groups is None:
            return None
        levels.append(groups)
        count = len(groups) if len(groups) > 1 else 0
    return levels
