"""Issue 26, item 1: a module whose class the program picks when it is built
(``attn_cls = Export if export else Torch``; a dict of backends indexed by a
setting, ``ATTENTION_BACKENDS[backend](dim, heads)``, probe G) is followed
when every class it may be runs the same ``forward`` (a subclass that only
inherits it) or reaches the same sinks the same way.

``fixtures/program_calls/chosen_classes``: the conditioned model hands a
keep-mask to two blocks, one of each kind, whose attention gives it to
``key_padding_mask``: MHA003 at both calls, per file, over the package and
through ``check``; the padding mask beside them is silent.  When the kinds
differ in what they do with the mask, each is followed and the wrong one is
reported, naming its class; the same block in the file of the call reports
the same."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts, write_package

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/chosen_classes")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 18, 13, "MHA003"), ("model.py", 19, 16, "MHA003")])


def test_a_local_bound_to_the_dict_s_item(tmp_path):
    # diffusers-style: ``cross_attn_cls = ATTENTION_BACKENDS[backend]`` first
    texts = package_texts(PKG)
    blocks = texts["blocks.py"]
    texts["blocks.py"] = blocks.replace(
        "        self.attn2 = ATTENTION_BACKENDS[backend](dim, heads)\n",
        "        cross_attn_cls = ATTENTION_BACKENDS[backend]\n"
        "        self.attn2 = cross_attn_cls(dim, heads)\n",
    )
    assert texts["blocks.py"] != blocks
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "model.py"), ["MHA003"])
    assert [(f.line, f.col) for f in got] == [(18, 13), (19, 16)]


def test_kinds_that_differ_are_each_followed(tmp_path):
    texts = package_texts(PKG)
    attention = texts["attention.py"]
    texts["attention.py"] = attention.replace(
        '''class ExportCrossAttention(TorchCrossAttention):
    """The same attention, marked for export."""
''',
        """class ExportCrossAttention(TorchCrossAttention):
    def forward(self, x, context, mask=None):
        return self.attn(x, context, context, key_padding_mask=~mask, need_weights=False)[0]
""",
    )
    assert texts["attention.py"] != attention
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "model.py"), ["MHA003"])
    # each class is followed and the wrong one reported, naming itself (a correct
    # sibling never hides a wrong one): the keep-mask is wrong for the class that
    # hands it on as it is, the padding mask for the one that inverts it
    wrong = {f.line: f.message for f in got}
    assert [(f.line, f.col) for f in got] == [(18, 13), (19, 16), (24, 13), (25, 16)]
    for line, cls in ((18, "Torch"), (19, "Torch"), (24, "Export"), (25, "Export")):
        assert f"{cls}CrossAttention.forward()" in wrong[line]


def test_a_dict_bound_twice_is_not_read(tmp_path):
    texts = package_texts(PKG)
    attention = texts["attention.py"]
    texts["attention.py"] = attention + "ATTENTION_BACKENDS = {}\n"
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "model.py"), ["MHA003"])
    assert [(f.line, f.col) for f in got] == [(18, 13)]


def test_the_blocks_in_the_file_of_the_call(tmp_path):
    texts = package_texts(PKG)
    one = texts["attention.py"] + "\n\n" + texts["blocks.py"].split("\n\n\n", 1)[1]
    one += """

class Local(nn.Module):
    def __init__(self, dim=64, export=False, backend="torch"):
        super().__init__()
        self.block = Block(dim, export=export)
        self.backend_block = BackendBlock(dim, backend=backend)

    def forward(self, x, context, prompt_ids):
        keep = prompt_ids != 0
        x = self.block(x, context, context_mask=keep)
        return self.backend_block(x, context, context_mask=keep)
"""
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA003"])
    lines = one.splitlines()
    first = lines.index("        x = self.block(x, context, context_mask=keep)") + 1
    assert [(f.line, f.col, f.code) for f in got] == [
        (first, 13, "MHA003"),
        (first + 1, 16, "MHA003"),
    ]
