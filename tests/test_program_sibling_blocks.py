"""Issue 26, item 1: calls the summaries used to drop.

``fixtures/program_calls/sibling_blocks``: a block calls two instances of
one attention class with different mask parameters (self- and
cross-attention); a core calls SDPA on each branch, causal without a mask
and with the caller's mask otherwise (Informer); a layer keeps its
cross-attention only when asked (``self.cross_attention = None`` first,
MusicGen).  Each wrong mask is reported at the model's call, the right
ones are silent: per file, over the package and through ``check``."""
from __future__ import annotations

from fixture_expect import assert_package_runs

PKG = "fixtures/program_calls/sibling_blocks"


def test_per_file_over_the_package_and_through_check():
    found = assert_package_runs(PKG, [
        ("model.py", 18, 16, "MHA002"),
        ("model.py", 26, 16, "MHA002"),
        ("model.py", 34, 16, "MHA003"),
    ])
    chains = sorted(f.msg.rsplit(" through ", 1)[-1] for f in found)
    assert chains == ["Block.forward() -> Attention.forward()", "CausalOrMasked.forward()",
                      "Layer.forward()"]
