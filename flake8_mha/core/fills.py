"""What fill masks a score out: the numbers and names both analyses read.

The mask evaluator (LibCST, ``analysis/masks/numbers.py``) and the program
summaries (``ast``, ``analysis/program/fills.py``) judge a ``masked_fill`` or
``torch.where`` fill by the same measures, kept here once.
"""

from __future__ import annotations

from typing import Optional

BIG_NEGATIVE = -1e3  # a fill at or below this masks a score out after softmax
# a big negative divided by a constant up to this stays at or below BIG_NEGATIVE: the
# symbolic big negatives are -inf, finfo.min (-65504 in float16: /10 is -6550) and
# imported infinities
SMALL_DIVISOR = 10
_NEGATIVE_WORDS = {"NEG", "NEGATIVE", "MINUS"}
_INFINITE_WORDS = {"INF", "INFINITY", "INFTY", "NEGINF"}
_LARGE_WORDS = {"LARGE", "BIG", "HUGE"}


def constant_sign(name: str) -> Optional[str]:
    """What an imported constant's name says, when its value is out of reach.

    Decision (conservative): ``"pos"`` for a name with a word INF, INFINITY or
    INFTY and no negative word (``INF``, ``INFINITY_NUMBER``); ``"neg"`` for
    a name with a negative word (NEG, NEGATIVE, MINUS) and an infinite or
    large word (``NEG_INF``, ``NEGATIVE_INFINITY``, ``LARGE_NEGATIVE``,
    ``LARGE_NEGATIVE_NUMBER``), or the single word ``NEGINF``.  Words are the
    parts between underscores, in any case.  Anything else is unknown: a
    ``LARGE_NUMBER`` may be 100, a ``FLOAT_MIN`` may be the smallest positive
    float, a ``MASK_VALUE`` may be anything."""
    words = {w for w in name.upper().split("_") if w}
    negative = bool(words & _NEGATIVE_WORDS) or "NEGINF" in words
    if negative and (words & (_INFINITE_WORDS | _LARGE_WORDS)):
        return "neg"
    if not negative and words & _INFINITE_WORDS:
        return "pos"
    return None


def helper_sign(name: str) -> Optional[str]:
    """What the name of a helper function whose body is out of reach says of
    the value it returns: ``constant_sign``, and also a negative word with
    MAX (``max_neg_value(t)``, the helper that returns
    ``-torch.finfo(t.dtype).max`` in many released attention packages)."""
    got = constant_sign(name)
    if got is not None:
        return got
    words = {w for w in name.upper().split("_") if w}
    if words & _NEGATIVE_WORDS and "MAX" in words:
        return "neg"
    return None


def sign(v) -> Optional[str]:
    """ "neg" for a big negative number, "pos" for a big positive one."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if v <= BIG_NEGATIVE:
        return "neg"
    if v >= -BIG_NEGATIVE:
        return "pos"
    return None
