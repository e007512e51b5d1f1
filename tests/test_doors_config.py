"""Issue 28, item 1: ``flake8-mha check`` reads flake8's own configuration.

Each test builds a small tree whose ``[flake8]`` section uses the keys flake8
users set, and compares ``check`` with a real flake8 subprocess on the same
tree: the same MHA lines, in the same files.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from flake8_mha.frontends.check import parse_options

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))

MODEL = """\
import torch.nn as nn

a = nn.MultiheadAttention(64, 8)
b = nn.MultiheadAttention(64, 3, batch_first=True)
c = nn.MultiheadAttention(64, 8, batch_first=False)
"""
ONE_001 = "import torch.nn as nn\n\nlayer = nn.MultiheadAttention(64, 8)\n"


def write(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def check(*args: str, cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "check", *args], cwd=cwd,
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def flake8(*args: str, cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "flake8", *args], cwd=cwd,
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def mha_lines(text: str):
    """flake8's lines of our codes, with flake8's ``./`` dropped (check names
    paths as ``git apply`` and editors take them)."""
    out = []
    for line in text.splitlines():
        if ": MHA" in line:
            out.append(line[2:] if line.startswith("./") else line)
    return sorted(out)


@pytest.fixture
def tree(tmp_path):
    for rel in ("mypkg/model.py", "mypkg/planted.py", "notebooks/explore.py",
                "generated/gen.py", "tests/test_model.py", "build/lib/copy.py"):
        write(tmp_path / rel, MODEL)
    return tmp_path


CONFIGS = {
    "extend-ignore, per-file-ignores, exclude": """
        [flake8]
        extend-ignore = MHA101
        per-file-ignores =
            mypkg/planted.py:MHA
            tests/*: MHA001
        exclude = notebooks,build
        """,
    "extend-exclude, and ignore replaced as black's users do": """
        [flake8]
        ignore = E203,W503
        extend-exclude = generated,build
        """,
    "select naming our codes, extend-select of an opt-in code": """
        [flake8]
        select = E,W,F,MHA0
        extend-select = MHA902
        exclude = build
        """,
    "per-file-ignores with several patterns and the longest match": """
        [flake8]
        per-file-ignores =
            mypkg/*.py,tests/*:MHA001
            mypkg/planted.py:MHA101
        extend-exclude = build
        """,
}


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("config_file", ["setup.cfg", "tox.ini", ".flake8"])
def test_check_reports_what_flake8_reports_under_its_configuration(tree, name, config_file):
    write(tree / config_file, CONFIGS[name])
    ours = check(".", cwd=tree)
    theirs = flake8(".", cwd=tree)
    assert mha_lines(ours.stdout) == mha_lines(theirs.stdout)
    assert ours.stdout  # the tree still has findings: the comparison is not empty
    assert ours.returncode == 1


def test_the_issue_s_setup_cfg(tree):
    """The three keys of issue 28: no planted.py, no MHA101, no notebook."""
    write(tree / "setup.cfg", CONFIGS["extend-ignore, per-file-ignores, exclude"])
    proc = check(".", cwd=tree)
    lines = proc.stdout.splitlines()
    assert not [ln for ln in lines if "planted.py" in ln or "notebooks" in ln or "MHA101" in ln]
    assert "mypkg/model.py:3:5: MHA001" in proc.stdout
    # and the same with --select MHA on both sides (the opt-in codes too)
    ours = check("--select", "MHA", ".", cwd=tree)
    theirs = flake8("--select", "MHA", ".", cwd=tree)
    assert mha_lines(ours.stdout) == mha_lines(theirs.stdout)
    assert "MHA902" in ours.stdout


def test_flake8_s_search_order_setup_cfg_first_and_the_nearest_directory(tree):
    write(tree / "setup.cfg", "[flake8]\nextend-ignore = MHA001\n")
    write(tree / ".flake8", "[flake8]\nextend-ignore = MHA101\n")  # setup.cfg is read first
    proc = check("mypkg/model.py", cwd=tree)
    assert "MHA101" in proc.stdout and "MHA001" not in proc.stdout
    # from a subdirectory the file above is found, as flake8 finds it
    proc = check("model.py", cwd=tree / "mypkg")
    assert "MHA101" in proc.stdout and "MHA001" not in proc.stdout
    assert mha_lines(proc.stdout) == mha_lines(flake8("model.py", cwd=tree / "mypkg").stdout)


def test_our_section_wins_over_flake8_s_and_takes_per_file_ignores(tree):
    write(tree / "setup.cfg", """
        [flake8]
        extend-ignore = MHA101

        [flake8-mha]
        extend-ignore = MHA001
        per-file-ignores = mypkg/planted.py: MHA
        """)
    proc = check("mypkg", cwd=tree)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        line for line in proc.stdout.splitlines() if line.startswith("mypkg/model.py:4:")]
    assert "MHA101" in proc.stdout


def test_a_select_of_other_plugins_only_leaves_ours_at_the_default(tree):
    """``select = E,W,F`` is for flake8's other plugins: check still reports
    (flake8 itself would report none of our codes, docs/cli.md says so)."""
    write(tree / "setup.cfg", "[flake8]\nselect = E,W,F\n")
    proc = check("mypkg/model.py", cwd=tree)
    assert "MHA001" in proc.stdout and proc.returncode == 1


def test_other_tools_codes_in_flake8_s_section_are_not_errors(tree):
    write(tree / "setup.cfg", "[flake8]\nextend-ignore = E501,W503,ANN101\n")
    proc = check("mypkg/model.py", cwd=tree)
    assert proc.returncode == 1 and proc.stderr == ""


@pytest.mark.parametrize("config, message", [
    ("[flake8-mha]\nselect = MHX\n",
     "flake8-mha check: error: setup.cfg: select: 'MHX' matches no flake8-mha code "
     "(MHA000..MHA9xx)"),
    ("[flake8-mha]\nextend-ignore = mha001\n",
     "flake8-mha check: error: setup.cfg: extend-ignore: 'mha001' is not a code prefix such "
     "as MHA, MHA0 or MHA001 (codes are upper case)"),
    ("[flake8-mha]\nper-file-ignores = tests/*\n",
     "flake8-mha check: error: setup.cfg: per-file-ignores: expected 'pattern: CODES', got "
     "'tests/*'"),
    ("[flake8]\nmax-line-length = wide\n",
     "flake8-mha check: error: setup.cfg: [flake8] max-line-length must be a positive integer, "
     "not 'wide'"),
])
def test_bad_configuration_is_one_line_and_exit_2(tree, config, message):
    write(tree / "setup.cfg", config)
    proc = check("mypkg/model.py", cwd=tree)
    assert (proc.returncode, proc.stderr.splitlines(), proc.stdout) == (2, [message], "")


def test_max_line_length_comes_from_flake8_then_ours_then_the_command_line(tmp_path,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "m.py", ONE_001)
    write(tmp_path / "tox.ini", "[flake8]\nmax-line-length = 100\n")
    assert parse_options(["m.py"], cwd=str(tmp_path)).max_line_length == 100
    write(tmp_path / "pyproject.toml", "[tool.flake8-mha]\nmax-line-length = 90\n")
    assert parse_options(["m.py"], cwd=str(tmp_path)).max_line_length == 90
    opts = parse_options(["--max-line-length", "79", "m.py"], cwd=str(tmp_path))
    assert opts.max_line_length == 79
    assert parse_options(["--isolated", "m.py"], cwd=str(tmp_path)).max_line_length is None


def test_the_cache_lives_at_the_project_root_wherever_check_runs(tree):
    write(tree / "setup.cfg", "[flake8]\nextend-exclude = build\n")
    proc = check("model.py", cwd=tree / "mypkg")
    assert proc.returncode == 1
    assert (tree / ".flake8-mha-cache").is_dir()
    assert not (tree / "mypkg" / ".flake8-mha-cache").exists()
    # a git work tree without any configuration file is a project root too
    repo = tree / "repo"
    write(repo / "sub" / "m.py", ONE_001)
    (repo / ".git").mkdir()
    assert check("m.py", cwd=repo / "sub").returncode == 1
    assert (repo / ".flake8-mha-cache").is_dir() and not (repo / "sub" / ".flake8-mha-cache").exists()


def test_the_flake8_plugin_reads_summaries_from_the_root_s_cache(tree):
    """flake8 run from a subdirectory finds the cache ``check`` made at the root."""
    write(tree / "setup.cfg", "[flake8]\nextend-exclude = build\n")
    assert check("mypkg", cwd=tree).returncode == 1
    proc = flake8("--select", "MHA001", "model.py", cwd=tree / "mypkg")
    assert "model.py:3:5: MHA001" in proc.stdout
    assert not (tree / "mypkg" / ".flake8-mha-cache").exists()


def test_confirm_reads_flake8_s_configuration_too(tree):
    pytest.importorskip("torch")
    write(tree / "setup.cfg", "[flake8]\nextend-ignore = MHA001,MHA101,MHA008\n")
    write(tree / "only.py", ONE_001)
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "confirm", "--no-progress",
                           "only.py"], cwd=tree, capture_output=True, text=True, env=ENV,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("0 findings")
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "confirm", "--no-progress",
                           "--isolated", "only.py"], cwd=tree, capture_output=True, text=True,
                          env=ENV, timeout=600)
    assert "only.py:3:9" in proc.stdout and "MHA001" in proc.stdout
