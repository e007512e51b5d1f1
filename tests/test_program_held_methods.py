"""Issue 26, item 1: a named method of a held module, and a module-level
model of a script, are calls like any other.

``fixtures/program_calls/held_methods``: timm's ``self.vit.forward_features(
patches, attn_mask=...)`` runs ``VisionTransformer.forward_features``, which
hands the mask to every block's attention and so to SDPA.  The caller's mask
is judged at its call, in the linted file (naflex.py) and one call further
up, through a wrapper that hands its own parameter on (classifier.py ->
``Pooled.forward`` -> ``forward_features``)."""
from __future__ import annotations

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = "fixtures/program_calls/held_methods"


def test_per_file_over_the_package_and_through_check():
    found = assert_package_runs(PKG, [
        ("classifier.py", 16, 26, "MHA002"),
        ("naflex.py", 15, 16, "MHA002"),
        ("naflex.py", 23, 16, "MHA009"),
    ])
    chain = {f.line: f.msg for f in found if f.path.endswith("classifier.py")}[16]
    assert chain.endswith(
        "through Pooled.forward() -> VisionTransformer.forward_features() -> Block.forward() "
        "-> Attention.forward()")


BACKBONE = '''\
import torch.nn as nn
import torch.nn.functional as F


class Backbone(nn.Module):
    def forward_features(self, x, attn_mask=None):
        return F.scaled_dot_product_attention(x, x, x, attn_mask=attn_mask)

    def describe(self, x, attn_mask=None):
        return attn_mask
'''
USER = '''\
import torch.nn as nn

from .backbone import Backbone


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Backbone()

    def forward(self, x, ids):
        pad = (ids == 0)[:, None, None, :]
        a = self.net.describe(x, attn_mask=pad)
        return self.net.METHOD(x, attn_mask=pad) + a
'''


def test_only_the_method_called_is_followed(tmp_path):
    """The method named, and no other: ``describe`` reaches no sink."""
    pkg = write_package(tmp_path / "pkg", {"backbone.py": BACKBONE,
                                            "model.py": USER.replace("METHOD", "forward_features")})
    got = [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "model.py"), ["MHA002"])]
    assert got == [("MHA002", 14, 16)]
    pkg = write_package(tmp_path / "two", {"backbone.py": BACKBONE,
                                            "model.py": USER.replace("METHOD", "describe")})
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []


def test_a_model_built_at_module_level_is_followed_in_the_functions_that_use_it():
    """``fixtures/program_calls/scripts``: a training script builds
    ``model = Classifier(...)`` once at module level and calls it in its
    functions; the script names no attention word, so the focused parse
    keeps the functions that use what that statement binds.  A named method
    of that object (``model.encode(ids, padding_mask)``) is its class's
    method (the PyTorch translation tutorial's ``model.decode(...)``)."""
    found = assert_package_runs("fixtures/program_calls/scripts", [
        ("train.py", 13, 14, "MHA002"), ("train.py", 29, 16, "MHA002")])
    assert {f.msg.rsplit(" through ", 1)[-1] for f in found} == {
        "Classifier.forward() -> SelfAttention.forward()",
        "Classifier.encode() -> SelfAttention.forward()"}


def test_layers_kept_by_a_clones_helper_are_its_argument_s_copies():
    """``fixtures/program_calls/clones``: DETR's ``self.layers =
    _get_clones(DecoderLayer(...), N)``, the helper in another file: each
    item is a ``DecoderLayer``, so the caller that throws away every layer's
    map makes the layer's weights a waste (MHA102 at the layer's module
    call); the twin whose caller keeps the maps is right."""
    found = assert_package_runs("fixtures/program_calls/clones", [("layers.py", 12, 25, "MHA102")])
    assert "by every caller of `DecoderLayer.forward`" in found[0].msg


def test_the_transformer_s_own_encoder_and_decoder_called_in_methods():
    """``fixtures/program_calls/transformer_parts``: the PyTorch translation
    tutorial's ``encode``/``decode`` call ``self.transformer.encoder(...)``
    and ``.decoder(...)`` of an ``nn.Transformer``; the masks the translator
    hands them are judged at its calls, through the held model's named
    methods (a keep-mask as a padding mask, a bool keep triangle as
    ``tgt_mask``: MHA003), the right masks beside them are silent, and an
    encoder of the model's own (``custom_encoder``) is no torch module."""
    found = assert_package_runs("fixtures/program_calls/transformer_parts", [
        ("translate.py", 16, 16, "MHA003"), ("translate.py", 24, 16, "MHA003")])
    assert "TransformerDecoder's tgt_mask" in {f.line: f.msg for f in found}[24]


def test_a_module_dict_of_several_kinds_called_by_a_literal_key():
    """``fixtures/program_calls/keyed_dicts``: ``self.layers["attn"](...)`` of
    an ``nn.ModuleDict`` holding norms, the attention and a feed-forward is
    the attention: its mask is judged in the block's own method (a mask it
    builds) and at the encoder's call one file up (a mask handed down)."""
    assert_package_runs("fixtures/program_calls/keyed_dicts", [
        ("blocks.py", 25, 20, "MHA002"), ("model.py", 16, 16, "MHA002")])
