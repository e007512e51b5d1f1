"""A module a factory method chooses between two classes
(``self.encoder = self.configure_encoder()``, returning ``MaskedEncoder()``
or ``Encoder()``): a call of it may run either, and feeds each what it feeds
(release review 18's torch-pointcloud 3DETR: a false MHA001, the encoders'
layers fed sequence-first points on every call, leak 0.0).

``fixtures/program_layout/chosen_encoders``: no MHA001; the opt-in MHA903
says the layer is right; per file, over the package and through ``check``.
A caller that feeds batch-first points is MHA001, naming it."""
from __future__ import annotations

from fixture_expect import ROOT, assert_package_runs, package_texts, write_package
from flake8_mha.lint.engine import analyze_file

PACKAGE = "fixtures/program_layout/chosen_encoders"


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(PACKAGE, [("layers.py", 10, 26, "MHA903")], select="MHA001,MHA903")


def test_by_default_nothing():
    assert analyze_file(str(ROOT / PACKAGE / "layers.py")) == []


def test_batch_first_points_are_reported(tmp_path):
    texts = package_texts(PACKAGE)
    texts["model.py"] = texts["model.py"].replace(
        "enc_features = _to_dense(x_tok, batch_tok, 2048).permute(1, 0, 2)",
        "enc_features = _to_dense(x_tok, batch_tok, 2048)",
    )
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "layers.py"), ["MHA001"])
    assert [(f.line, f.col, f.code) for f in got] == [(10, 26, "MHA001")]
    assert "model.py line 9: `x.view(batch_size, num_points, x.size(-1))`" in got[0].message
