"""Issue 28, item 5: a fix keeps to the project's max-line-length.  A fixed
call that would pass it is broken inside its brackets as black would; one that
cannot fit is not applied, and the run says why.  flake8 itself (E501) judges
the result.

``max_line_length`` comes from flake8's configuration (``Options``, filled
by the configuration reader); here it is set on the options directly."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from flake8_mha.app.config import Options
from flake8_mha.app.pipeline import lint_paths, write_fixes

SOURCE = """\
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.attention_dropout_probability = p

    def forward(self, query_states, key_states, value_states):
        return F.scaled_dot_product_attention(query_states, key_states, value_states, dropout_p=self.attention_dropout_probability)
"""  # noqa: E501
CALL = ("        return F.scaled_dot_product_attention(query_states, key_states, value_states, "
        "dropout_p=self.attention_dropout_probability)\n")
HUGGED = """\
        return F.scaled_dot_product_attention(
            query_states, key_states, value_states, dropout_p=self.attention_dropout_probability if self.training else 0.0
        )
"""  # noqa: E501
EXPLODED = """\
        return F.scaled_dot_product_attention(
            query_states,
            key_states,
            value_states,
            dropout_p=self.attention_dropout_probability if self.training else 0.0,
        )
"""


def fix(tmp_path, limit, source=SOURCE):
    path = tmp_path / "m.py"
    path.write_text(source)
    opts = Options(paths=[str(path)], no_cache=True)
    opts.max_line_length = limit  # what [flake8] max-line-length sets
    run = lint_paths(opts, "fix")
    write_fixes(run.outcomes)
    return run, path.read_text()


def e501(path: pathlib.Path, limit: int) -> str:
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "E501",
                           f"--max-line-length={limit}", str(path)],
                          capture_output=True, text=True, timeout=300)
    return proc.stdout


@pytest.mark.parametrize("limit, expected", [(130, HUGGED), (100, EXPLODED), (88, EXPLODED)])
def test_a_long_fix_is_broken_inside_its_brackets(tmp_path, limit, expected):
    run, text = fix(tmp_path, limit)
    assert run.problems == []
    assert text == SOURCE.replace(CALL, expected)
    assert e501(tmp_path / "m.py", limit) == ""  # flake8 itself finds no line too long
    assert [i.code for i in run.items] == []  # fixed, and nothing left


def test_flake8_is_clean_on_the_fixed_lines(tmp_path):
    source = SOURCE.replace(CALL, "        return F.scaled_dot_product_attention(\n"
                            "            query_states, key_states, value_states, dropout_p=self.p)\n")
    run, text = fix(tmp_path, 100, source)
    assert run.problems == [] and "if self.training else 0.0" in text
    assert e501(tmp_path / "m.py", 100) == ""


def test_a_fix_that_cannot_fit_is_not_applied_and_says_why(tmp_path):
    run, text = fix(tmp_path, 79)
    assert text == SOURCE  # untouched
    assert [p.text() for p in run.problems] == [
        f"{tmp_path / 'm.py'}: error: fix not applied (MHA007 at line 11): broken inside its "
        "brackets as black would, the fixed call still has a line 83 characters long, over "
        "max-line-length 79"]
    assert [(i.code, i.finding.line) for i in run.items] == [("MHA007", 11)]


def test_without_a_configured_length_no_line_is_broken(tmp_path):
    run, text = fix(tmp_path, None)
    assert run.problems == []
    assert text == SOURCE.replace(
        "dropout_p=self.attention_dropout_probability)",
        "dropout_p=self.attention_dropout_probability if self.training else 0.0)")


def test_the_diff_of_a_broken_fix_applies(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    opts = Options(paths=["m.py"], no_cache=True)
    opts.max_line_length = 100
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        run = lint_paths(opts, "diff")
    finally:
        os.chdir(cwd)
    (outcome,) = run.outcomes
    (tmp_path / "m.patch").write_text(outcome.diff)
    done = subprocess.run(["patch", "-p0", "-i", "m.patch"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert path.read_text() == SOURCE.replace(CALL, EXPLODED)


def _notebook(tmp_path):
    import json

    body = SOURCE.split("\n\n\n", 1)[1]  # the class, in a cell of its own
    nb = {"cells": [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["import torch.nn as nn\n", "import torch.nn.functional as F"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": body.rstrip("\n").splitlines(keepends=True)},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n")
    return path, body


def _fix_notebook(path, limit):
    opts = Options(paths=[str(path)], no_cache=True)
    opts.max_line_length = limit
    run = lint_paths(opts, "fix")
    write_fixes(run.outcomes)
    return run


def test_a_notebook_fix_is_broken_inside_its_cell(tmp_path):
    import json

    path, body = _notebook(tmp_path)
    run = _fix_notebook(path, 100)
    assert run.problems == []
    cell = "".join(json.loads(path.read_text())["cells"][1]["source"])
    assert cell == body.rstrip("\n").replace(CALL.rstrip("\n"), EXPLODED.rstrip("\n"))


def test_a_notebook_fix_that_cannot_fit_names_its_cell(tmp_path):
    path, _ = _notebook(tmp_path)
    before = path.read_bytes()
    run = _fix_notebook(path, 79)
    assert path.read_bytes() == before
    assert [p.text() for p in run.problems] == [
        f"{path}: error: fix not applied (MHA007 at cell_2:7): broken inside its brackets as "
        "black would, the fixed call still has a line 83 characters long, over "
        "max-line-length 79"]


def test_check_fix_reads_max_line_length_from_flake8s_configuration(tmp_path):
    # the issue's setup: [flake8] max-line-length = 100, then flake8's E501 hook
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 100\n")
    (tmp_path / "m.py").write_text(SOURCE.replace(CALL, CALL.replace(
        "query_states, key_states, value_states", "q, k, v")))
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parent.parent))
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--fix", "m.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr
    fixed = (tmp_path / "m.py").read_text()
    assert fixed.endswith(
        "        return F.scaled_dot_product_attention(\n"
        "            q, k, v, dropout_p=self.attention_dropout_probability if self.training else 0.0\n"
        "        )\n")
    hook = subprocess.run([sys.executable, "-m", "flake8", "--select", "E501", "m.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert (hook.returncode, hook.stdout) == (0, "")
