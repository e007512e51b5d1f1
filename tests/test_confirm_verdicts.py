"""The verdict corpus: every finding of every fixture, confirmed at runtime,
gets the verdict its fixture labels it with.

Labels (docs/confirm.md, "The verdict corpus"):

* inline, after a finding's ``code:column`` marker: ``# MHA006:16 => NOT
  REPRODUCED``; alternatives with ``|`` for timing verdicts
  (``=> CONFIRMED*|INCONCLUSIVE``);
* a ``# verdict: MHA002 CONFIRMED`` line labels every finding of that code in
  the file, ``# verdict: MHA002@117 CONFIRMED*`` the one on line 117. Existing
  fixtures carry these lines at their end, so no line number moves.

An inline label wins over a line label, a line label over a code label. A
finding without a label fails the test: a new finding must be labelled.
The fixtures under ``fixtures/verdicts/`` hold findings whose facts make the
flagged pattern harmless (NOT REPRODUCED) beside ones that confirm.
"""
from __future__ import annotations

import importlib.util
import os
import re
from typing import Dict, FrozenSet, List, Optional, Tuple

import pytest

from fixture_expect import fixture_files, selected
from flake8_mha.confirm.report import render_table, to_json, witness_cell
from flake8_mha.confirm.runner import FAIL_ON, Outcome
from flake8_mha.confirm.witnesses import (
    CONFIRMED, CONFIRMED_ASSUMED, INCONCLUSIVE, NOT_REPRODUCED, SKIPPED,
)
from flake8_mha.core.findings import Finding

_VERDICT = r"(?:CONFIRMED\*?|NOT REPRODUCED|INCONCLUSIVE|SKIPPED)"
_INLINE = re.compile(rf"\b(MHA\d{{3}}):\d+\s*=>\s*({_VERDICT}(?:\|{_VERDICT})*)")
_FILE = re.compile(rf"^#\s*verdict:\s*(MHA\d{{3}})(?:@(\d+))?\s+({_VERDICT}(?:\|{_VERDICT})*)\s*$")

Key = Tuple[int, str]


def labels(text: str) -> Tuple[Dict[Key, FrozenSet[str]], Dict[str, FrozenSet[str]]]:
    """(line, code) -> verdicts, and code -> verdicts for the whole file."""
    by_line: Dict[Key, FrozenSet[str]] = {}
    by_code: Dict[str, FrozenSet[str]] = {}
    inline: Dict[Key, FrozenSet[str]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _FILE.match(line.strip())
        if m:
            code, at, verdicts = m.groups()
            target = frozenset(verdicts.split("|"))
            if at:
                by_line[(int(at), code)] = target
            else:
                by_code[code] = target
            continue
        if "#" in line:
            for code, verdicts in _INLINE.findall(line[line.index("#"):]):
                inline[(lineno, code)] = frozenset(verdicts.split("|"))
    by_line.update(inline)
    return by_line, by_code


def label_for(text: str, line: int, code: str) -> Optional[FrozenSet[str]]:
    by_line, by_code = labels(text)
    return by_line.get((line, code)) or by_code.get(code)


# ------------------------------------------------------- the parser itself

def test_labels_inline_wins_over_line_and_code_labels():
    text = ("x = f()  # MHA006:5 => NOT REPRODUCED MHA007:5 => CONFIRMED*|INCONCLUSIVE\n"
            "y = g()  # MHA006:5\n"
            "z = h()  # MHA006:5\n"
            "# verdict: MHA006 CONFIRMED\n"
            "# verdict: MHA006@3 CONFIRMED*\n"
            "# verdict: MHA006@1 SKIPPED\n")
    assert label_for(text, 1, "MHA006") == {NOT_REPRODUCED}
    assert label_for(text, 1, "MHA007") == {CONFIRMED_ASSUMED, INCONCLUSIVE}
    assert label_for(text, 2, "MHA006") == {CONFIRMED}
    assert label_for(text, 3, "MHA006") == {CONFIRMED_ASSUMED}
    assert label_for(text, 2, "MHA101") is None


def test_verdict_labels_do_not_read_as_finding_expectations():
    from fixture_expect import _EXPECT

    assert _EXPECT.findall("# verdict: MHA002@117 CONFIRMED*") == []
    assert _EXPECT.findall("# MHA006:16 => NOT REPRODUCED") == [("MHA006", "16")]


# ------------------------------------------------------- report and gating

def _outcome(verdict: str, **kw) -> Outcome:
    return Outcome(Finding("MHA006", 4, 16, "m", "pkg/model.py", {}), verdict, **kw)


def test_table_and_json_mark_the_assumptions_a_verdict_rests_on():
    o = _outcome(CONFIRMED_ASSUMED, witness="sdpa", damage="2.834e+00",
                 assumed=["embed_dim unknown: used 64", "mask origin unknown: used padding"],
                 depends_on=["mask origin unknown: used padding"])
    assert witness_cell(o) == ("sdpa [assumed*: mask origin unknown: used padding] "
                               "[assumed: embed_dim unknown: used 64]")
    row = render_table([o], width=140).splitlines()[2]
    assert row.split()[:3] == ["pkg/model.py:4:16", "MHA006", "CONFIRMED*"]
    doc = to_json([o], paths=["."], settings={}, torch_version=None, seconds=0.0,
                  exit_status=1)
    assert doc["version"] == 2
    result = doc["results"][0]
    assert result["verdict"] == "CONFIRMED*"
    assert result["depends_on"] == ["mask origin unknown: used padding"]
    assert doc["summary"]["CONFIRMED*"] == 1 and doc["summary"]["INCONCLUSIVE"] == 0


@pytest.mark.parametrize("fail_on, fails", [
    ("confirmed", {CONFIRMED, CONFIRMED_ASSUMED}),
    ("proven", {CONFIRMED}),
    ("none", set()),
])
def test_fail_on_counts_these_verdicts(fail_on, fails):
    every = {CONFIRMED, CONFIRMED_ASSUMED, NOT_REPRODUCED, INCONCLUSIVE, SKIPPED, "ERROR",
             "TIMEOUT", "CRASHED"}
    assert {v for v in every if v in FAIL_ON[fail_on]} == fails


# ------------------------------------------------------- the corpus

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed (pip install 'flake8-mha[confirm]')")


@pytest.fixture(scope="module")
def corpus() -> List[Tuple[Finding, Outcome, str]]:
    """Every finding of every fixture, through one confirm run."""
    from flake8_mha.confirm.runner import Runner
    from flake8_mha.confirm.worker import TEST_FAULTS_ENV
    from flake8_mha.lint.engine import analyze_source, select_codes

    findings: List[Tuple[Finding, str]] = []
    for path in fixture_files():
        sel = selected(path)
        text = path.read_text(encoding="utf-8")
        for f in analyze_source(text, str(path), codes=select_codes(select=sel or None)):
            findings.append((f, text))
    env = {k: v for k, v in os.environ.items() if k != TEST_FAULTS_ENV}
    runner = Runner(timeout=120, budget=None, env=env)
    try:
        runner.ready()
        outcomes = runner.run([f for f, _ in findings])
    finally:
        runner.close()
    return [(f, o, text) for (f, text), o in zip(findings, outcomes)]


@needs_torch
def test_every_fixture_finding_gets_its_labelled_verdict(corpus):
    wrong, unlabelled = [], []
    for finding, outcome, text in corpus:
        where = f"{os.path.relpath(finding.path)}:{finding.line}:{finding.col} {finding.code}"
        want = label_for(text, finding.line, finding.code)
        if want is None:
            unlabelled.append(f"{where} got {outcome.verdict}")
        elif outcome.verdict not in want:
            wrong.append(f"{where}: {outcome.verdict}, labelled {'|'.join(sorted(want))} "
                         f"({outcome.reason or outcome.damage[:160]})")
    assert not unlabelled, "label these findings:\n" + "\n".join(unlabelled)
    assert not wrong, "\n".join(wrong)


@needs_torch
def test_the_corpus_holds_harmless_findings_and_confirmed_ones(corpus):
    got = {o.verdict for f, o, _ in corpus if "verdicts" in f.path.replace(os.sep, "/")}
    assert {CONFIRMED, CONFIRMED_ASSUMED, NOT_REPRODUCED} <= got


@needs_torch
def test_a_confirmed_star_names_what_it_rests_on_and_a_confirmed_rests_on_nothing(corpus):
    for finding, outcome, _ in corpus:
        if outcome.verdict == CONFIRMED_ASSUMED:
            assert outcome.depends_on, finding
            assert set(outcome.depends_on) <= set(outcome.assumed), finding
        else:
            assert outcome.depends_on == [], finding


# ------------------------------------------------------- the facts rules hand over

def test_mha006_evidence_tells_the_causal_triangle_from_a_padding_mask():
    from fixture_expect import FIXTURES
    from flake8_mha.lint.engine import analyze_source, select_codes

    path = FIXTURES / "verdicts" / "MHA006_causal_triangle.py"
    found = {f.line: f.evidence for f in analyze_source(
        path.read_text(encoding="utf-8"), str(path), select_codes(["MHA006"]))}
    assert found[18]["is_causal"] is True and found[18]["dropout_p"] == 0.0
    assert found[18]["mask"]["origin"] == "causal_triangle"
    assert found[18]["mask"]["source"].startswith("line 16: torch.tril(")
    assert found[23]["mask"]["origin"] == "causal_triangle"  # generate_square_subsequent_mask
    assert found[23]["mask"]["kind"] == "additive"
    assert found[28]["mask"]["origin"] == "causal_triangle"  # ~triu(..., 1)
    assert found[59]["mask"]["origin"] == "padding"
    assert found[66]["mask"]["origin"] is None and found[66]["mask"]["by_name"] is False
