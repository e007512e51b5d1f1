"""Issue 28, "Done when": docs/cli.md lists every option of ``check`` and
``confirm``'s lint options next to flake8's and ruff's names for them."""
from __future__ import annotations

import pathlib
import re

from flake8_mha.frontends.check import _parser
from flake8_mha.frontends.confirm_cli import build_parser

ROOT = pathlib.Path(__file__).resolve().parent.parent
CLI = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
TABLE = CLI[CLI.index("### Options, beside flake8's and ruff's names"):CLI.index("### Exit status")]
CONFIRM_ONLY = {"--json", "--fail-on", "--timeout", "--budget", "--memory-limit", "--cpu-limit",
                "--no-progress"}


def _rows():
    rows = {}
    for line in TABLE.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            for option in re.findall(r"`(-[-\w]+)", cells[0]):
                rows[option] = cells
    return rows


def _options(parser):
    return {s for action in parser._actions for s in action.option_strings} - {"-h", "--help"}


def test_every_check_option_has_a_row_with_flake8_and_ruff_names():
    rows = _rows()
    options = _options(_parser())
    assert options and options <= set(rows), sorted(options - set(rows))
    for option in options:
        _, what, flake8, ruff = rows[option]
        assert what and flake8 and ruff, option


def test_confirm_s_lint_options_are_check_s():
    assert _options(build_parser()) - CONFIRM_ONLY <= _options(_parser())
