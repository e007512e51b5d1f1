"""Options for ``flake8-mha check`` and ``confirm``: defaults, configuration files, and which
codes a run reports.

Configuration comes, key by key, from (later wins):

1. flake8's own ``[flake8]`` section, in the first of ``setup.cfg``,
   ``tox.ini``, ``.flake8`` that has one, in the current directory or the
   nearest parent (flake8's search, which stops below the home directory):
   ``select``, ``extend-select``, ``ignore``, ``extend-ignore``,
   ``enable-extensions``, ``per-file-ignores``, ``exclude``,
   ``extend-exclude`` and ``max-line-length``, with flake8's meaning;
2. ``[tool.flake8-mha]`` in ``pyproject.toml`` or ``[flake8-mha]`` in
   ``setup.cfg``/``tox.ini``/``.flake8``, the nearest that has one;
3. the command line.

Which codes are reported is decided in ``selection.py`` (flake8's own
decision rules); which files are linted, in ``pipeline.py``.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from fnmatch import fnmatch
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..lint import selection
from ..lint.selection import Decider

FORMATS = ("text", "json", "sarif", "github")


class UsageError(Exception):
    """A bad command line or configuration value: one line, exit status 2."""


@dataclass
class Options:
    paths: List[str] = field(default_factory=list)
    select: Optional[List[str]] = None
    ignore: Optional[List[str]] = None
    extend_select: List[str] = field(default_factory=list)
    extend_ignore: List[str] = field(default_factory=list)
    enable_extensions: List[str] = field(default_factory=list)
    # absolute or basename patterns; None: pipeline.DEFAULT_EXCLUDES (a list replaces them)
    exclude: Optional[List[str]] = None
    extend_exclude: List[str] = field(default_factory=list)  # added to exclude
    # (pattern, codes): the longest pattern that matches a file adds its codes to extend-ignore
    per_file_ignores: List[Tuple[str, List[str]]] = field(default_factory=list)
    max_line_length: Optional[int] = None  # flake8's max-line-length; read by fixes
    respect_gitignore: bool = True
    format: str = "text"
    output_file: Optional[str] = None
    statistics: bool = False
    jobs: int = 1
    disable_noqa: bool = False
    fix: bool = False
    diff: bool = False
    cache_dir: str = ".flake8-mha-cache"  # cache.py; options.py puts it at the project root
    no_cache: bool = False
    no_project_wide: bool = False  # program/: follow calls into the project's other files
    dependents: bool = False  # also check the files that import a named file (program/callers)
    exit_zero: bool = False
    count: bool = False
    quiet: int = 0  # -q: file names only; -qq: nothing but the exit status
    show_source: bool = False
    stdin_display_name: str = "stdin"

    def codes(self) -> List[str]:
        """Every rule code this run reports."""
        return selection.codes(self.decider())

    def decider(self, extra_ignore: Sequence[str] = ()) -> Decider:
        return Decider(
            self.select,
            self.ignore,
            self.extend_select,
            [*self.extend_ignore, *extra_ignore],
            self.enable_extensions,
        )

    def file_ignores(self, path: str) -> List[str]:
        """The per-file-ignores codes for ``path``: flake8 applies the entry
        with the longest matching pattern, and that one only."""
        best: Optional[Tuple[str, List[str]]] = None
        for pattern, codes in self.per_file_ignores:
            if path_matches(path, [pattern]) and (best is None or len(pattern) > len(best[0])):
                best = (pattern, codes)
        return list(best[1]) if best else []

    def file_codes(self, path: str) -> Optional[List[str]]:
        """The codes reported in ``path``; None when no per-file-ignores entry applies."""
        extra = self.file_ignores(path)
        return selection.codes(self.decider(extra)) if extra else None


# -- parsing values ----------------------------------------------------------


def split_list(value: Any, key: str) -> List[str]:
    """A comma/whitespace separated string, or a TOML list of strings."""
    if isinstance(value, str):
        items = re.split(r"[,\s]+", value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [part for v in value for part in re.split(r"[,\s]+", v)]
    else:
        raise UsageError(f"{key} must be a list of strings or a comma-separated string")
    return [i.strip() for i in items if i.strip()]


def code_list(value: Any, key: str, known: bool = True) -> List[str]:
    """Code prefixes; ``known``: each must name one of our codes (``--select
    MHX`` is a mistake; in flake8's own ``[flake8]`` section other tools' codes
    are at home, and only the form is checked, as flake8 does)."""
    try:
        codes = selection.check_prefixes(split_list(value, key), key)
        if known:
            selection.check_known(codes, key)
        return codes
    except selection.SelectionError as exc:
        raise UsageError(str(exc)) from None


def path_matches(path: str, patterns: Sequence[str]) -> bool:
    """flake8's rule: a pattern matches the base name, or the absolute path.
    As in flake8, a folder named with a trailing slash (``fixtures/``) has no
    base name, so only its absolute path is matched."""
    if not patterns:
        return False
    base = os.path.basename(path)
    if base not in (".", "..") and any(fnmatch(base, p) for p in patterns):
        return True
    absolute = os.path.abspath(path)
    return any(fnmatch(absolute, p) for p in patterns)


def exclude_patterns(value: Any, key: str, base: str) -> List[str]:
    """Patterns with a slash are taken relative to ``base`` (flake8 does the same)."""
    out = []
    for pat in split_list(value, key):
        pat = pat.rstrip("/") if len(pat) > 1 else pat
        if "/" in pat or os.sep in pat:
            pat = os.path.abspath(os.path.join(base, pat))
        out.append(pat)
    return out


_PFI_TOKEN = re.compile(r"\s*(?P<colon>:)\s*|(?P<sep>[\s,]+)|(?P<word>[^\s:,]+)")


def per_file_ignores(value: Any, key: str, base: str, known: bool = True):
    """flake8's ``per-file-ignores``: ``pattern[, pattern...]: CODE[, CODE...]``
    entries, one after another (a new entry starts at a pattern that follows a
    code).  Patterns as in exclude (with a slash: relative to ``base``)."""
    if isinstance(value, list):
        value = "\n".join(str(v) for v in value)
    if not isinstance(value, str):
        raise UsageError(f"{key} must be a string such as 'tests/*: MHA101'")
    entries: List[Tuple[List[str], List[str]]] = []
    patterns: List[str] = []
    codes: List[str] = []
    after_colon = False
    for m in _PFI_TOKEN.finditer(value):
        if m.group("sep"):
            continue
        if m.group("colon"):
            if after_colon or not patterns:
                raise UsageError(f"{key}: expected 'pattern: CODES', got {value.strip()!r}")
            after_colon = True
            continue
        word = m.group("word")
        if after_colon and selection.CODE_PREFIX.match(word):
            codes.append(word)
            continue
        if after_colon:  # a pattern after the codes: the next entry
            if not codes:
                raise UsageError(f"{key}: no codes after {', '.join(patterns)!r}")
            entries.append((patterns, codes))
            patterns, codes, after_colon = [], [], False
        patterns.append(word)
    if patterns and not (after_colon and codes):
        raise UsageError(f"{key}: expected 'pattern: CODES', got {value.strip()!r}")
    if patterns:
        entries.append((patterns, codes))
    out = []
    for pats, cs in entries:
        cs = code_list(cs, key, known)
        for pat in exclude_patterns(pats, key, base):
            out.append((pat, cs))
    return out


def line_length_value(value: Any, key: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{key} must be a positive integer, not {value!r}") from None
    if isinstance(value, bool) or n < 1:
        raise UsageError(f"{key} must be a positive integer, not {value!r}")
    return n


def jobs_value(value: Any, key: str = "jobs") -> int:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return max(1, os.cpu_count() or 1)
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{key} must be a positive integer or 'auto', not {value!r}") from None
    if isinstance(value, bool) or n < 1:
        raise UsageError(f"{key} must be a positive integer or 'auto', not {value!r}")
    return n


def bool_value(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise UsageError(f"{key} must be true or false, not {value!r}")


def format_value(value: Any, key: str = "format") -> str:
    if not isinstance(value, str) or value not in FORMATS:
        raise UsageError(f"unknown format {value!r} (choose from {', '.join(FORMATS)})")
    return value


def check_output_file(path: str, option: str) -> None:
    """A report is written to an existing folder: a typo in the path is a usage
    error, not a new tree of folders."""
    if os.path.isdir(path):
        raise UsageError(f"{option} is a directory: {path}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{option}: no such directory: {os.path.dirname(path) or parent}")


# -- configuration files ------------------------------------------------------

# the keys of flake8's own [flake8] section that concern us; its other keys are flake8's
FLAKE8_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "extend-ignore",
    "enable-extensions",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "max-line-length",
)
# our own section takes flake8's keys and these
CONFIG_KEYS = FLAKE8_KEYS + (
    "respect-gitignore",
    "format",
    "jobs",
    "statistics",
    "disable-noqa",
    "output-file",
    "cache-dir",
    "no-cache",
    "no-project-wide",
)
INI_FILES = ("setup.cfg", "tox.ini", ".flake8")  # flake8's order


def _load_toml(path: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.9/3.10
        import tomli as tomllib
    with open(path, "rb") as fh:
        try:
            return tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: invalid TOML ({exc})") from None


def _read_ini(path: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({str(exc).splitlines()[0]})") from None
    return parser


def read_config_file(path: str) -> Optional[Dict[str, Any]]:
    """The flake8-mha settings in one file, or None when it has none."""
    name = os.path.basename(path)
    if name == "pyproject.toml" or path.endswith(".toml"):
        data = _load_toml(path)
        section = data.get("tool", {}).get("flake8-mha")
        if section is None:
            return None
        if not isinstance(section, dict):
            raise UsageError(f"{path}: [tool.flake8-mha] must be a table")
        return dict(section)
    parser = _read_ini(path)
    if not parser.has_section("flake8-mha"):
        return None
    return dict(parser.items("flake8-mha"))


def read_flake8_section(path: str) -> Optional[Dict[str, Any]]:
    """flake8's ``[flake8]`` section of an ini file, or None when it has none."""
    if path.endswith(".toml"):
        return None
    parser = _read_ini(path)
    if not parser.has_section("flake8"):
        return None
    return dict(parser.items("flake8"))


def _parents(start: str):
    here = os.path.abspath(start)
    while True:
        yield here
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent


def find_config(start: str) -> Optional[Tuple[str, Dict[str, Any]]]:
    """The nearest pyproject.toml/setup.cfg/tox.ini/.flake8 (from ``start``
    upwards) with our section."""
    for here in _parents(start):
        for name in ("pyproject.toml", *INI_FILES):
            candidate = os.path.join(here, name)
            if os.path.isfile(candidate):
                found = read_config_file(candidate)
                if found is not None:
                    return candidate, found
    return None


def find_flake8_config(start: str) -> Optional[str]:
    """flake8's own search: the first of setup.cfg, tox.ini, .flake8 with a
    ``[flake8]`` (or ``[flake8:local-plugins]``) section, from ``start``
    upwards, stopping below the home directory.  A file flake8 cannot parse
    is passed over, as flake8 does."""
    home = os.path.abspath(os.path.expanduser("~"))
    for here in _parents(start):
        for name in INI_FILES:
            parser = configparser.RawConfigParser()
            try:
                parser.read(os.path.join(here, name), encoding="utf-8")
            except (configparser.Error, UnicodeDecodeError):
                continue
            if parser.has_section("flake8") or parser.has_section("flake8:local-plugins"):
                return os.path.join(here, name)
        if os.path.dirname(here) == home:
            return None
    return None


def _names_our_codes(codes: Sequence[str]) -> bool:
    return any("MHA".startswith(c) or c.startswith("MHA") for c in codes)


def apply_flake8_config(opts: Options, settings: Dict[str, Any], path: str) -> None:
    """flake8's keys of ``[flake8]``, with flake8's meaning; its other keys are
    left to flake8.  A ``select`` that names none of our codes (``E,W,F``)
    is for the other plugins: ours keep their default selection."""
    base = os.path.dirname(os.path.abspath(path))
    for raw_key, value in settings.items():
        key = raw_key.replace("_", "-").lower()
        where = f"{os.path.basename(path)}: [flake8] {key}"
        if key not in FLAKE8_KEYS:
            continue
        if key == "select":
            codes = code_list(value, where, known=False)
            if _names_our_codes(codes):
                opts.select = codes
        elif key == "ignore":
            opts.ignore = code_list(value, where, known=False)
        elif key in ("extend-select", "extend-ignore", "enable-extensions"):
            setattr(opts, key.replace("-", "_"), code_list(value, where, known=False))
        elif key == "per-file-ignores":
            # flake8 takes these patterns from the current directory
            opts.per_file_ignores = per_file_ignores(value, where, os.getcwd(), known=False)
        elif key in ("exclude", "extend-exclude"):
            setattr(opts, key.replace("-", "_"), exclude_patterns(value, where, base))
        elif key == "max-line-length":
            opts.max_line_length = line_length_value(value, where)


def apply_config(opts: Options, settings: Dict[str, Any], path: str) -> None:
    base = os.path.dirname(os.path.abspath(path))
    for raw_key, value in settings.items():
        key = raw_key.replace("_", "-").lower()
        where = f"{os.path.basename(path)}: {key}"
        if key not in CONFIG_KEYS:
            raise UsageError(
                f"{path}: unknown option {raw_key!r} (known: {', '.join(CONFIG_KEYS)})"
            )
        if key in ("select", "ignore"):
            setattr(opts, key, code_list(value, where))
        elif key in ("extend-select", "extend-ignore", "enable-extensions"):
            setattr(opts, key.replace("-", "_"), code_list(value, where))
        elif key == "per-file-ignores":
            opts.per_file_ignores = per_file_ignores(value, where, base)
        elif key in ("exclude", "extend-exclude"):
            setattr(opts, key.replace("-", "_"), exclude_patterns(value, where, base))
        elif key == "max-line-length":
            opts.max_line_length = line_length_value(value, where)
        elif key == "format":
            opts.format = format_value(value, where)
        elif key == "jobs":
            opts.jobs = jobs_value(value, where)
        elif key in ("output-file", "cache-dir"):
            if not isinstance(value, str):
                raise UsageError(f"{where} must be a path")
            setattr(opts, key.replace("-", "_"), os.path.join(base, value))
        else:
            setattr(opts, key.replace("-", "_"), bool_value(value, where))


PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "tox.ini", ".flake8", ".git")


def project_root(start: str) -> str:
    """The nearest ancestor of ``start`` holding a project marker (where ruff
    and mypy keep their caches), or ``start`` itself when none has one."""
    for here in _parents(start):
        if any(os.path.exists(os.path.join(here, m)) for m in PROJECT_MARKERS):
            return here
    return os.path.abspath(start)
