"""Keyed collections (`{"138586341": {…}}`) are told from records (`{"billing": {…}}`) by keys and shapes."""

from __future__ import annotations

import pytest

from extraction.documents.keyed import MANY_KEYS, is_keyed, looks_like_id

EVENT = frozenset({"id", "name", "start"})


@pytest.mark.parametrize(
    "key",
    ["138586341", "3f2b8c1e-9a4d-4f6e-8b2a-1c3d5e7f9a0b", "deadbeefcafe", "ORD-77731", "ev_12", "eras-tour-paris"],
)
def test_ids_look_like_ids(key: str) -> None:
    assert looks_like_id(key)


@pytest.mark.parametrize("key", ["billing", "shipping_address", "customerName", "data", ""])
def test_field_names_do_not(key: str) -> None:
    assert not looks_like_id(key)


def test_id_keys_over_same_shaped_objects_are_keyed() -> None:
    assert is_keyed(["138586341", "138586342"], [EVENT, EVENT | {"extra"}])


def test_many_keys_over_same_shaped_objects_are_keyed_whatever_the_keys() -> None:
    words = [f"name{chr(97 + i)}" for i in range(MANY_KEYS)]
    assert not any(looks_like_id(w) for w in words)
    assert is_keyed(words, [EVENT] * MANY_KEYS)
    assert not is_keyed(words[:-1], [EVENT] * (MANY_KEYS - 1))


@pytest.mark.parametrize(
    ("keys", "shapes"),
    [
        (["billing", "shipping"], [frozenset({"city"}), frozenset({"city"})]),  # a record's fields
        (["1"], [EVENT]),  # one key: nothing to tell
        (["1", "2"], [EVENT, None]),  # a value that is not an object
        (["1", "2", "3", "4"], [EVENT, frozenset({"a"}), frozenset({"b"}), frozenset({"c"})]),  # four shapes
        (["1", "2"], [frozenset(), frozenset()]),  # no fields to make columns of
        (["1", "2"], [EVENT]),  # shapes that do not match the keys
    ],
)
def test_anything_else_is_a_record(keys: list[str], shapes: list[frozenset[str] | None]) -> None:
    assert not is_keyed(keys, shapes)
