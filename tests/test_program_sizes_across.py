"""Issue 26: sizes handed across files before a module is built (probe Q's
FT-Transformer and MusicGen): ``presets.py`` builds ``TabModel`` of
``model.py`` with ``d_token=100, n_heads=8``; ``TabModel`` builds ``Block``
of ``layers.py`` with its own parameters as they are; ``Block`` builds
``nn.MultiheadAttention(d_token, n_heads)``.  The sizes enter at the preset's
call: MHA008 is reported there, naming the model, and the constructions
inside the classes do not repeat it.  A module built only under ``if
cross_heads is not None:`` is judged at the calls that give ``cross_heads``,
never at those that leave it out.

``fixtures/program_calls/sizes_across``: per file, over the package and
through ``check``."""

from __future__ import annotations

import ast
import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.analysis.program.sizes import size_calls, sizes_table
from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/sizes_across")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(
        str(PKG), [("presets.py", 8, 12, "MHA008"), ("presets.py", 16, 12, "MHA008")]
    )


def test_the_findings_name_the_model_and_the_construction():
    got = analyze_file(str(PKG / "presets.py"), ["MHA008"])
    assert [f.message for f in got] == [
        "embed_dim=100 is not divisible by num_heads=8: MultiheadAttention raises at construction; "
        "this call builds it through TabModel() at fixtures/program_calls/sizes_across/layers.py:10",
        "embed_dim=256 is not divisible by num_heads=6: MultiheadAttention raises at construction; "
        "this call builds it through Decoder() at fixtures/program_calls/sizes_across/layers.py:23",
    ]


def test_the_classes_between_say_nothing():
    """The calls inside ``model.py`` hand the sizes on (their callers judge
    them) and the constructions in ``layers.py`` have them from parameters
    whose constructions pass them: neither reports."""
    for name in ("model.py", "layers.py"):
        assert analyze_file(str(PKG / name), ["MHA008", "MHA101"]) == []


def test_a_guarded_construction_is_read_with_its_guard():
    tree = ast.parse(package_texts(PKG)["layers.py"])
    table = sizes_table(tree, {"nn": "torch.nn"}, {})
    cross = [e for e in table["DecoderLayer"] if e["line"] == 23]
    assert [(e["embed"], e["heads"], e.get("when")) for e in cross] == [
        (["param", "d_model"], ["param", "cross_heads"], ["given", "cross_heads"])
    ]


def test_the_handoffs_name_the_imported_blocks():
    tree = ast.parse(package_texts(PKG)["model.py"])
    calls = size_calls(
        tree,
        {},
        {
            "nn": [0, "torch.nn"],
            "Block": [1, "layers.Block"],
            "DecoderLayer": [1, "layers.DecoderLayer"],
        },
    )
    assert [h["callee"] for h in calls["TabModel"]] == ["Block"]
    assert calls["TabModel"][0]["args"] == [["param", "d_token"], ["param", "n_heads"]]
    assert calls["Decoder"][0]["keywords"] == {"cross_heads": ["param", "cross_heads"]}


def test_the_same_program_in_one_file(tmp_path):
    texts = package_texts(PKG)
    one = "\n\n".join(
        [texts["config.py"], texts["layers.py"], texts["model.py"], texts["presets.py"]]
    )
    for line in (
        "from .layers import Block, DecoderLayer\n",
        "from .config import CROSS_HEADS, HEADS, WIDTH\n",
        "from .model import Decoder, TabModel\n",
    ):
        one = one.replace(line, "")
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA008"])
    lines = one.splitlines()
    first = lines.index("    return TabModel(n_features, d_token=100, n_heads=8)  # MHA008:12") + 1
    second = (
        lines.index(
            "    return Decoder(d_model=WIDTH, heads=HEADS, cross_heads=CROSS_HEADS)  # MHA008:12"
        )
        + 1
    )
    assert [(f.line, f.col, f.code) for f in got] == [(first, 12, "MHA008"), (second, 12, "MHA008")]


def test_a_cross_attention_given_a_dividing_head_count_is_silent(tmp_path):
    texts = package_texts(PKG)
    for name, text in texts.items():
        if name == "config.py":
            text = text.replace("CROSS_HEADS = 6", "CROSS_HEADS = 4")
        (tmp_path / name).write_text(text, encoding="utf-8")
    got = analyze_file(str(tmp_path / "presets.py"), ["MHA008"])
    assert [(f.line, f.col) for f in got] == [(8, 12)]
