"""Options for ``flake8-mha check``: defaults, configuration files, and which
codes a run reports.

Configuration comes from ``[tool.flake8-mha]`` in ``pyproject.toml`` or
``[flake8-mha]`` in ``setup.cfg``, found in the current directory or the
nearest parent that has one; the command line wins key by key.

Which codes are reported follows flake8's own decision rules exactly, so
``flake8-mha check`` and ``flake8 --select MHA`` agree: an explicit
``--select`` beats a default ignore, an explicit ``--ignore`` beats a default
select, and when a code is matched by both lists the longer prefix wins.
"""
from __future__ import annotations

import configparser
import os
import re
import sys
from dataclasses import dataclass, field
from fnmatch import fnmatch
from typing import Any, Dict, List, Optional, Sequence, Tuple

# Never walked into (a file named on the command line inside one is skipped
# too, as flake8 does).  Any directory holding a ``pyvenv.cfg`` is a
# virtualenv, whatever its name, and is skipped as well.
DEFAULT_EXCLUDES: Tuple[str, ...] = (
    ".git", ".hg", ".svn", ".bzr", "CVS", ".tox", ".nox", ".venv", "venv", "__pycache__",
    "__pypackages__", "build", "dist", ".eggs", "*.egg",
    "*.egg-info", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".ipynb_checkpoints", "site-packages",
)
DEFAULT_SELECT: Tuple[str, ...] = ("MHA",)
FORMATS = ("text", "json", "sarif", "github")
_CODE_PREFIX = re.compile(r"^[A-Z]{1,3}[0-9]{0,3}$")


class UsageError(Exception):
    """A bad command line or configuration value: one line, exit status 2."""


def default_ignore() -> Tuple[str, ...]:
    from .plugin import OFF_BY_DEFAULT

    return tuple(OFF_BY_DEFAULT)


@dataclass
class Options:
    paths: List[str] = field(default_factory=list)
    select: Optional[List[str]] = None
    ignore: Optional[List[str]] = None
    extend_select: List[str] = field(default_factory=list)
    extend_ignore: List[str] = field(default_factory=list)
    enable_extensions: List[str] = field(default_factory=list)
    exclude: List[str] = field(default_factory=list)  # absolute or basename patterns
    format: str = "text"
    output_file: Optional[str] = None
    statistics: bool = False
    jobs: int = 1
    disable_noqa: bool = False
    fix: bool = False
    diff: bool = False
    config_file: Optional[str] = None  # the file the settings came from, if any

    def codes(self) -> List[str]:
        """Every rule code this run reports."""
        from .rules.base import all_rules

        decide = Decider(self)
        return [r.CODE for r in all_rules() if decide(r.CODE)]


class Decider:
    """flake8's DecisionEngine, restated for our codes (flake8 7.x semantics)."""

    def __init__(self, opts: Options) -> None:
        self.selected_explicitly = _sorted([*(opts.select or []), *opts.extend_select])
        self.ignored_explicitly = _sorted([*(opts.ignore or []), *opts.extend_ignore])
        if opts.select is not None:
            self.selected = _sorted([*opts.select, *opts.extend_select])
        else:
            self.selected = _sorted([*DEFAULT_SELECT, *opts.extend_select])
        if opts.ignore is not None:
            self.ignored = _sorted([*opts.ignore, *opts.extend_ignore])
        else:
            enabled = opts.enable_extensions
            defaults = [c for c in default_ignore()
                        if not any(c.startswith(e) or e.startswith(c) for e in enabled)]
            self.ignored = _sorted([*defaults, *opts.extend_ignore])

    def __call__(self, code: str) -> bool:
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
        if sel is None and ign is not None:
            return False
        if sel is None and ign is None:
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


def code_list(value: Any, key: str) -> List[str]:
    codes = [c.upper() for c in split_list(value, key)]
    for code in codes:
        if not _CODE_PREFIX.match(code):
            raise UsageError(f"{key}: {code!r} is not a code prefix such as MHA, MHA0 or MHA001")
    return codes


def exclude_patterns(value: Any, key: str, base: str) -> List[str]:
    """Patterns with a slash are taken relative to ``base`` (flake8 does the same)."""
    out = []
    for pat in split_list(value, key):
        pat = pat.rstrip("/") if len(pat) > 1 else pat
        if "/" in pat or os.sep in pat:
            pat = os.path.abspath(os.path.join(base, pat))
        out.append(pat)
    return out


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


# -- configuration files ------------------------------------------------------

CONFIG_KEYS = ("select", "ignore", "extend-select", "extend-ignore", "enable-extensions",
               "exclude", "format", "jobs", "statistics", "disable-noqa", "output-file")


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
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({str(exc).splitlines()[0]})") from None
    if not parser.has_section("flake8-mha"):
        return None
    return dict(parser.items("flake8-mha"))


def find_config(start: str) -> Optional[Tuple[str, Dict[str, Any]]]:
    """The nearest pyproject.toml/setup.cfg (from ``start`` upwards) with our section."""
    here = os.path.abspath(start)
    while True:
        for name in ("pyproject.toml", "setup.cfg"):
            candidate = os.path.join(here, name)
            if os.path.isfile(candidate):
                found = read_config_file(candidate)
                if found is not None:
                    return candidate, found
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def apply_config(opts: Options, settings: Dict[str, Any], path: str) -> None:
    base = os.path.dirname(os.path.abspath(path))
    for raw_key, value in settings.items():
        key = raw_key.replace("_", "-").lower()
        where = f"{os.path.basename(path)}: {key}"
        if key not in CONFIG_KEYS:
            raise UsageError(f"{path}: unknown option {raw_key!r} "
                             f"(known: {', '.join(CONFIG_KEYS)})")
        if key in ("select", "ignore"):
            setattr(opts, key, code_list(value, where))
        elif key in ("extend-select", "extend-ignore", "enable-extensions"):
            setattr(opts, key.replace("-", "_"), code_list(value, where))
        elif key == "exclude":
            opts.exclude = exclude_patterns(value, where, base)
        elif key == "format":
            opts.format = format_value(value, where)
        elif key == "jobs":
            opts.jobs = jobs_value(value, where)
        elif key == "output-file":
            if not isinstance(value, str):
                raise UsageError(f"{where} must be a path")
            opts.output_file = os.path.join(base, value)
        else:
            setattr(opts, key.replace("-", "_"), bool_value(value, where))
    opts.config_file = path


# -- files to lint ------------------------------------------------------------

def is_excluded(path: str, patterns: Sequence[str]) -> bool:
    """flake8's rule: a pattern matches the base name, or the absolute path."""
    if not patterns:
        return False
    base = os.path.basename(path.rstrip("/\\") or path)
    if base not in (".", "..") and any(fnmatch(base, p) for p in patterns):
        return True
    absolute = os.path.abspath(path)
    return any(fnmatch(absolute, p) for p in patterns)


def lintable(name: str) -> bool:
    return name.endswith((".py", ".pyi", ".ipynb"))


def discover(paths: Sequence[str], extra_excludes: Sequence[str] = ()) -> List[str]:
    """Files to lint, in a stable order: each named file as given (unless
    excluded), and ``*.py``/``*.pyi``/``*.ipynb`` below each directory, sorted."""
    patterns = list(DEFAULT_EXCLUDES) + list(extra_excludes)
    out: List[str] = []
    seen = set()

    def add(path: str) -> None:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append(path)

    for arg in paths:
        if is_excluded(arg, patterns) and arg not in (".", ".."):
            continue
        if os.path.isdir(arg):
            for root, dirs, files in os.walk(arg):
                dirs[:] = sorted(d for d in dirs if not is_excluded(os.path.join(root, d), patterns)
                                 and not os.path.isfile(os.path.join(root, d, "pyvenv.cfg")))
                for name in sorted(files):
                    full = os.path.join(root, name)
                    if lintable(name) and not is_excluded(full, patterns):
                        add(full)
        else:
            add(arg)
    return out
