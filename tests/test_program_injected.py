"""Issue 26, item 3: a module a layer is handed by its constructor and keeps
(Informer's ``AttentionLayer(FullAttention(False), d_model, n_heads)`` with
``self.inner_attention = attention``) is the module every construction of the
layer in the project builds right there for that parameter.

``fixtures/program_calls/injected_modules``: the encoder builds the layer with
its attention and feeds it an ignore-mask; SDPA two calls away reads True as
attend: MHA002 at the encoder's call, per file, over the package and through
``check``; the keep-mask beside it is silent.  Constructions that hand two
kinds, or a name bound twice, settle nothing (a name bound once is the
construction it is bound to); the same program in one file reports the
same."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts, write_package

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/injected_modules")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 18, 16, "MHA002")])


def test_the_finding_names_the_chain():
    got = analyze_file(str(PKG / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(18, 16, "MHA002")]
    assert "through AttentionLayer.forward() -> FullAttention.forward()" in got[0].message


def _with_model(tmp_path, model: str):
    texts = package_texts(PKG)
    texts["model.py"] = model
    return write_package(tmp_path / "pkg", texts)


def test_two_kinds_handed_settle_nothing(tmp_path):
    model = package_texts(PKG)["model.py"]
    other = model.replace(
        "        self.attention = AttentionLayer(FullAttention(True), d_model, n_heads)\n",
        "        self.attention = AttentionLayer(FullAttention(True), d_model, n_heads)\n"
        "        self.other = AttentionLayer(nn.Identity(), d_model, n_heads)\n",
    )
    assert other != model
    pkg = _with_model(tmp_path, other)
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []


def test_a_name_bound_once_is_what_it_is_bound_to_and_one_bound_twice_settles_nothing(tmp_path):
    model = package_texts(PKG)["model.py"]
    named = model.replace(
        "        self.attention = AttentionLayer(FullAttention(True), d_model, n_heads)\n",
        "        inner = FullAttention(True)\n"
        "        self.attention = AttentionLayer(inner, d_model, n_heads)\n",
    )
    assert named != model
    # DETR's ``encoder_layer = TransformerEncoderLayer(...)``, then handed on
    # (probe AN's AN11): the construction it is bound to, two lines lower
    pkg = _with_model(tmp_path / "a", named)
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(19, 16, "MHA002")]
    twice = named.replace(
        "        inner = FullAttention(True)\n",
        "        inner = FullAttention(True)\n        if d_model > 512:\n"
        "            inner = nn.Identity()\n",
    )
    pkg = _with_model(tmp_path / "b", twice)
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []


def test_a_rebound_parameter_is_not_kept(tmp_path):
    texts = package_texts(PKG)
    layers = texts["layers.py"]
    texts["layers.py"] = layers.replace(
        "        self.inner_attention = attention\n",
        "        attention = attention or nn.Identity()\n"
        "        self.inner_attention = attention\n",
    )
    assert texts["layers.py"] != layers
    pkg = write_package(tmp_path / "pkg", texts)
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []


def test_the_same_program_in_one_file(tmp_path):
    texts = package_texts(PKG)
    body = [texts["attention.py"], texts["layers.py"], texts["model.py"]]
    one = "\n\n".join(body).replace("from .attention import FullAttention\n", "")
    one = one.replace("from .layers import AttentionLayer\n", "")
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA002"])
    line = one.splitlines().index("        return self.attention(x, x, x, pad)  # MHA002:16") + 1
    assert [(f.line, f.col, f.code) for f in got] == [(line, 16, "MHA002")]
