"""Issue 26, item 2 ("a finding names the chain"): a finding at a wrapper's
call names the sink that the argument it judges reaches.

``fixtures/program_calls/sink_lines``: a graph layer hands its blocked mask
to one ``nn.MultiheadAttention`` and its padding to another; a window
attention has two SDPA calls, the mask on one branch only.  The keep-mask
handed as padding is MHA003 naming the ``key_padding_mask`` call (not the
first module call of the layer), the True = ignore window is MHA002 naming
the SDPA call that takes a mask (not the ``is_causal`` branch)."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_calls/sink_lines")
WANT = [("model.py", 16, 16, "MHA003"), ("model.py", 36, 16, "MHA002")]


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), WANT)


def _through(finding):
    return finding.message.split("; the call reaches ", 1)[1]


def test_the_padding_names_the_module_call_it_reaches():
    (got,) = analyze_file(str(PKG / "model.py"), ["MHA003"])
    assert (got.line, got.col) == (16, 16)
    assert _through(got) == (
        f"MultiheadAttention's key_padding_mask at {PKG / 'layers.py'}:23"
        " through GPSLayer.forward() -> GlobalAttention.forward()"
    )
    assert got.evidence["through"]["line"] == 23


def test_the_window_names_the_sdpa_call_that_takes_a_mask():
    (got,) = analyze_file(str(PKG / "model.py"), ["MHA002"])
    assert (got.line, got.col) == (36, 16)
    assert _through(got) == (
        f"scaled_dot_product_attention at {PKG / 'layers.py'}:48 through WindowAttention.forward()"
    )


def test_the_blocked_mask_still_names_its_own_module_call(tmp_path):
    """A finding on the other argument (MHA003: a keep triangle as the
    blocked mask) names the ``attn_mask`` call of the first module."""
    for name in ("__init__.py", "masks.py", "layers.py"):
        (tmp_path / name).write_text((PKG / name).read_text(encoding="utf-8"), encoding="utf-8")
    model = (PKG / "model.py").read_text(encoding="utf-8")
    model = model.replace("import torch.nn as nn\n", "import torch\nimport torch.nn as nn\n")
    model = model.replace(
        "        return self.layer(x, blocked, ~node_keep)",
        "        causal = torch.tril(torch.ones(x.size(1), x.size(1), dtype=torch.bool))\n"
        "        return self.layer(x, causal, ~node_keep)",
    )
    (tmp_path / "model.py").write_text(model, encoding="utf-8")
    got = analyze_file(str(tmp_path / "model.py"), ["MHA003"])
    # the bad model's padding (one line lower: ``import torch``), and the causal triangle
    assert [(f.line, f.col) for f in got] == [(17, 16), (28, 16)]
    assert _through(got[1]) == (
        f"MultiheadAttention's attn_mask at {tmp_path.name}/layers.py:13"
        " through GPSLayer.forward() -> LocalAttention.forward()"
    )
