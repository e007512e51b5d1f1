"""Issue 26, item 1: a mask made by calling an instance of a plain class
(``self.look_ahead = SubsequentMask()`` in ``__init__``, ``mask =
self.look_ahead(L)`` in ``forward``) is what that class's ``__call__``
returns, in the file or across files, as a helper's return is.

``fixtures/program_calls/mask_makers``: a float 0/1 look-ahead mask reaches
``nn.TransformerDecoder``'s ``tgt_mask`` through the decoder of another
file: MHA004 at the model's call, per file, over the package and through
``check``, naming the maker's line; the bool maker beside it is silent, and
so is the same program in one file with the bool maker."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/mask_makers")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 19, 16, "MHA004")])


def test_the_finding_names_the_maker_and_the_chain():
    got = analyze_file(str(PKG / "model.py"), ["MHA004"])
    assert [(f.line, f.col, f.code) for f in got] == [(19, 16, "MHA004")]
    assert "self.look_ahead() -> " in got[0].message
    assert "mask_makers/masks.py:10: torch.triu(" in got[0].message
    assert "through TextDecoder.forward()" in got[0].message


def _one_file():
    texts = package_texts(PKG)
    one = "\n\n".join([texts["masks.py"], texts["decoder.py"], texts["model.py"]])
    one = one.replace("from .decoder import TextDecoder\n", "")
    return one.replace("from .masks import BoolSubsequentMask, SubsequentMask\n", "")


def test_the_same_program_in_one_file(tmp_path):
    one = _one_file()
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA004"])
    line = (
        one.splitlines().index(
            "        return self.decoder(ids, memory, causal_mask=mask)  # MHA004:16"
        )
        + 1
    )
    assert [(f.line, f.col, f.code) for f in got] == [(line, 16, "MHA004")]


def test_a_maker_that_caches_its_masks_is_unknown(tmp_path):
    """``self._cache[key] = ...; return self._cache[key]``: what the dict
    holds is not followed, so nothing is said (unknown never fires)."""
    one = _one_file().replace(
        "        return torch.triu(torch.ones(size, size, device=device), diagonal=1)\n",
        "        self._cache = {}\n"
        "        self._cache[size] = torch.triu(torch.ones(size, size, device=device), diagonal=1)\n"
        "        return self._cache[size]\n",
    )
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    assert analyze_source(one, str(path), ["MHA004"]) == []


def test_a_module_instance_still_runs_its_forward(tmp_path):
    """An ``nn.Module`` subclass without a ``__call__`` of its own runs its
    ``forward`` when called (torch's ``__call__``)."""
    one = (
        _one_file()
        .replace("class SubsequentMask:\n", "class SubsequentMask(nn.Module):\n")
        .replace(
            "    def __call__(self, size, device=None):\n        return torch.triu(torch.ones(size, size, device=device), diagonal=1)",
            "    def forward(self, size, device=None):\n        return torch.triu(torch.ones(size, size, device=device), diagonal=1)",
        )
    )
    one = "import torch.nn as nn\n" + one
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA004"])
    line = (
        one.splitlines().index(
            "        return self.decoder(ids, memory, causal_mask=mask)  # MHA004:16"
        )
        + 1
    )
    assert [(f.line, f.col, f.code) for f in got] == [(line, 16, "MHA004")]
