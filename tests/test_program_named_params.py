"""A mask handed down through parameters whose names promise True = ignore
(``fixtures/program_calls/named_params/``): what the project's callers hand
in is judged at each call that hands it in, so the names on the way say
nothing; a name is the evidence only where the mask enters from outside the
project (the outermost function nobody in the project calls)."""

from __future__ import annotations

from fixture_expect import assert_package_runs, write_package
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_calls/named_params"


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert_package_runs(PACKAGE, [("model.py", 32, 17, "MHA002")], select="MHA")


ATTN = (
    "import torch.nn.functional as F\n\n\n"
    "def attend(q, k, v, key_padding_mask=None):\n"
    "    return F.scaled_dot_product_attention(q, k, v, attn_mask=key_padding_mask)\n"
)


def _rows(pkg, name):
    path = pkg / name
    return [
        (f.code, f.line, f.col) for f in analyze_source(path.read_text(), str(path), ["MHA002"])
    ]


def test_the_name_speaks_where_the_mask_enters_the_project(tmp_path):
    pkg = write_package(
        tmp_path / "a" / "pkg",
        {
            "attn.py": ATTN,
            "model.py": "from .attn import attend\n\n\n"
            "def run(q, k, v, key_padding_mask):\n"
            "    return attend(q, k, v, key_padding_mask=key_padding_mask)\n",
        },
    )
    # ``run`` is called by nobody in the project: its parameter's name is the evidence
    assert _rows(pkg, "model.py") == [("MHA002", 5, 12)]
    assert _rows(pkg, "attn.py") == []


def test_a_function_the_project_never_hands_a_mask_keeps_its_name(tmp_path):
    pkg = write_package(
        tmp_path / "b" / "pkg",
        {
            "attn.py": ATTN,
            "model.py": "from .attn import attend\n\n\n"
            "def run(q, k, v):\n"
            "    return attend(q, k, v)\n",
        },
    )
    assert _rows(pkg, "attn.py") == [("MHA002", 5, 12)]
