"""Issue 30 in the thirty-sixth stop: a project's import graph is built once
per run (``core/runs.py``), not once per file that asks for it, and an
editor's long-lived process still reads what changed on disk at its next
lint."""

from __future__ import annotations

import gc
import json

from flake8.main import cli

from fixture_expect import FIXTURES, copied
from flake8_mha.analysis.program import callers
from flake8_mha.core import runs

CALLERS = FIXTURES / "program_calls" / "callers"
NEW_IMPORTER = (
    "from .attend import causal_attend\n\n\n"
    "def ranked(q, k, v, keep):\n"
    "    return causal_attend(q, k, v, keep)\n"
)


def _flake8_in_process(capsys, *args):
    """flake8 called as an editor's extension calls it, in this process: the
    findings as (file name, line, column, code)."""
    status = cli.main(["--isolated", "--select", "MHA", "--mha-no-cache", "-j", "1", *args])
    out = capsys.readouterr().out
    assert status == (1 if out else 0)
    rows = []
    for line in out.splitlines():
        path, line_no, col, rest = line.split(":", 3)
        rows.append((path.rsplit("/", 1)[-1], int(line_no), int(col), rest.split()[0]))
    return rows


def test_an_editor_process_reads_a_new_importer_at_its_next_lint(tmp_path, capsys):
    # causal_attend's every call passes no mask, so its MHA006 pair is harmless;
    # extra.py, which imported nothing at the first lint, now hands it a mask
    pkg = copied(CALLERS, tmp_path)
    extra = pkg / "extra.py"
    extra.write_text("RANKS = 3\n")
    attend = str(pkg / "attend.py")
    first = _flake8_in_process(capsys, attend)
    assert ("attend.py", 41, 12, "MHA006") in first
    assert ("attend.py", 37, 12, "MHA006") not in first
    extra.write_text(NEW_IMPORTER)
    second = _flake8_in_process(capsys, attend)
    assert sorted(second) == sorted(first + [("attend.py", 37, 12, "MHA006")])


def test_one_run_reads_the_import_graph_once(tmp_path, capsys, monkeypatch):
    pkg = copied(CALLERS, tmp_path)
    reads = []
    original = callers._imported_files

    def counted(path):
        reads.append(path)
        return original(path)

    monkeypatch.setattr(callers, "_imported_files", counted)
    found = _flake8_in_process(capsys, str(pkg))
    assert len(found) == 10
    model = str(pkg / "model.py")
    # four files linted, each asking who imports it: model.py's imports are read once
    assert reads.count(model) == 1
    _flake8_in_process(capsys, str(pkg))
    assert reads.count(model) == 2  # a new run reads them again


def test_the_run_ends_with_flake8_s_invocation(capsys):
    _flake8_in_process(capsys, str(CALLERS / "model.py"))
    gc.collect()
    assert runs.current() == 0  # the engine called directly keeps nothing


def test_check_reads_the_import_graph_once_per_run(tmp_path, capsys, monkeypatch):
    from flake8_mha.frontends.check import main as check_main

    pkg = copied(CALLERS, tmp_path)
    reads = []
    original = callers._imported_files
    monkeypatch.setattr(callers, "_imported_files", lambda p: reads.append(p) or original(p))
    status = check_main(["--no-cache", "--format", "json", str(pkg)])
    assert status == 1
    assert len(json.loads(capsys.readouterr().out)["findings"]) == 10
    assert reads.count(str(pkg / "model.py")) == 1
    assert runs.current() == 0
