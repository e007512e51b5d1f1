"""``flake8-mha confirm``: exit statuses, output, JSON, torch missing, and the
promise that the user's code is never imported."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import pathlib
import subprocess
import sys

import pytest

from flake8_mha.frontends.confirm_cli import _Progress, main
from flake8_mha.confirm.report import render_table, summary_line, to_json
from flake8_mha.confirm.runner import INSTALL_HINT, Outcome
from flake8_mha.core.findings import Finding

ROOT = pathlib.Path(__file__).resolve().parent.parent

CANARY_MODEL = '''\
import pathlib

pathlib.Path(__file__).with_name("CANARY_MODEL_IMPORTED").write_text("imported")

import torch.nn as nn

attn = nn.MultiheadAttention(64, 8)
bad = nn.MultiheadAttention(10, 3, batch_first=True)
'''
# A torch.py beside the user's code: if the worker ever ran with the user's
# directory first on sys.path, its `import torch` would run this.
CANARY_TORCH = '''\
import pathlib

pathlib.Path(__file__).with_name("CANARY_TORCH_IMPORTED").write_text("imported")
raise ImportError("the user's torch.py was imported")
'''
CLEAN = '''\
import torch.nn as nn

attn = nn.MultiheadAttention(64, 8, batch_first=True)
'''


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("FLAKE8_MHA_CONFIRM_TEST_FAULTS", None)
    env.update(extra)
    return env


def _confirm(args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "flake8_mha.confirm", *args], cwd=cwd,
                          env=env or _env(), capture_output=True, text=True, timeout=120)


def _needs_torch():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install 'flake8-mha[confirm]')")


def _needs_engine():
    try:
        from flake8_mha.app.pipeline import lint_paths  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"flake8_mha.app.pipeline.lint_paths is not available yet ({exc})")


@pytest.fixture()
def project(tmp_path):
    (tmp_path / "model.py").write_text(CANARY_MODEL)
    (tmp_path / "torch.py").write_text(CANARY_TORCH)
    return tmp_path


def _canaries(directory: pathlib.Path):
    return sorted(p.name for p in directory.glob("CANARY_*"))


# ---------------------------------------------------------------- end to end

def test_confirms_without_ever_importing_the_users_code(project):
    _needs_engine()
    _needs_torch()
    out = project / "report.json"
    proc = _confirm([".", "--select", "MHA00", "--json", str(out)], cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert _canaries(project) == []  # neither model.py nor the user's torch.py ran
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["LOCATION", "CODE", "VERDICT", "WITNESS", "DAMAGE"]
    rows = [ln.split()[:3] for ln in lines if ln.startswith(("model.py:", "./model.py:"))]
    assert [[os.path.normpath(r[0])] + r[1:] for r in rows] == [
        # model.py does not say its data's layout: MHA001's damage rests on the assumed (N, L, E)
        ["model.py:7:8", "MHA001", "CONFIRMED*"], ["model.py:8:7", "MHA008", "CONFIRMED"]]
    assert "4.804e-01" in proc.stdout
    assert lines[-1].startswith("2 findings: 1 confirmed, 1 confirmed*, 0 not reproduced (")

    report = json.loads(out.read_text())
    assert report["version"] == 2
    assert report["exit_status"] == 1
    assert report["torch"].startswith("2.")
    assert report["summary"]["findings"] == 2 and report["summary"]["CONFIRMED"] == 1
    assert report["summary"]["CONFIRMED*"] == 1
    assert report["settings"]["select"] == ["MHA00"]
    assert sorted(report["witnesses"]) == ["MHA001", "MHA008"]
    first = report["results"][0]
    assert {"path", "line", "col", "code", "message", "evidence", "verdict", "witness",
            "damage", "measured", "assumed", "reason", "seconds", "warnings"} <= set(first)
    assert (os.path.normpath(first["path"]), first["line"], first["col"], first["code"]) == (
        "model.py", 7, 8, "MHA001")
    assert first["measured"]["leak"] == pytest.approx(0.4804, abs=5e-4)
    assert report["results"][1]["measured"]["exception"] == (
        "AssertionError: embed_dim must be divisible by num_heads")


def test_fail_on_none_and_ignore(project):
    _needs_engine()
    _needs_torch()
    proc = _confirm([".", "--select", "MHA0", "--ignore", "MHA008,MHA1", "--fail-on", "none",
                     "--no-progress"], cwd=project)
    assert proc.returncode == 0, proc.stderr
    codes = [ln.split()[1] for ln in proc.stdout.splitlines()
             if ln.startswith(("model.py:", "./model.py:"))]
    assert codes == ["MHA001"]
    assert _canaries(project) == []


def test_nothing_to_confirm_exits_zero(tmp_path):
    _needs_engine()
    _needs_torch()
    (tmp_path / "clean.py").write_text(CLEAN)
    proc = _confirm(["clean.py"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("0 findings: 0 confirmed, 0 not reproduced")


# ---------------------------------------------------------------- torch missing

def test_torch_missing_is_one_line_with_the_install_hint(project, tmp_path_factory):
    _needs_engine()
    fake = tmp_path_factory.mktemp("no_torch")
    (fake / "torch.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    env = _env(PYTHONPATH=os.pathsep.join([str(fake), str(ROOT)]))
    proc = _confirm(["model.py"], cwd=project, env=env)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert INSTALL_HINT in proc.stderr
    assert INSTALL_HINT == "pip install 'flake8-mha[confirm]'"
    assert _canaries(project) == []


# ---------------------------------------------------------------- usage errors

@pytest.mark.parametrize("argv", [
    [],
    ["does/not/exist.py"],
    ["--fail-on", "always", "."],
    ["--timeout", "0", "."],
    ["--timeout", "soon", "."],
    ["--budget", "-1", "."],
])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "flake8-mha confirm" in capsys.readouterr().err


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "--fail-on" in capsys.readouterr().out


# ---------------------------------------------------------------- pieces

def _outcome(line, code, verdict, **kw):
    return Outcome(Finding(code, line, 5, "m", "pkg/model.py", {"num_heads": 3}), verdict, **kw)


def test_table_has_one_row_per_finding_and_wraps_long_cells():
    outcomes = [
        _outcome(3, "MHA001", "CONFIRMED", witness="w " * 80, damage="sample 0 moved by 4.8e-01",
                 assumed=["embed_dim unknown: used 64"]),
        _outcome(9, "MHA008", "SKIPPED", reason="no safe default"),
        _outcome(12, "MHA005", "TIMEOUT", reason="no answer within 30 s"),
    ]
    table = render_table(outcomes, width=100)
    lines = table.splitlines()
    starts = [ln.split()[:3] for ln in lines if ln.startswith("pkg/")]
    assert starts == [["pkg/model.py:3:5", "MHA001", "CONFIRMED"],
                      ["pkg/model.py:9:5", "MHA008", "SKIPPED"],
                      ["pkg/model.py:12:5", "MHA005", "TIMEOUT"]]
    assert max(len(ln) for ln in lines) <= 100
    assert "[assumed: embed_dim unknown: used 64]" in " ".join(table.split())
    assert "no safe default" in table


def test_summary_line_counts_every_verdict_seen():
    outcomes = [_outcome(1, "MHA001", "CONFIRMED"), _outcome(2, "MHA001", "CONFIRMED"),
                _outcome(3, "MHA007", "NOT REPRODUCED"), _outcome(4, "MHA009", "CRASHED")]
    assert summary_line(outcomes, 1.25) == (
        "4 findings: 2 confirmed, 1 not reproduced, 1 crashed (1.2 s)")


def test_json_is_strict_and_versioned():
    outcome = _outcome(1, "MHA003", "CONFIRMED", measured={"max_error": float("nan"),
                                                           "ratio": float("inf")})
    doc = to_json([outcome], paths=["."], settings={}, torch_version="2.13.0+cpu",
                  seconds=0.5, exit_status=1)
    text = json.dumps(doc, allow_nan=False)  # no NaN/Infinity tokens
    back = json.loads(text)
    assert back["version"] == 2
    assert back["results"][0]["measured"] == {"max_error": "nan", "ratio": "inf"}
    assert back["summary"] == {"findings": 1, "CONFIRMED": 1, "CONFIRMED*": 0,
                               "NOT REPRODUCED": 0, "INCONCLUSIVE": 0, "SKIPPED": 0,
                               "ERROR": 0, "TIMEOUT": 0, "CRASHED": 0, "seconds": 0.5}
    assert "threshold" in back["witnesses"]["MHA003"]


def test_docs_thresholds_table_is_current():
    from flake8_mha.confirm.docs import DOC, with_table

    text = DOC.read_text(encoding="utf-8")
    assert text == with_table(text), "run: python -m flake8_mha.confirm.docs"


def test_select_and_ignore_are_the_pipelines_prefixes():
    from flake8_mha.frontends.confirm_cli import build_parser
    from flake8_mha.app.options import options_from_args

    def codes(*argv):
        args = build_parser().parse_args([*argv, "."])
        return options_from_args(args).codes()

    assert "MHA901" not in codes("--isolated")  # opt-in, as in check
    assert "MHA901" in codes("--isolated", "--select", "MHA9")
    assert "MHA901" in codes("--isolated", "--enable-extensions", "MHA9")
    assert "MHA001" not in codes("--isolated", "--select", "MHA9")
    assert "MHA901" not in codes("--isolated", "--select", "MHA", "--ignore", "MHA90")
    # repeatable, as before
    assert codes("--isolated", "--select", "MHA001", "--select", "MHA008") == ["MHA001", "MHA008"]


def test_progress_rewrites_one_line():
    stream = io.StringIO()
    progress = _Progress(stream)
    progress(0, 2, Finding("MHA001", 4, 2, "m", "a.py"))
    progress(2, 2, None)
    assert stream.getvalue() == "\r\033[K[1/2] MHA001 a.py:4:2\r\033[K"


# ---------------------------------------------------------------- the lint pipeline

def test_bad_code_selection_is_a_usage_error_as_in_check(tmp_path):
    (tmp_path / "m.py").write_text(CLEAN)
    for command in ([sys.executable, "-m", "flake8_mha.confirm"],
                    [sys.executable, "-m", "flake8_mha.frontends.cli", "check"]):
        proc = subprocess.run([*command, "--select", "NOPE", "m.py"], cwd=tmp_path, env=_env(),
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2
        assert proc.stderr.splitlines()[-1].endswith(
            "error: --select: 'NOPE' is not a code prefix such as MHA, MHA0 or MHA001")
        assert "Traceback" not in proc.stderr and proc.stdout == ""


def _notebook(*sources):
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": src.splitlines(keepends=True)} for src in sources]
    return json.dumps({"cells": cells, "metadata": {"language_info": {"name": "python"}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_confirm_reads_notebooks_and_reports_a_broken_one(tmp_path):
    _needs_torch()
    (tmp_path / "nb.ipynb").write_text(_notebook(
        "import torch.nn as nn", "%matplotlib inline\nbad = nn.MultiheadAttention(10, 3, batch_first=True)"))
    (tmp_path / "broken.ipynb").write_text("{not json")
    out = tmp_path / "r.json"
    proc = _confirm(["--select", "MHA008", "--json", str(out), "nb.ipynb", "broken.ipynb"],
                    cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    rows = [ln.split()[:3] for ln in proc.stdout.splitlines() if ln.startswith(("nb", "broken"))]
    assert rows == [["nb.ipynb:cell_2:2:7", "MHA008", "CONFIRMED"],
                    ["broken.ipynb", "-", "UNCHECKED"]]
    assert "not a notebook: invalid JSON at line 1" in proc.stdout
    assert proc.stderr.splitlines() == ["broken.ipynb: error: not a notebook: invalid JSON at line 1"]
    assert proc.stdout.splitlines()[-1].startswith(
        "1 finding: 1 confirmed, 0 not reproduced; 1 file not checked (")
    doc = json.loads(out.read_text())
    (result,) = doc["results"]
    assert (result["path"], result["cell"], result["cell_index"], result["line"], result["col"]) == (
        "nb.ipynb", 2, 1, 2, 7)
    assert doc["errors"] == [{"path": "broken.ipynb", "line": None, "col": None, "cell": None,
                              "cell_index": None,
                              "message": "not a notebook: invalid JSON at line 1"}]
    assert doc["exit_status"] == 2
