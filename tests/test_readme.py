"""The README's promises: its test command is the one CI runs, every rule is in its table."""
from __future__ import annotations

import re

from fixture_expect import ROOT
from flake8_mha.rules.base import all_rules

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands():
    return re.findall(r"```\n(pip install [^\n]+)\n```", README)


def test_readme_has_the_two_commands_and_ci_runs_the_test_one():
    main, test = _commands()[:2]
    assert "flake8-mha confirm fixtures/" in main
    assert "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test in ci
    assert "pip install torch==2.13.0" in ci


def test_every_rule_is_in_the_readme_table():
    for rule in all_rules():
        assert re.search(rf"\| \[{rule.CODE}\]\(docs/rules/{rule.CODE}\.md\) \| {rule.NAME} \|", README), rule.CODE
