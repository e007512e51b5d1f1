"""MHA006 judged one instance at a time (issue 26, item 5): a class built
causal by one caller and given a mask by another is clean when no single
instance gets both.  Checked through the engine on packages written to disk,
with the exact code, line and column."""
from __future__ import annotations

from flake8_mha.lint.engine import analyze_source

ATTEND = '''\
import torch.nn.functional as F
from torch import nn


class Attend(nn.Module):
    def __init__(self, causal=False):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal={flag})
'''
DECODER = '''\
from torch import nn

from .attend import Attend


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Attend(causal=True) for _ in range(2)])

    def forward(self, x):
        return self.blocks(x)
'''
ENCODER = '''\
from torch import nn

from .attend import Attend


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.attend = Attend()

    def forward(self, x, keep):
        return self.attend(x, x, x, mask=keep)
'''


def _lint(tmp_path, flag="self.causal", **more):
    pkg = tmp_path / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    files = {"attend.py": ATTEND.format(flag=flag), "decoder.py": DECODER, "encoder.py": ENCODER}
    files.update(more)
    for name, text in files.items():
        (pkg / name).write_text(text)
    path = pkg / "attend.py"
    return [(f.code, f.line, f.col) for f in analyze_source(path.read_text(), str(path), ["MHA006"])]


def test_no_instance_gets_both_the_flag_and_a_mask(tmp_path):
    """The decoder's causal instances (items of a ``Sequential``, which hands
    them its input alone) never get a mask; the encoder's, which get one, are
    not causal."""
    assert _lint(tmp_path) == []


def test_a_causal_instance_given_a_mask_is_reported(tmp_path):
    prefix = ENCODER.replace("Attend()", "Attend(causal=True)").replace("Encoder", "Prefix")
    assert _lint(tmp_path, **{"prefix.py": prefix}) == [("MHA006", 11, 16)]


def test_a_flag_on_only_with_another_condition_is_the_flag(tmp_path):
    """lucidrains' ``is_causal = self.causal and q.shape[-2] > 1``."""
    assert _lint(tmp_path, flag="self.causal and q.shape[-2] > 1") == []
    prefix = ENCODER.replace("Attend()", "Attend(causal=True)").replace("Encoder", "Prefix")
    got = _lint(tmp_path / "b", flag="self.causal and q.shape[-2] > 1", **{"prefix.py": prefix})
    assert got == [("MHA006", 11, 16)]


def test_a_flag_and_a_mask_handed_down_are_asked_of_the_class_above(tmp_path):
    """monai's ``TransformerBlock(causal=causal)`` keeps an ``SABlock(causal=
    causal)`` and calls it with its own ``attn_mask``: which of its own
    instances is built causal and given a mask decides."""
    block = '''\
from torch import nn

from .attend import Attend


class Block(nn.Module):
    def __init__(self, causal=False):
        super().__init__()
        self.attn = Attend(causal=causal)

    def forward(self, x, attn_mask=None):
        return self.attn(x, x, x, attn_mask)
'''
    model = '''\
from torch import nn

from .block import Block


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.causal = nn.ModuleList([Block(causal=True) for _ in range(2)])
        self.masked = Block()

    def forward(self, x, keep):
        for blk in self.causal:
            x = blk(x)
        return self.masked(x, attn_mask=keep)
'''
    assert _lint(tmp_path, **{"block.py": block, "model.py": model}) == []
    both = model.replace("x = blk(x)", "x = blk(x, attn_mask=keep)")
    assert _lint(tmp_path / "b", **{"block.py": block, "model.py": both}) == [("MHA006", 11, 16)]


def test_an_instance_used_otherwise_settles_nothing(tmp_path):
    """Handed to a function, the instance's calls are not known: as before."""
    other = '''\
from .attend import Attend


def build():
    return Attend(causal=True)
'''
    assert _lint(tmp_path, **{"other.py": other}) == [("MHA006", 11, 16)]


def test_a_subclass_of_the_keeping_class_in_another_file_settles_nothing(tmp_path):
    """``class MaskedDecoder(Decoder)`` in a file that never names ``Attend``
    may call the causal instance with a mask: the pairing cannot see it."""
    decoder = DECODER.replace(
        "self.blocks = nn.Sequential(*[Attend(causal=True) for _ in range(2)])",
        "self.attend = Attend(causal=True)",
    ).replace("return self.blocks(x)", "return self.attend(x, x, x)")
    sub = '''\
from .decoder import Decoder


class MaskedDecoder(Decoder):
    def forward(self, x, keep):
        return self.attend(x, x, x, keep)
'''
    assert _lint(tmp_path, **{"decoder.py": decoder}) == []
    assert _lint(tmp_path / "b", **{"decoder.py": decoder, "sub.py": sub}) == [("MHA006", 11, 16)]


def test_an_edit_of_a_keeping_class_invalidates_the_cached_finding(tmp_path, monkeypatch, capsys):
    """Through ``check``'s results cache: the files the pairing read are
    dependencies of the callee's findings, so giving the decoder's causal
    instance a mask brings MHA006 back on the next run."""
    import json
    import shutil

    from fixture_expect import FIXTURES
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(tmp_path)
    pkg = tmp_path / "instances"
    shutil.copytree(FIXTURES / "program_calls" / "instances", pkg)

    def run():
        status = check_main(["--format", "json", "instances/attend.py"])
        found = json.loads(capsys.readouterr().out)["findings"]
        return status, [(f["line"], f["col"], f["code"]) for f in found]

    assert run() == run() == (0, [])  # the second from the cache
    decoder = pkg / "decoder.py"
    decoder.write_text(decoder.read_text().replace("x = x + layer(x, x, x)", "x = x + layer(x, x, x, x)"))
    assert run() == (1, [(13, 16, "MHA006")])


def test_a_mask_reshaped_from_the_parameter_is_that_parameter(tmp_path):
    """x-transformers' ``if exists(mask): mask = mask[:, None, None, :]`` (or
    ``rearrange(mask, ...)``): the mask SDPA gets is given exactly when the
    parameter is, so the instances decide as before."""
    reshaped = ATTEND.replace(
        "        return F.scaled",
        "        if mask is not None:\n"
        "            mask = rearrange(mask, 'b j -> b 1 1 j').bool()\n"
        "        return F.scaled").replace("from torch import nn\n", "from einops import rearrange\nfrom torch import nn\n")
    reshaped = reshaped.format(flag="self.causal")
    pkg = tmp_path / "pkg"
    assert _lint(tmp_path, **{"attend.py": reshaped}) == []
    prefix = ENCODER.replace("Attend()", "Attend(causal=True)").replace("Encoder", "Prefix")
    got = _lint(tmp_path / "b", **{"attend.py": reshaped, "prefix.py": prefix})
    assert got == [("MHA006", 14, 16)]
    # a mask made from something else is not the parameter's
    other = reshaped.replace("mask = rearrange(mask,", "mask = rearrange(q,")
    assert _lint(tmp_path / "c", **{"attend.py": other}) == [("MHA006", 14, 16)]
    assert pkg.is_dir()


def test_instances_a_factory_of_the_file_builds_are_judged_one_at_a_time(tmp_path):
    """``nn.ModuleList([causal_attention() for _ in range(2)])``, the factory
    returning ``Attend(causal=True)`` in the same file, never given a mask;
    the encoder's non-causal instances are."""
    attend = ATTEND.format(flag="self.causal") + (
        "\n\ndef causal_attention():\n    return Attend(causal=True)\n\n\n"
        "class Tower(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.enc = nn.ModuleList([Attend() for _ in range(2)])\n"
        "        self.dec = nn.ModuleList([causal_attention() for _ in range(2)])\n\n"
        "    def forward(self, q, k, v, keep):\n"
        "        for blk in self.enc:\n"
        "            q = blk(q, k, v, keep)\n"
        "        for blk in self.dec:\n"
        "            q = blk(q, k, v)\n"
        "        return q\n")
    assert _lint(tmp_path, **{"attend.py": attend}) == []
    both = attend.replace("q = blk(q, k, v)\n", "q = blk(q, k, v, keep)\n")
    assert _lint(tmp_path / "b", **{"attend.py": both}) == [("MHA006", 11, 16)]


APART = "fixtures/program_calls/instances_apart"


def test_a_mask_made_only_when_the_model_is_not_causal():
    """palm-rlhf: ``if not self.causal: mask = ids >= 0 / else: mask = None``,
    ``causal`` handed to every block appended through a local name inside a
    ``Residual`` of the file, the blocks run in a ``zip_longest`` loop, and
    ``Attend``'s SDPA call in a helper method ``forward`` hands the mask to:
    no instance gets both (it was a false MHA006). ``SharedPaLM`` makes its
    mask whatever ``causal`` is: MHA006 stands, per file, over the package
    and through ``check``."""
    from fixture_expect import assert_package_runs

    assert_package_runs(APART, [("attend.py", 31, 16, "MHA006")])


def test_a_mask_kept_apart_by_another_test_is_no_answer(tmp_path):
    """The same model making its mask under another test (``if
    self.training:``): a causal model in training gets both, reported."""
    import pathlib
    import shutil

    from flake8_mha.lint.engine import analyze_file

    pkg = tmp_path / "instances_apart"
    shutil.copytree(pathlib.Path(__file__).parent.parent / APART, pkg)
    model = pkg / "model.py"
    text = model.read_text()
    assert text.count("        if not self.causal:\n") == 1
    model.write_text(text.replace("        if not self.causal:\n", "        if self.training:\n"))
    got = [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "attend.py"), ["MHA006"])]
    assert got == [("MHA006", 15, 16), ("MHA006", 31, 16)]
