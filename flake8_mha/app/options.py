"""The lint options of the command line, shared by ``flake8-mha check`` and
``flake8-mha confirm``: the arguments, and the ``Options`` they make together
with the configuration file.
"""

from __future__ import annotations

import argparse
import os
from typing import Optional

from .config import (
    Options,
    UsageError,
    apply_config,
    apply_flake8_config,
    code_list,
    exclude_patterns,
    find_config,
    find_flake8_config,
    jobs_value,
    line_length_value,
    per_file_ignores,
    project_root,
    read_config_file,
    read_flake8_section,
)


def add_lint_arguments(parser: argparse.ArgumentParser, repeatable: bool = False) -> None:
    """The options every linting command takes.  ``repeatable``: a code list
    option given twice adds up (confirm's historical behaviour); otherwise the
    last one wins (check's, as flake8's)."""
    codes = {"action": "append"} if repeatable else {}
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="files and directories (*.py, *.pyi, *.ipynb below directories); - reads stdin",
    )
    parser.add_argument(
        "--select",
        metavar="CODES",
        **codes,
        help=(
            "comma-separated code prefixes to report (replaces the default, MHA without "
            "the opt-in MHA9xx codes; a prefix given here turns on the opt-in codes it names)"
        ),
    )
    parser.add_argument(
        "--ignore",
        metavar="CODES",
        **codes,
        help="comma-separated code prefixes not to report (replaces the default ignore list; "
        "the opt-in MHA9xx codes stay off unless selected)",
    )
    parser.add_argument("--extend-select", metavar="CODES", **codes, help="add to --select")
    parser.add_argument("--extend-ignore", metavar="CODES", **codes, help="add to --ignore")
    parser.add_argument(
        "--enable-extensions",
        metavar="CODES",
        **codes,
        help="turn on off-by-default codes, as flake8's option does (MHA9)",
    )
    parser.add_argument(
        "--per-file-ignores",
        metavar="ENTRIES",
        help="'PATTERN[,PATTERN]: CODES' entries: codes not reported in matching files",
    )
    parser.add_argument(
        "--exclude",
        metavar="PATTERNS",
        help="comma-separated glob patterns to skip; replaces the defaults "
        "(.git, virtualenvs, build, dist, ...), as in flake8",
    )
    parser.add_argument(
        "--extend-exclude", metavar="PATTERNS", help="glob patterns to skip, added to --exclude"
    )
    parser.add_argument(
        "--no-respect-gitignore",
        action="store_true",
        default=None,
        help="also lint the files that .gitignore names",
    )
    parser.add_argument(
        "--max-line-length",
        metavar="N",
        help=(
            "the longest line a fix may write (default: flake8's max-line-length when "
            "its configuration sets one; none otherwise: 79 is not assumed)"
        ),
    )
    parser.add_argument(
        "--stdin-display-name",
        metavar="NAME",
        help="the name of the file read from stdin (-), in the report (default: stdin)",
    )
    parser.add_argument(
        "-j", "--jobs", metavar="N", help="check files in N processes ('auto': one per CPU)"
    )
    parser.add_argument(
        "--disable-noqa",
        action="store_true",
        default=None,
        help="report findings even on lines with # noqa",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="read settings from this file only ([flake8] and [flake8-mha], or pyproject.toml)",
    )
    parser.add_argument("--isolated", action="store_true", help="ignore configuration files")
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="keep per-file results in DIR for the next run (default: "
        ".flake8-mha-cache at the project root)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        default=None,
        help="neither read nor write the cache of per-file results",
    )
    parser.add_argument(
        "--dependents",
        action="store_true",
        default=None,
        help="also check the project files that import one of the named files, and those "
        "the named files import, directly or through imports (the pre-commit hook: a "
        "changed wrapper changes its callers' findings, a changed caller its callees'; "
        "docs/reach.md)",
    )
    parser.add_argument(
        "--no-project-wide",
        action="store_true",
        default=None,
        help="do not follow calls into the project's other files (docs/reach.md)",
    )


def options_from_args(args: argparse.Namespace, cwd: Optional[str] = None) -> Options:
    """Defaults, then the configuration file, then the command line, key by key.
    Raises UsageError."""
    opts = Options()
    cwd = cwd or os.getcwd()
    opts.cache_dir = os.path.join(project_root(cwd), opts.cache_dir)
    if args.config and args.isolated:
        raise UsageError("--config and --isolated cannot be used together")
    if args.config:
        if not os.path.isfile(args.config):
            raise UsageError(f"no such configuration file: {args.config}")
        flake8_settings = read_flake8_section(args.config)
        if flake8_settings is not None:
            apply_flake8_config(opts, flake8_settings, args.config)
        settings = read_config_file(args.config)
        if settings is not None:
            apply_config(opts, settings, args.config)
    elif not args.isolated:
        flake8_file = find_flake8_config(cwd)
        if flake8_file is not None:
            apply_flake8_config(opts, read_flake8_section(flake8_file) or {}, flake8_file)
        found = find_config(cwd)
        if found is not None:
            apply_config(opts, found[1], found[0])
    if args.select is not None:
        opts.select = code_list(args.select, "--select")
    if args.ignore is not None:
        opts.ignore = code_list(args.ignore, "--ignore")
    if args.extend_select is not None:
        opts.extend_select = code_list(args.extend_select, "--extend-select")
    if args.extend_ignore is not None:
        opts.extend_ignore = code_list(args.extend_ignore, "--extend-ignore")
    if args.enable_extensions is not None:
        opts.enable_extensions = code_list(args.enable_extensions, "--enable-extensions")
    if args.per_file_ignores is not None:
        opts.per_file_ignores = per_file_ignores(args.per_file_ignores, "--per-file-ignores", cwd)
    if args.exclude is not None:
        opts.exclude = exclude_patterns(args.exclude, "--exclude", cwd)
    if args.extend_exclude is not None:
        opts.extend_exclude = exclude_patterns(args.extend_exclude, "--extend-exclude", cwd)
    if args.no_respect_gitignore:
        opts.respect_gitignore = False
    if args.max_line_length is not None:
        opts.max_line_length = line_length_value(args.max_line_length, "--max-line-length")
    if args.stdin_display_name is not None:
        opts.stdin_display_name = args.stdin_display_name
    if args.jobs is not None:
        opts.jobs = jobs_value(args.jobs, "--jobs")
    if args.disable_noqa:
        opts.disable_noqa = True
    if args.cache_dir is not None:
        opts.cache_dir = args.cache_dir
    if args.no_cache:
        opts.no_cache = True
    if getattr(args, "no_project_wide", None):
        opts.no_project_wide = True
    if getattr(args, "dependents", None):
        opts.dependents = True
    opts.paths = list(args.paths)
    if opts.paths.count("-") > 1:
        raise UsageError("stdin (-) can be read only once")
    for path in opts.paths:
        if path != "-" and not os.path.exists(path):
            raise UsageError(f"no such file or directory: {path}")
    return opts
