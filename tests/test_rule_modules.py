"""How rules are laid out and found: one module per rule (or per pair of
tightly coupled rules) under flake8_mha/rules/, its fix declared beside it,
every module found by discovery, and a broken module an error, never a
silent skip (docs/adding-a-rule.md)."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from flake8_mha.app.fix import FIXES, fixable_codes
from flake8_mha.rules.base import REGISTRY, RuleLoadError, all_rules, rule_modules

RULES = all_rules()
BAD = "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n"


def test_every_rule_module_is_discovered_and_holds_at_most_two_rules():
    modules = set(rule_modules())
    per_module = Counter(rule.__module__ for rule in RULES)
    assert set(per_module) <= modules
    assert all(n <= 2 for n in per_module.values()), per_module
    # a module found by discovery that holds no rule is a stray file
    assert modules == set(per_module), modules - set(per_module)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.CODE)
def test_rule_module_names_its_codes(rule):
    module = sys.modules[rule.__module__]
    name = rule.__module__.rsplit(".", 1)[1]
    assert name.startswith(rule.CODE.lower() + "_") or rule.CODE in (module.__doc__ or "")


@pytest.mark.parametrize("code", sorted(fixable_codes()))
def test_fix_is_declared_in_its_rules_module(code):
    module = sys.modules[REGISTRY[code].__module__]
    assert getattr(module, "FIX", None) is FIXES[code], (
        f"{code}: declare FIX = register(Fix(...)) in {module.__name__}")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.CODE)
def test_page_has_a_fix_section_exactly_when_a_fix_exists(rule):
    from flake8_mha.app.docs import page

    text = page(rule)
    assert ("\n## Fix\n" in text) == (rule.CODE in FIXES), rule.CODE
    if rule.CODE in FIXES:
        assert FIXES[rule.CODE].title in text


def test_mha002_page_has_its_fix():
    from fixture_expect import ROOT

    text = (ROOT / "docs" / "rules" / "MHA002.md").read_text(encoding="utf-8")
    assert "## Fix\n\nInvert the mask where it is used: `attn_mask=~mask`" in text


@pytest.fixture
def broken_rules_dir(tmp_path, monkeypatch):
    """A rules directory with one module that raises on import, added to the package path."""
    rules_dir = tmp_path / "extra_rules"
    rules_dir.mkdir()
    (rules_dir / "mha998_broken.py").write_text("raise ImportError('no module named nowhere')\n")
    monkeypatch.setattr(sys.modules["flake8_mha.rules"], "__path__",
                        list(sys.modules["flake8_mha.rules"].__path__) + [str(rules_dir)])
    return rules_dir


def test_a_rule_module_that_fails_to_import_is_an_error(broken_rules_dir):
    assert "flake8_mha.rules.mha998_broken" in rule_modules()
    with pytest.raises(RuleLoadError) as info:
        all_rules()
    message = str(info.value)
    assert message == ("flake8-mha: rule module flake8_mha.rules.mha998_broken failed to import: "
                       "ImportError: no module named nowhere")
    assert isinstance(info.value, SystemExit)


def test_a_broken_rule_module_is_not_turned_into_per_file_mha000(broken_rules_dir):
    from flake8_mha.lint.engine import analyze_source

    with pytest.raises(RuleLoadError):
        analyze_source(BAD, "x.py")


def _run_with_broken_rule(tmp_path, broken_rules_dir, entry: str) -> subprocess.CompletedProcess:
    target = tmp_path / "model.py"
    target.write_text(BAD)
    code = "\n".join(["import sys", "import flake8_mha.rules as rules",
                      f"rules.__path__.append({str(broken_rules_dir)!r})", entry])
    return subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)


WANT = ("flake8-mha: rule module flake8_mha.rules.mha998_broken failed to import: "
        "ImportError: no module named nowhere\n")


def test_cli_check_stops_with_one_line(tmp_path, broken_rules_dir):
    proc = _run_with_broken_rule(
        tmp_path, broken_rules_dir,
        "from flake8_mha.frontends.cli import main\nsys.exit(main(['check', sys.argv[1]]))")
    assert proc.returncode == 1
    assert proc.stderr == WANT
    assert proc.stdout == ""


def test_flake8_stops_with_one_line(tmp_path, broken_rules_dir):
    proc = _run_with_broken_rule(
        tmp_path, broken_rules_dir,
        "from flake8.main.cli import main\nsys.exit(main(['-j', '1', '--select', 'MHA', sys.argv[1]]))")
    assert proc.returncode == 1
    assert proc.stderr == WANT
    assert "MHA001" not in proc.stdout
