"""Which codes a run reports: the one implementation, for every entry point.

flake8's own decision rules, restated for our codes (flake8 7.x semantics), so
``flake8-mha check``, ``flake8-mha confirm`` and ``flake8 --select MHA`` agree:
an explicit ``--select`` beats a default ignore, an explicit ``--ignore`` beats
a default select, and when a code is matched by both lists the longer prefix
wins.

This module imports nothing of the analyzer at import time: the flake8 adapter
reads ``OFF_BY_DEFAULT`` at flake8's start-up, before (and for files that
cannot concern attention, without) loading libcst.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

DEFAULT_SELECT: Tuple[str, ...] = ("MHA",)
# Opinionated codes: registered, but reported only when asked for (--select or
# --extend-select MHA9, or --enable-extensions MHA9), whatever the ignore list:
# a replaced ``ignore =`` (black's ``E203,W503``) does not turn them on.  The rule classes say it
# too (DEFAULT_ENABLED = False); tests/test_rules.py checks the two agree.
OFF_BY_DEFAULT: Tuple[str, ...] = ("MHA901", "MHA902", "MHA903", "MHA904")
CODE_PREFIX = re.compile(r"^[A-Z]{1,3}[0-9]{0,3}$")


# Codes whose cost is speed only (the rules' CATEGORY "performance"): a test's
# speed is nobody's cost, so they are not reported in test files (``in_tests``)
PERFORMANCE: Tuple[str, ...] = ("MHA101", "MHA102")
_TEST_FILE = re.compile(r"(^test_.*|.*_test|^conftest)\.py$")
_TEST_DIRS = {"test", "tests", "testing"}


def in_tests(path: str) -> bool:
    """Whether ``path`` is a test file: ``test_*.py``, ``*_test.py``,
    ``conftest.py``, or a file right in a folder named ``test``, ``tests`` or
    ``testing`` (only the nearest folder: a project that lives below a
    folder of that name is not all tests)."""
    parts = re.split(r"[\\/]+", path)
    return bool(_TEST_FILE.match(parts[-1])) or (len(parts) > 1 and parts[-2] in _TEST_DIRS)


class SelectionError(ValueError):
    """A code prefix that cannot name any code (``--select NOPE``)."""


def check_prefixes(codes: Sequence[str], key: str) -> List[str]:
    """The prefixes, or SelectionError naming the first bad one.  As in
    flake8, codes are upper case: ``mha001`` is a mistake, not MHA001."""
    out = list(codes)
    for code in out:
        if not CODE_PREFIX.match(code):
            hint = " (codes are upper case)" if CODE_PREFIX.match(code.upper()) else ""
            raise SelectionError(
                f"{key}: {code!r} is not a code prefix such as MHA, MHA0 or MHA001{hint}"
            )
    return out


def known_codes() -> List[str]:
    """Every code of ours: the static ones and the runtime-only ones (MHA011)."""
    from ..rules.runtime import RUNTIME

    return sorted({*static_codes(), *RUNTIME})


def check_known(codes: Sequence[str], key: str) -> None:
    """SelectionError naming the first prefix that matches none of our codes
    (``MHX``, ``E501``, ``MHA999``).  The rules are imported only for a prefix
    longer than ``MHA``."""
    for code in codes:
        if "MHA".startswith(code):
            continue
        if not code.startswith("MHA") or not any(k.startswith(code) for k in known_codes()):
            raise SelectionError(f"{key}: {code!r} matches no flake8-mha code (MHA000..MHA9xx)")


class Decider:
    """flake8's DecisionEngine: ``decide(code)`` is True when the run reports ``code``."""

    def __init__(
        self,
        select: Optional[Sequence[str]] = None,
        ignore: Optional[Sequence[str]] = None,
        extend_select: Sequence[str] = (),
        extend_ignore: Sequence[str] = (),
        enable_extensions: Sequence[str] = (),
    ) -> None:
        self.selected_explicitly = _sorted([*(select or []), *extend_select])
        # an opt-in code is reported only when asked for by name or prefix
        self.asked = _sorted([*self.selected_explicitly, *enable_extensions])
        self.ignored_explicitly = _sorted([*(ignore or []), *extend_ignore])
        if select is not None:
            self.selected = _sorted([*select, *extend_select])
        else:
            self.selected = _sorted([*DEFAULT_SELECT, *extend_select])
        if ignore is not None:
            self.ignored = _sorted([*ignore, *extend_ignore])
        else:
            defaults = [
                c
                for c in OFF_BY_DEFAULT
                if not any(c.startswith(e) or e.startswith(c) for e in enable_extensions)
            ]
            self.ignored = _sorted([*defaults, *extend_ignore])

    def __call__(self, code: str) -> bool:
        if code in OFF_BY_DEFAULT and not code.startswith(self.asked):
            return False
        if code.startswith(self.selected_explicitly):
            sel = "explicit"
        elif code.startswith(self.selected):
            sel = "implicit"
        else:
            sel = None
        if code.startswith(self.ignored_explicitly):
            ign = "explicit"
        elif code.startswith(self.ignored):
            ign = "implicit"
        else:
            ign = None
        if sel is not None and ign is None:
            return True
        if sel is None:
            return False
        if sel == "explicit" and ign != "explicit":
            return True
        if sel != "explicit" and ign == "explicit":
            return False
        # in both lists with the same strength: the longest prefix wins
        select = next(s for s in self.selected if code.startswith(s))
        ignore = next(s for s in self.ignored if code.startswith(s))
        return len(select) > len(ignore)


def _sorted(codes: Sequence[str]) -> Tuple[str, ...]:
    return tuple(sorted(codes, reverse=True))


def static_codes() -> List[str]:
    """Every code the static analysis can report (MHA000 included), sorted."""
    from ..rules.base import all_rules

    return [rule.CODE for rule in all_rules()]


def codes(decide: Decider) -> List[str]:
    """The static codes ``decide`` reports, sorted."""
    return [code for code in static_codes() if decide(code)]


def all_codes() -> List[str]:
    """Every static code, opt-in ones included (what ``--select MHA`` reports)."""
    return codes(Decider(select=["MHA"]))
