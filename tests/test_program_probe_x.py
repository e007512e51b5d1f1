"""Probe X's misses and review 25's false findings, each a package of
several files run through flake8 per file, over the package and through
``check``: a fill helper of another file, a ``functools.partial`` kept on
``self``, a torch encoder built by a factory of the file, a config
constant as a factory's ``batch_first``, the classes a factory of another
file returns."""

from __future__ import annotations

from fixture_expect import assert_package_runs, write_package
from flake8_mha.lint.engine import analyze_source


def test_a_helper_whose_one_return_fills_the_scores():
    assert_package_runs(
        "fixtures/program_calls/fill_helpers", [("model.py", 18, 16, "MHA003")], select="MHA"
    )


def test_attention_output_added_to_its_input_is_no_term_of_the_scores():
    # ``x + softmax(scores) @ v``: a residual, not a mask added to the scores
    from flake8_mha.analysis.program.fills import ADDED
    from flake8_mha.analysis.program.summaries import summarise

    table = summarise(
        "import torch\n"
        "def attend(x, q, k, v):\n"
        "    scores = q @ k.transpose(-2, -1)\n"
        "    return x + torch.softmax(scores, dim=-1) @ v\n"
    )
    assert ADDED not in table.get("attend", {}).get("reach", {})


def test_a_partial_of_a_function_kept_on_self():
    assert_package_runs(
        "fixtures/program_calls/partial_attrs", [("model.py", 16, 16, "MHA002")], select="MHA"
    )


def test_an_encoder_a_factory_of_the_file_builds():
    assert_package_runs(
        "fixtures/program_calls/factory_encoders", [("tracker.py", 15, 16, "MHA003")], select="MHA"
    )


def test_a_config_constant_as_the_factory_s_batch_first():
    assert_package_runs(
        "fixtures/program_layout/factory_constants", [("model.py", 18, 16, "MHA010")], select="MHA"
    )


def test_the_classes_a_factory_of_another_file_returns_are_fed_its_callers_data():
    assert_package_runs(
        "fixtures/program_layout/factory_classes",
        [("gated.py", 15, 26, "MHA903"), ("standard.py", 13, 13, "MHA903")],
        select="MHA",
    )


def test_a_count_of_residues_is_a_length(tmp_path):
    pkg = write_package(
        tmp_path / "pkg",
        {
            "model.py": "import torch\nimport torch.nn.functional as F\n\n\n"
            "def pocket(q, k, v, n_res):\n"
            "    pad = torch.arange(k.size(2))[None, :] >= n_res[:, None]\n"
            "    return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])\n",
        },
    )
    model = pkg / "model.py"
    found = analyze_source(model.read_text(), str(model), ["MHA002"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA002", 7, 12)]
