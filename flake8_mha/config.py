"""Options for ``flake8-mha check`` and ``confirm``: defaults, configuration files, and which
codes a run reports.

Configuration comes from ``[tool.flake8-mha]`` in ``pyproject.toml`` or
``[flake8-mha]`` in ``setup.cfg``, found in the current directory or the
nearest parent that has one; the command line wins key by key.

Which codes are reported is decided in ``selection.py`` (flake8's own
decision rules); which files are linted, in ``pipeline.py``.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import selection
from .selection import Decider

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
    exclude: List[str] = field(default_factory=list)  # absolute or basename patterns
    format: str = "text"
    output_file: Optional[str] = None
    statistics: bool = False
    jobs: int = 1
    disable_noqa: bool = False
    fix: bool = False
    diff: bool = False
    cache_dir: str = ".flake8-mha-cache"  # cache.py; relative to the current directory
    no_cache: bool = False
    no_project_wide: bool = False  # program/: follow calls into the project's other files

    def codes(self) -> List[str]:
        """Every rule code this run reports."""
        return selection.codes(self.decider())

    def decider(self) -> Decider:
        return Decider(
            self.select, self.ignore, self.extend_select, self.extend_ignore, self.enable_extensions
        )


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
    try:
        return selection.check_prefixes(split_list(value, key), key)
    except selection.SelectionError as exc:
        raise UsageError(str(exc)) from None


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

CONFIG_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "extend-ignore",
    "enable-extensions",
    "exclude",
    "format",
    "jobs",
    "statistics",
    "disable-noqa",
    "output-file",
    "cache-dir",
    "no-cache",
    "no-project-wide",
)


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
            raise UsageError(
                f"{path}: unknown option {raw_key!r} (known: {', '.join(CONFIG_KEYS)})"
            )
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
        elif key in ("output-file", "cache-dir"):
            if not isinstance(value, str):
                raise UsageError(f"{where} must be a path")
            setattr(opts, key.replace("-", "_"), os.path.join(base, value))
        else:
            setattr(opts, key.replace("-", "_"), bool_value(value, where))
