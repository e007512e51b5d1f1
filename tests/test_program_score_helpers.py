"""Issue 26 (probe M): a helper that does the arithmetic of the scores it is
handed (``gated_softmax(scores, valid)``, ``add_bias(scores, mask)``) is read
at its call as that arithmetic written in the caller: the caller's scores and
mask are judged there (MHA012, MHA004's additive case), in one file or
across files, and the report names the helper.

``fixtures/program_calls/score_helpers``: attention whose helpers live in
``ops.py`` and whose masks are built in ``masks.py``; the additive mask, a
relative position bias and a gate multiplied after the softmax beside them
are silent."""

from __future__ import annotations

import pathlib

import pytest
from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/score_helpers")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(
        str(PKG), [("attention.py", 20, 19, "MHA012"), ("attention.py", 26, 18, "MHA004")]
    )


def test_the_findings_name_the_helper():
    got = analyze_file(str(PKG / "attention.py"), ["MHA004", "MHA012"])
    assert [(f.line, f.col, f.code) for f in got] == [(20, 19, "MHA012"), (26, 18, "MHA004")]
    assert got[0].message.endswith(
        "the call reaches scores * valid at fixtures/program_calls/score_helpers/ops.py:8"
        " through gated_softmax()"
    )
    assert "the call reaches scores + bias at " in got[1].message


ONE_FILE = """\
import torch
from torch import nn


def add_bias(scores, mask):
    return scores + mask


class Attn(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)

    def gate(self, s, valid):
        return torch.softmax(s * valid, dim=-1)

    def forward(self, x, ids):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        keep = (ids != 0)[:, None, :]
        s = q @ k.transpose(-2, -1)
        {line}
"""


@pytest.mark.parametrize(
    "line, want",
    [
        ("return self.gate(s, keep) @ v", [(21, 16, "MHA012")]),
        ("return add_bias(s, keep.float()).softmax(-1) @ v", [(21, 16, "MHA004")]),
        ("return add_bias(s, keep.float().masked_fill(~keep, -1e9)).softmax(-1) @ v", []),
        # the helper is handed no scores: nothing to judge
        ("return add_bias(x, keep.float()) @ v", []),
        # keyword arguments bind as the helper's parameters
        ("return self.gate(valid=keep, s=s) @ v", [(21, 16, "MHA012")]),
    ],
)
def test_in_one_file_the_helper_is_read_at_its_call(tmp_path, line, want):
    src = ONE_FILE.format(line=line)
    got = analyze_source(src, str(tmp_path / "one.py"), ["MHA004", "MHA012"])
    assert [(f.line, f.col, f.code) for f in got] == want


def test_a_helper_that_rebinds_its_parameter_is_not_read(tmp_path):
    src = ONE_FILE.format(line="return add_bias(s, keep.float()).softmax(-1) @ v").replace(
        "    return scores + mask\n", "    mask = mask * 0.5\n    return scores + mask\n"
    )
    got = analyze_source(src, str(tmp_path / "one.py"), ["MHA004", "MHA012"])
    assert got == []


def test_an_edit_of_the_helper_file_changes_the_cached_finding(tmp_path):
    import shutil
    import subprocess
    import sys

    pkg = tmp_path / "score_helpers"
    shutil.copytree(PKG, pkg)
    run = [sys.executable, "-m", "flake8", "--select", "MHA012", "score_helpers/attention.py"]
    first = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True)
    assert ":20:19: MHA012" in first.stdout
    ops = pkg / "ops.py"
    ops.write_text(ops.read_text().replace("(scores * valid).softmax", "scores.softmax"))
    again = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True)
    assert again.stdout == "" and again.returncode == 0
