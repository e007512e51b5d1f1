"""Issue 26, items 1 and 4 (probe T's B22): a factory that takes
``batch_first`` as a parameter and hands it, unchanged, to the module it
returns builds each module with what its call passes, in the linted file
and in another file of the project.

``fixtures/program_layout/factory_flags``: MHA010 where a ``batch_first=True``
encoder from another file's factory is fed sequence-first chunks, per file,
over the package and through ``check``; the modules a factory of the same
file builds with ``True`` and ``False`` are each fed what they read."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_layout/factory_flags")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("dual_path.py", 19, 17, "MHA010")])


def test_the_finding_names_the_flag_and_the_swap():
    (got,) = analyze_file(str(PKG / "dual_path.py"), ["MHA010"])
    assert (got.line, got.col) == (19, 17)
    assert got.message.startswith(
        "TransformerEncoder (its layers) built with batch_first=True is fed sequence-first data"
    )
    assert "line 18: `intra.permute(2, 0, 3, 1).reshape(k, b * s, n)`" in got.message


def _write(tmp_path, texts):
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")


def test_the_default_of_the_factory_parameter(tmp_path):
    """``make_encoder(d_model)`` leaves the factory's default, False: fed
    sequence-first, it is right."""
    texts = package_texts(PKG)
    texts["dual_path.py"] = texts["dual_path.py"].replace(
        "self.inter = make_encoder(d_model, True)", "self.inter = make_encoder(d_model)"
    )
    _write(tmp_path, texts)
    assert analyze_file(str(tmp_path / "dual_path.py"), ["MHA010"]) == []


def test_a_flag_the_call_does_not_state_is_unknown(tmp_path):
    texts = package_texts(PKG)
    texts["dual_path.py"] = texts["dual_path.py"].replace(
        "self.inter = make_encoder(d_model, True)",
        "self.inter = make_encoder(d_model, d_model > 32)",
    )
    _write(tmp_path, texts)
    assert analyze_file(str(tmp_path / "dual_path.py"), ["MHA010"]) == []


def test_each_call_of_a_factory_of_the_same_file(tmp_path):
    """Swap what the mixer feeds its two modules: each is judged with the
    flag its own call of ``_attention`` passes."""
    text = package_texts(PKG)["mixer.py"]
    swapped = (
        text.replace("batch_first=True)", "batch_first=@)")
        .replace("batch_first=False)", "batch_first=True)")
        .replace("batch_first=@)", "batch_first=False)")
    )
    path = tmp_path / "mixer.py"
    assert analyze_source(text, str(path), ["MHA010"]) == []
    got = analyze_source(swapped, str(path), ["MHA010"])
    assert [(f.line, f.col, f.code) for f in got] == [(19, 17, "MHA010"), (21, 18, "MHA010")]
    assert "built with batch_first=False is fed batch-first data" in got[0].message
    assert "built with batch_first=True is fed sequence-first data" in got[1].message
