"""docs/cli.md and docs/editors.md stay true to the code."""
from __future__ import annotations

import pathlib
import re

from flake8_mha.app.config import CONFIG_KEYS, FORMATS
from flake8_mha.app.fix import NEVER_FIXED, fixable_codes
from flake8_mha.app.output import JSON_SCHEMA_VERSION
from flake8_mha.app.pipeline import DEFAULT_EXCLUDES

ROOT = pathlib.Path(__file__).resolve().parent.parent
CLI = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
EDITORS = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")


def test_every_fixable_code_has_a_row_in_the_autofix_table():
    section = CLI[CLI.index("### Autofix"):CLI.index("### Parallel runs")]
    rows = set(re.findall(r"^\| (MHA\d{3}) \|", section, re.M))
    assert fixable_codes() == rows


def test_codes_that_are_never_fixed_are_said_so():
    for code in NEVER_FIXED:
        assert f"**{code} is never auto-fixed.**" in CLI


def test_formats_keys_excludes_and_schema_version_are_documented():
    for fmt in FORMATS:
        assert f"`{fmt}`" in CLI or f"**{fmt}**" in CLI
    for key in CONFIG_KEYS:
        assert f"`{key}`" in CLI
    for name in DEFAULT_EXCLUDES:
        assert f"`{name}`" in CLI
    assert f'"version": {JSON_SCHEMA_VERSION}' in CLI


def test_editor_settings_match_the_tested_ones():
    from test_editor_pylsp import SETTINGS

    plugins = SETTINGS["pylsp"]["plugins"]
    for name in ("flake8", "pycodestyle", "pyflakes", "mccabe"):
        state = "true" if plugins[name]["enabled"] else "false"
        assert f'"{name}": {{"enabled": {state}}}' in EDITORS
    assert '"flake8.importStrategy": "fromEnvironment"' in EDITORS
