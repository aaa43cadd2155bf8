"""Whether a JSON object is a collection keyed by id — `{"138586341": {…}, "138586342": {…}}` — rather than a
record whose keys are field names: the rule the query strategy's loading uses to make such an object a table.

Real APIs return both shapes, and they must be told apart from the keys and the values' shapes alone:

* a **keyed collection**: at least two keys, every value an object, the values of one shape (most of
  them hold most of the fields that half of them hold), and either every key looks like an id (digits,
  a UUID, a long hex string, a word with a digit such as `ORD-77731`, a hyphenated slug such as
  `eras-tour-paris`) or there are many keys (`MANY_KEYS`), whatever they look like;
* anything else is a **record** (`{"billing": {"city": …}, "shipping": {"city": …}}` stays one row).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

MANY_KEYS = 20
"""An object with this many keys whose values are objects of one shape is keyed, whatever its keys look like."""

_ID_KEY = re.compile(
    r"^(\d+"  # 138586341
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"  # a UUID
    r"|[0-9a-fA-F]{8,}"  # a hash or hex id
    r"|[A-Za-z_-]*\d[\w:.-]*"  # ORD-77731, ev_12, user:42
    r"|[a-z0-9]+(-[a-z0-9]+)+)$"  # a slug: eras-tour-paris
)


def looks_like_id(key: str) -> bool:
    """Whether `key` reads as an identifier rather than a field name (module docstring)."""
    return bool(_ID_KEY.match(key))


def is_keyed(keys: Sequence[str], shapes: Sequence[frozenset[str] | None]) -> bool:
    """Whether an object whose values have these field names (`None`: a value that is not an object) is a
    collection keyed by id (module docstring)."""
    if len(keys) < 2 or len(keys) != len(shapes) or any(shape is None for shape in shapes):
        return False
    if not _one_shape([shape for shape in shapes if shape is not None]):
        return False
    return len(keys) >= MANY_KEYS or all(looks_like_id(key) for key in keys)


def _one_shape(shapes: Sequence[frozenset[str]]) -> bool:
    """Most values hold at least half of the fields that at least half of the values hold."""
    seen = Counter(name for shape in shapes for name in shape)
    common = {name for name, n in seen.items() if 2 * n >= len(shapes)}
    if not common:
        return False  # no field most values share (or no fields at all): nothing to make columns of
    fitting = sum(1 for shape in shapes if 2 * len(shape & common) >= len(common))
    return 4 * fitting >= 3 * len(shapes)
