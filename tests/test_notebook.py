"""Notebooks: ``flake8-mha check nb.ipynb`` lints the code cells."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
MSG_001 = ("TransformerEncoderLayer built without batch_first: (N, L, E) input silently mixes "
           "samples across the batch")
MSG_102 = ("attention weights computed and thrown away: pass need_weights=False, or "
           "nn.MultiheadAttention takes the slow path (up to about 2x off the fastpath) to build them")


def run(*args: str, cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def code(src: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": src.splitlines(keepends=True)}


def markdown(src: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": src.splitlines(keepends=True)}


def notebook(*cells: dict, language: str = "python") -> dict:
    return {"cells": list(cells),
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": language,
                                        "name": "python3"},
                         "language_info": {"name": language}},
            "nbformat": 4, "nbformat_minor": 5}


def save(path: pathlib.Path, nb: dict) -> pathlib.Path:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


DEMO = notebook(
    markdown("# Attention demo\n"),
    code("%matplotlib inline\n!pip install torch\nimport torch\nimport torch.nn as nn"),
    code("%%bash\necho 'nn.MultiheadAttention(64, 8)'"),
    code("attn = nn.MultiheadAttention(64, 8, batch_first=True)\nfiles = !ls\nattn?"),
    markdown("Now call it"),
    code("%%time\nx = torch.randn(2, 5, 64)\nfor _ in range(2):\n    %timeit attn(x, x, x)\n"
         "    out, _ = attn(x, x, x)  # the weights are not used\n"
         "layer = nn.TransformerEncoderLayer(64, 8)"),
)


@pytest.fixture
def nb_dir(tmp_path):
    save(tmp_path / "demo.ipynb", DEMO)
    return tmp_path


def test_findings_name_the_code_cell_and_the_line_in_it(nb_dir):
    proc = run("check", "demo.ipynb", cwd=nb_dir)
    assert proc.stdout.splitlines() == [
        f"demo.ipynb:cell_4:5:14: MHA102 {MSG_102}",
        f"demo.ipynb:cell_4:6:9: MHA001 {MSG_001}",
    ]
    assert (proc.returncode, proc.stderr) == (1, "")


def test_directories_include_notebooks_but_not_checkpoints(nb_dir):
    (nb_dir / ".ipynb_checkpoints").mkdir()
    save(nb_dir / ".ipynb_checkpoints" / "demo-checkpoint.ipynb", DEMO)
    proc = run("check", ".", cwd=nb_dir)
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["demo.ipynb"] * 2


def test_json_and_sarif_carry_the_cell(nb_dir):
    doc = json.loads(run("check", "--format", "json", "demo.ipynb", cwd=nb_dir).stdout)
    assert [(f["cell"], f["cell_index"], f["line"], f["col"], f["code"]) for f in doc["findings"]] \
        == [(4, 5, 5, 14, "MHA102"), (4, 5, 6, 9, "MHA001")]
    sarif = json.loads(run("check", "--format", "sarif", "demo.ipynb", cwd=nb_dir).stdout)
    result = sarif["runs"][0]["results"][0]
    assert result["properties"] == {"cell": 4, "cellIndex": 5, "cellLine": 5, "cellColumn": 14}
    assert result["message"]["text"] == f"cell_4:5:14: {MSG_102}"
    # the region is the line of the .ipynb file that holds that source line
    raw = (nb_dir / "demo.ipynb").read_text(encoding="utf-8").splitlines()
    region = result["locations"][0]["physicalLocation"]["region"]
    assert raw[region["startLine"] - 1].strip().startswith('"    out, _ = attn(x, x, x)')
    github = run("check", "--format", "github", "demo.ipynb", cwd=nb_dir).stdout.splitlines()
    assert github[0] == f"::warning file=demo.ipynb,line={region['startLine']},title=MHA102::" \
                        f"cell_4:5:14: {MSG_102}"


def test_sarif_for_a_notebook_is_valid(nb_dir):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    doc = json.loads(run("check", "--format", "sarif", "demo.ipynb", cwd=nb_dir).stdout)
    jsonschema.validate(doc, schema)


def test_noqa_inside_a_cell(tmp_path):
    save(tmp_path / "n.ipynb", notebook(code(
        "import torch.nn as nn\nlayer = nn.TransformerEncoderLayer(64, 8)  # noqa: MHA001")))
    assert run("check", "n.ipynb", cwd=tmp_path).returncode == 0


def test_cells_share_one_namespace(tmp_path):
    save(tmp_path / "n.ipynb", notebook(
        code("import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)"),
        code("def f(x):\n    out, _ = attn(x, x, x)\n    return out")))
    assert run("check", "n.ipynb", cwd=tmp_path).stdout.splitlines() == [
        f"n.ipynb:cell_2:2:14: MHA102 {MSG_102}"]


def test_syntax_error_in_a_cell(tmp_path):
    save(tmp_path / "n.ipynb", notebook(
        code("import torch.nn as nn"),
        code("layer = nn.TransformerEncoderLayer(64, 8\n")))
    proc = run("check", "n.ipynb", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "n.ipynb:cell_2:1:36: E999 SyntaxError: '(' was never closed"]


def test_not_a_notebook(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{not json", encoding="utf-8")
    proc = run("check", "broken.ipynb", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "broken.ipynb: error: not a notebook: invalid JSON at line 1"]


def test_other_languages_are_skipped(tmp_path):
    save(tmp_path / "r.ipynb", notebook(code("attn <- nn.MultiheadAttention(64, 8)"), language="R"))
    proc = run("check", "r.ipynb", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_fix_rewrites_only_the_cell_and_keeps_the_magics(nb_dir):
    before = (nb_dir / "demo.ipynb").read_text(encoding="utf-8")
    proc = run("check", "--fix", "demo.ipynb", cwd=nb_dir)
    after = (nb_dir / "demo.ipynb").read_text(encoding="utf-8")
    assert proc.stdout.splitlines() == [f"demo.ipynb:cell_4:6:9: MHA001 {MSG_001}"]
    assert proc.stderr.splitlines() == ["flake8-mha: fixed 1 finding in 1 file"]
    assert after == before.replace(
        '"    out, _ = attn(x, x, x)  # the weights',
        '"    out, _ = attn(x, x, x, need_weights=False)  # the weights')
    nb = json.loads(after)
    assert nb["cells"][5]["source"][3] == "    %timeit attn(x, x, x)\n"


def test_diff_for_a_notebook(nb_dir):
    proc = run("check", "--diff", "demo.ipynb", cwd=nb_dir)
    assert proc.returncode == 1
    changed = [line for line in proc.stdout.splitlines() if line[:1] in "+-"]
    assert changed == [
        "--- demo.ipynb", "+++ demo.ipynb",
        '-    "    out, _ = attn(x, x, x)  # the weights are not used\\n",',
        '+    "    out, _ = attn(x, x, x, need_weights=False)  # the weights are not used\\n",',
    ]


def test_magic_masking_keeps_lines_and_blocks():
    from flake8_mha.app.notebook import mask_cell

    text, magics = mask_cell("for i in range(3):\n    !echo $i\n    x = %env HOME\ny = 1", [0])
    assert text == ("for i in range(3):\n    pass  # flake8-mha: ipython 1\n"
                    "    pass  # flake8-mha: ipython 2\ny = 1\n")
    assert magics == {1: "    !echo $i\n", 2: "    x = %env HOME\n"}
    assert mask_cell("%%writefile x.py\nimport torch\n", [0]) == (None, {})
    text, _ = mask_cell("%%timeit -n 3\nf()\n", [0])
    assert text == "pass  # flake8-mha: ipython 1\nf()\n"
    text, _ = mask_cell("!pip install \\\n    torch\nz = 1\n", [0])
    assert text.splitlines()[2] == "z = 1" and "torch" not in text
