"""Issue 26, item 1: a torch attention class handed to a constructor
(``Block(dim, heads, attn_cls=nn.MultiheadAttention)`` building ``self.attn
= attn_cls(dim, heads)``) is a construction of that torch module, judged
where it is built (probe S's P: missed before, also with the class only the
parameter's default).  Where a construction elsewhere in the project hands
the parameter another class (``CustomBlock(..., attn_cls=MyAttention)``),
the default never runs for it and nothing is said.

``fixtures/program_calls/torch_class_params``: per file, over the package
and through ``check``."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, copied

from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_calls/torch_class_params")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("blocks.py", 9, 21, "MHA001")])


def test_the_finding_names_the_caller_s_layout():
    got = analyze_file(str(PKG / "blocks.py"), ["MHA001"])
    assert [(f.line, f.col) for f in got] == [(9, 21)]
    assert "torch_class_params/model.py line 17: `# (B, L, E)`" in got[0].message


def test_a_class_left_to_its_default_is_that_class(tmp_path):
    pkg = copied(PKG, tmp_path)
    model = pkg / "model.py"
    model.write_text(
        model.read_text().replace(
            "Block(dim, heads, attn_cls=nn.MultiheadAttention)", "Block(dim, heads)"
        )
    )
    got = analyze_file(str(pkg / "blocks.py"), ["MHA001"])
    assert [(f.line, f.col) for f in got] == [(9, 21)]


def test_another_class_handed_elsewhere_silences_the_default(tmp_path):
    pkg = copied(PKG, tmp_path)
    model = pkg / "model.py"
    model.write_text(
        model.read_text().replace("attn_cls=nn.MultiheadAttention", "attn_cls=MyAttention")
    )
    assert analyze_file(str(pkg / "blocks.py"), ["MHA001"]) == []


def test_one_file_alone_reads_its_own_constructions(tmp_path):
    """Without the project (``project=False``), a construction in the same
    file that hands the torch class is enough, and one that hands another
    class of the file leaves the parameter unknown."""
    from flake8_mha.lint.engine import analyze_source

    one = (PKG / "blocks.py").read_text() + (
        "\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(100, 48)\n"
        "        self.block = Block(48, 4, attn_cls=nn.MultiheadAttention)\n\n"
        "    def forward(self, tokens):\n"
        "        return self.block(self.embed(tokens))  # (B, L, E)\n"
    )
    path = tmp_path / "one.py"
    path.write_text(one)
    got = analyze_source(one, str(path), ["MHA001"], project=False)
    assert [(f.line, f.col) for f in got] == [(9, 21)]
    other = one.replace(
        "attn_cls=nn.MultiheadAttention)\n\n    def forward",
        "attn_cls=CustomBlock)\n\n    def forward",
    )
    path.write_text(other)
    assert analyze_source(other, str(path), ["MHA001"], project=False) == []
