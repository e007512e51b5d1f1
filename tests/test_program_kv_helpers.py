"""Issue 26 (probe M): grouped-query attention whose K/V head expansion is a
helper of another file.  ``repeat_kv`` of ``kv.py`` groups the heads, so a
file that calls it and also tiles with ``.repeat`` has two paths that give
different numbers (MHA013 at the tiling); ``tile_kv`` of ``legacy.py``
tiles, so a file that also uses ``enable_gqa`` gets MHA013 at the call of
it.  ``fixtures/program_calls/kv_helpers``: per file, over the package and
through ``check``; the decoder that only calls ``repeat_kv`` is silent."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_calls/kv_helpers")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(
        str(PKG),
        [
            ("attention.py", 32, 26, "MHA013"),
            ("attention.py", 33, 28, "MHA013"),
            ("legacy_attention.py", 16, 17, "MHA013"),
            ("legacy_attention.py", 17, 17, "MHA013"),
        ],
        select="MHA013",
    )


def test_the_messages_name_the_helper():
    got = analyze_file(str(PKG / "attention.py"), ["MHA013"])
    assert (
        "expanded and merged in repeat_kv() at fixtures/program_calls/kv_helpers/kv.py:10, "
        "called on line 29 pairs it" in got[0].message
    )
    got = analyze_file(str(PKG / "legacy_attention.py"), ["MHA013"])
    assert got[0].message.endswith(
        "; the call tiles them in tile_kv() at fixtures/program_calls/kv_helpers/legacy.py:7"
    )


def test_the_helper_alone_and_one_file_alone_are_not_judged_across():
    # the helper file tiles only: MHA904's (opt-in), not MHA013's
    assert analyze_file(str(PKG / "legacy.py"), ["MHA013"]) == []
    assert analyze_file(str(PKG / "model.py"), ["MHA013"]) == []
    # without the project, the file's own tiling has no grouping path to meet
    from flake8_mha.lint.engine import analyze_source

    text = (PKG / "attention.py").read_text()
    got = analyze_source(text, str(PKG / "attention.py"), ["MHA013"], project=False)
    assert got == []
