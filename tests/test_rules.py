"""Each rule class is complete, and its own VALID/INVALID examples hold."""
from __future__ import annotations

import pytest

from fixture_expect import ROOT, expected, fixture_files
from flake8_mha.lint.engine import analyze_source
from flake8_mha.rules.base import all_rules

RULES = all_rules()
STATIC = [r for r in RULES if r.CODE != "MHA000"]


def test_codes_are_flake8_valid_and_unique():
    import re

    codes = [r.CODE for r in RULES]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"MHA\d{3}", c) for c in codes)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.CODE)
def test_rule_has_every_part(rule):
    for attr in ("NAME", "MESSAGE", "WHAT", "WHY", "EXAMPLE", "USE_INSTEAD"):
        assert getattr(rule, attr).strip(), f"{rule.CODE} lacks {attr}"
    assert rule.VALID, f"{rule.CODE} has no VALID example"
    page = ROOT / "docs" / "rules" / f"{rule.CODE}.md"
    assert page.exists(), f"{rule.CODE} has no docs page"
    if rule.CODE != "MHA000":
        assert rule.INVALID, f"{rule.CODE} has no INVALID example"
        assert any(rule.CODE in {c for (_, _, c) in expected(p)} for p in fixture_files()), (
            f"{rule.CODE} has no fixture")


@pytest.mark.parametrize("rule", STATIC, ids=lambda r: r.CODE)
def test_rule_has_a_confirmer_witness(rule):
    from flake8_mha.confirm.witnesses import WITNESSES

    assert rule.CODE in WITNESSES, f"{rule.CODE} has no confirmer witness"


def _examples(kind):
    for rule in STATIC:
        for i, ex in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, ex, id=f"{rule.CODE}-{kind}-{i}")


@pytest.mark.parametrize("rule,source", list(_examples("VALID")))
def test_valid_examples_are_clean(rule, source):
    found = [f for f in analyze_source(source, codes=[rule.CODE]) if f.code == rule.CODE]
    assert found == []


@pytest.mark.parametrize("rule,example", list(_examples("INVALID")))
def test_invalid_examples_report_at_the_stated_place(rule, example):
    found = analyze_source(example.source, codes=[rule.CODE])
    assert [(f.code, f.line, f.col) for f in found] == [(rule.CODE, example.line, example.col)]


def test_docs_pages_are_generated_from_the_classes():
    from flake8_mha.app.docs import main

    assert main(["--check"]) == 0, "run: python -m flake8_mha.app.docs"


def test_explain_prints_the_page(capsys):
    from flake8_mha.frontends.cli import main

    assert main(["explain", "mha001"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# MHA001: batch-first-unset")
    assert "## Why is this bad?" in out


def test_opt_in_codes_match_the_plugin_list():
    from flake8_mha.frontends.plugin import OFF_BY_DEFAULT

    assert tuple(sorted(r.CODE for r in RULES if not r.DEFAULT_ENABLED)) == OFF_BY_DEFAULT
