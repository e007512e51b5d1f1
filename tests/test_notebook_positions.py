"""Issue 28, item 4: in a notebook, every line the tool prints or writes is
``cell_N:line``: the finding's own, and a line its message or its evidence
names (the comment or call that decided a layout), in ``check``, ``--format
json`` and ``sarif``, ``confirm``, and under nbQA the line nbQA maps back."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# the layout of cell 3 decides cell 2's MHA001: the rearrange on cell 3, line 3
CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# demo"]},
    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
     "source": ["import torch\n", "import torch.nn as nn\n"]},
    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
     "source": ["attn = nn.MultiheadAttention(64, 8)\n"]},
    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
     "source": ["from einops import rearrange\n", "def f(x):\n",
                "    x = rearrange(x, \"l b d -> b l d\")\n", "    return attn(x, x, x)[0]\n"]},
]
MHA001 = ("nb.ipynb:cell_2:1:8: MHA001 MultiheadAttention built without batch_first is fed "
          "batch-first data ((N, L, E), {where}: `rearrange(x, \"l b d -> b l d\")`): it reads "
          "axis 0 as the sequence and mixes samples across the batch")


def run(*args, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def nb_dir(tmp_path):
    nb = {"cells": CELLS, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("cache", [(), ("--no-cache",)], ids=["cached", "no-cache"])
def test_check_names_the_deciding_line_by_its_cell(nb_dir, cache):
    for _ in range(2):  # cold, then what the cache gives back
        proc = run("check", *cache, "--select", "MHA001", "nb.ipynb", cwd=nb_dir)
        assert proc.returncode == 1
        assert proc.stdout.splitlines() == [MHA001.format(where="cell_3:3")]


def test_json_and_sarif_name_it_too(nb_dir):
    doc = json.loads(run("check", "--select", "MHA001", "--format", "json", "nb.ipynb",
                         cwd=nb_dir).stdout)
    (finding,) = doc["findings"]
    assert (finding["cell"], finding["line"], finding["col"]) == (2, 1, 8)
    assert finding["evidence"]["layout_line"] == "cell_3:3"
    assert "cell_3:3: `rearrange" in finding["message"]
    sarif = json.loads(run("check", "--select", "MHA001", "--format", "sarif", "nb.ipynb",
                           cwd=nb_dir).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert "(N, L, E), cell_3:3: `rearrange" in result["message"]["text"]
    assert "line 9" not in json.dumps(sarif)


def test_confirm_names_it_in_the_witness_too(nb_dir):
    pytest.importorskip("torch")
    proc = run("confirm", "--select", "MHA001", "--json", "out.json", "nb.ipynb", cwd=nb_dir)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads((nb_dir / "out.json").read_text())
    text = json.dumps(doc)
    assert "cell_3:3" in text and "line 9" not in text
    table = " ".join(proc.stdout.split())  # the table wraps its columns
    assert "cell_3:3" in proc.stdout and "line 9" not in table


def test_under_nbqa_the_line_is_the_one_nbqa_maps_back(nb_dir):
    if shutil.which("nbqa") is None:
        pytest.skip("nbqa is not installed (pip install -e '.[test]')")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # what nbQA maps its own temporary file's lines to
    shown = subprocess.run(["nbqa", "flake8", "nb.ipynb", "--select", "MHA001"], cwd=nb_dir,
                           env=env, capture_output=True, text=True, timeout=600)
    (line,) = shown.stdout.splitlines()
    assert line.startswith("nb.ipynb:cell_2:1:8: MHA001 ")
    assert "line " not in line.split("MHA001", 1)[1]
    # the deciding line is in cell 3 and named the way nbQA names a line of cell 3;
    # nbQA's file may hold blank lines the notebook does not, so its number is its own
    named = line.split("(N, L, E), ", 1)[1].split(":", 2)
    assert named[0] == "cell_3" and named[1].isdigit()
    cat = subprocess.run(["nbqa", "flake8", "nb.ipynb", "--select", "MHA102"], cwd=nb_dir,
                         env=env, capture_output=True, text=True, timeout=600)
    (call,) = cat.stdout.splitlines()  # the call one line below the rearrange, as nbQA says
    assert call.startswith(f"nb.ipynb:cell_3:{int(named[1]) + 1}:12: MHA102 ")
