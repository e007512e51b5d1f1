"""The project-aware gate never drops a file that reports (issue 26): on every
fixture file, and on every fixture package's files, the findings with the
text pre-filter and the gate are those of an ungated run."""
from __future__ import annotations

import pytest

from fixture_expect import FIXTURES
from flake8_mha.lint import engine

FILES = sorted(FIXTURES.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_gated_and_ungated_runs_agree(path):
    text = path.read_text(encoding="utf-8")
    gated = engine.analyze_source(text, str(path))
    ungated = engine.analyze_source(text, str(path), use_prefilter=False)
    assert [(f.code, f.line, f.col, f.message) for f in gated] == [
        (f.code, f.line, f.col, f.message) for f in ungated]


def test_the_gate_is_what_admits_the_files_without_an_attention_word():
    # these fixture files name no attention API: only the gate lets them report
    admitted = [p for p in FILES if not engine.prefilter(p.read_text(encoding="utf-8"))
                and engine.analyze_source(p.read_text(encoding="utf-8"), str(p))]
    names = {p.relative_to(FIXTURES).as_posix() for p in admitted}
    assert {"program_calls/zoo/model.py", "program_calls/zoo/tower.py",
            "program_calls/zoo/kv.py"} <= names
