"""The forty-third stop.  Issue 26: a module handed to a helper as a
parameter; the callers of that helper in its file say which module it is."""

from __future__ import annotations

from pathlib import Path

from fixture_expect import assert_package_runs, copied, write_package
from flake8_mha.lint.engine import analyze_file

PACKAGE = Path("fixtures/program_calls/handed_models")


def _rows(found):
    return [(f.line, f.col, f.code) for f in found]


def test_a_helper_handed_the_model_runs_its_forward_at_its_call():
    # probe AO's FALSE01 (keep_scores, right) beside the wrong pad_scores
    assert_package_runs(str(PACKAGE), [("scoring.py", 15, 12, "MHA002")])


def _scoring(tmp_path, main: str):
    pkg = copied(PACKAGE, tmp_path)
    text = (pkg / "scoring.py").read_text()
    head = text[: text.index("def main():")]
    (pkg / "scoring.py").write_text(head + main)
    return analyze_file(str(pkg / "scoring.py"), ["MHA002", "MHA003", "MHA004"])


def test_the_model_built_in_the_call_is_the_one_the_helper_runs(tmp_path):
    main = "def main(ids):\n    return pad_scores(TinyLM(), ids, 0)\n"
    assert _rows(_scoring(tmp_path, main)) == [(15, 12, "MHA002")]


def test_a_helper_also_handed_as_a_value_is_not_read_from_its_calls(tmp_path):
    # ``pad_scores`` handed to a runner: who else calls it, with what, is unknown
    main = (
        "def main(ids, run):\n"
        "    model = TinyLM()\n"
        "    run(pad_scores)\n"
        "    return pad_scores(model, ids, 0)\n"
    )
    assert _rows(_scoring(tmp_path, main)) == []


def test_a_helper_called_with_something_unknown_stays_unknown(tmp_path):
    main = (
        "def main(ids, other):\n"
        "    pad_scores(TinyLM(), ids, 0)\n"
        "    return pad_scores(other, ids, 0)\n"
    )
    assert _rows(_scoring(tmp_path, main)) == []


def test_a_helper_never_called_in_its_file_is_not_guessed(tmp_path):
    assert _rows(_scoring(tmp_path, "")) == []


MODEL_AND_HELPER = """\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, batch_first=True)

    def forward(self, x, key_padding_mask=None):
        return self.layer(x, src_key_padding_mask=key_padding_mask)


def encode(encoder, x, lengths):
    keep = torch.arange(x.shape[1])[None, :] < lengths[:, None]
    return encoder(x, key_padding_mask=keep)


def main(x, lengths):
    encoder = Encoder()
    return encode(encoder, x, lengths)
"""


def test_a_keep_mask_handed_through_the_helper_to_the_padding_mask(tmp_path):
    pkg = write_package(tmp_path / "pkg", {"model.py": MODEL_AND_HELPER})
    found = analyze_file(str(pkg / "model.py"), ["MHA003"])
    assert _rows(found) == [(16, 12, "MHA003")]


T5 = Path("fixtures/program_calls/t5_defaulted_bias")


def test_a_mask_folded_into_a_bias_made_when_none_is_given_reaches_sdpa():
    # probe AO's AO15: HF T5's ``if position_bias is None:`` fold, the stack's
    # ``position_bias = None`` handed to the first block (the decoder's is additive)
    assert_package_runs(str(T5), [("stack.py", 20, 32, "MHA004")])


def _stack(tmp_path, old: str, new: str):
    pkg = copied(T5, tmp_path)
    text = (pkg / "stack.py").read_text()
    assert old in text
    (pkg / "stack.py").write_text(text.replace(old, new, 1))
    return _rows(analyze_file(str(pkg / "stack.py"), ["MHA004"]))


def test_a_stack_that_always_hands_its_own_bias_folds_no_mask(tmp_path):
    # the block's bias is given on every pass: the attention adds it as it is
    rows = _stack(
        tmp_path,
        "        position_bias = None\n        for layer in self.block:\n            h, position_bias",
        "        position_bias = self.bias(h)\n        for layer in self.block:\n            h, position_bias",
    )
    assert rows == []


def test_the_first_block_called_alone_folds_the_mask(tmp_path):
    rows = _stack(
        tmp_path,
        "        position_bias = None\n        for layer in self.block:\n"
        "            h, position_bias = layer(h, mask=ext, position_bias=position_bias)  # MHA004:32\n",
        "        h, _ = self.block[0](h, mask=ext)\n",
    )
    assert rows == [(18, 16, "MHA004")]


def test_a_block_that_hands_on_a_bias_of_its_own_drops_the_fold(tmp_path):
    pkg = copied(T5, tmp_path)
    blocks = (pkg / "blocks.py").read_text()
    old = "self.attn(h, mask=mask, position_bias=position_bias)"
    assert old in blocks
    (pkg / "blocks.py").write_text(
        blocks.replace(old, "self.attn(h, mask=mask, position_bias=h[:1])")
    )
    assert _rows(analyze_file(str(pkg / "stack.py"), ["MHA004"])) == []


def test_a_cross_attention_beside_the_fold_is_named_through_its_own_chain(tmp_path):
    # composing: the block's second sink keeps the line and chain of its own callee
    pkg = copied(T5, tmp_path)
    attention = (pkg / "attention.py").read_text() + CROSS
    (pkg / "attention.py").write_text(attention)
    blocks = (pkg / "blocks.py").read_text()
    blocks = blocks.replace("import T5Attention", "import T5Attention, T5Cross")
    blocks = blocks.replace(
        "        self.ff = nn.Sequential(",
        "        self.cross = T5Cross(dim, heads)\n        self.ff = nn.Sequential(",
    )
    blocks = blocks.replace(
        "    def forward(self, h, mask=None, position_bias=None):\n",
        "    def forward(self, h, mask=None, position_bias=None, enc=None, enc_mask=None):\n",
    )
    blocks = blocks.replace(
        "        h = h + a\n", "        h = h + a\n        h = h + self.cross(h, enc, enc_mask)\n"
    )
    (pkg / "blocks.py").write_text(blocks)
    (pkg / "seq2seq.py").write_text(SEQ2SEQ)
    found = analyze_file(str(pkg / "seq2seq.py"), ["MHA009"])
    assert _rows(found) == [(15, 32, "MHA009")]
    assert found[0].message.endswith(
        "at t5_defaulted_bias/attention.py:45 through T5Block.forward() -> T5Cross.forward()"
    )


CROSS = """

class T5Cross(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)

    def forward(self, h, enc, enc_mask=None):
        b, t, c = h.shape
        q = self.q(h).view(b, t, self.heads, -1).transpose(1, 2)
        k = enc.view(b, -1, self.heads, c // self.heads).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, k, attn_mask=enc_mask)
        return out.transpose(1, 2).reshape(b, t, c)
"""

SEQ2SEQ = """\
import torch.nn as nn

from .blocks import T5Block


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.ModuleList([T5Block(first=True), T5Block()])

    def forward(self, h, enc, ids):
        keep = ids.ne(0)
        position_bias = None
        for layer in self.block:
            h, position_bias = layer(h, position_bias=position_bias, enc=enc, enc_mask=keep)
        return h
"""


SETTERS = Path("fixtures/program_calls/uncalled_setters")


def test_each_instance_runs_the_processor_it_is_built_with():
    # probe AO's AO05 and AO06: a ``set_processor`` nothing in its file calls
    assert_package_runs(
        str(SETTERS), [("blocks.py", 17, 20, "MHA002"), ("blocks.py", 27, 20, "MHA012")]
    )


def test_a_setter_its_own_file_calls_leaves_the_processor_unknown(tmp_path):
    # diffusers' own ``__init__`` runs ``self.set_processor(processor)``
    pkg = copied(SETTERS, tmp_path)
    text = (pkg / "attention_processor.py").read_text()
    old = "        self.processor = processor if processor is not None else AttnProcessor2_0()\n"
    assert old in text
    new = "        self.set_processor(processor if processor is not None else AttnProcessor2_0())\n"
    (pkg / "attention_processor.py").write_text(text.replace(old, new))
    assert _rows(analyze_file(str(pkg / "blocks.py"), ["MHA002", "MHA012"])) == []


def test_the_setter_read_the_same_in_one_file(tmp_path):
    # the blocks beside the attention: the file's own resolver reads the setter alike
    text = (SETTERS / "attention_processor.py").read_text()
    blocks = (SETTERS / "blocks.py").read_text()
    blocks = blocks.replace("from .attention_processor import Attention, AttnProcessorMath\n", "")
    one = write_package(tmp_path / "pkg", {"model.py": text + "\n" + blocks})
    found = analyze_file(str(one / "model.py"), ["MHA002", "MHA012"])
    assert _rows(found) == [(76, 20, "MHA002"), (86, 20, "MHA012")]


MIXINS = Path("fixtures/program_calls/mixin_chains")


def test_a_mixin_with_a_mixin_base_runs_on_the_modules_it_is_mixed_into():
    # probe AP's AP11: ``class AttendMixin(HeadsMixin)`` of another file
    assert_package_runs(str(MIXINS), [("mixins.py", 22, 15, "MHA007")])


def test_a_mixin_whose_base_is_a_module_class_of_no_module_heir_stays_silent(tmp_path):
    # the chain must be of plain classes: a base the file cannot read says nothing
    pkg = copied(MIXINS, tmp_path)
    text = (pkg / "mixins.py").read_text()
    text = text.replace("class HeadsMixin:", "class HeadsMixin(Unknown):")
    (pkg / "mixins.py").write_text(
        text.replace('"""\n\nimport', '"""\n\nfrom elsewhere import Unknown\nimport', 1)
    )
    assert _rows(analyze_file(str(pkg / "mixins.py"), ["MHA007"])) == []


PROPERTY = """\
import torch
import torch.nn as nn


class Forecaster(nn.Module):
    def __init__(self, window=24):
        super().__init__()
        self.window = window
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)

    @property
    def causal_mask(self):
        return torch.triu(torch.ones(self.window, self.window), diagonal=1)

    @property
    def causal_bool(self):
        return torch.triu(torch.ones(self.window, self.window, dtype=torch.bool), diagonal=1)

    def forward(self, x):
        return self.layer(x, src_mask=self.causal_mask)

    def forward_bool(self, x):
        return self.layer(x, src_mask=self.causal_bool)
"""


def test_a_mask_a_property_returns_is_read_where_it_is_used(tmp_path):
    # probe AP's AP18: ``src_mask=self.causal_mask`` of a ``@property``
    pkg = write_package(tmp_path / "pkg", {"model.py": PROPERTY})
    assert _rows(analyze_file(str(pkg / "model.py"), ["MHA004", "MHA003"])) == [(20, 16, "MHA004")]


WINDOWED = """\
import torch
import torch.nn as nn


class WindowedModule(nn.Module):
    def __init__(self, window):
        super().__init__()
        self.window = window

    @property
    def causal_mask(self):
        return torch.triu(torch.ones(self.window, self.window), diagonal=1)

    def lookahead(self):
        return torch.triu(torch.ones(self.window, self.window), diagonal=1).bool()

    def float_lookahead(self):
        return torch.triu(torch.ones(self.window, self.window), diagonal=1)
"""

FORECASTER = """\
import torch.nn as nn

from .base import WindowedModule


class Forecaster(WindowedModule):
    def __init__(self):
        super().__init__(24)
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)

    def forward(self, x):
        x = self.layer(x, src_mask=self.causal_mask)
        x = self.layer(x, src_mask=self.lookahead())
        return self.layer(x, src_mask=self.float_lookahead())
"""


def test_masks_a_base_of_another_file_makes_by_property_or_method(tmp_path):
    # probe AP's AP18 package: the property, and a plain method, of the base
    pkg = write_package(tmp_path / "pkg", {"base.py": WINDOWED, "model.py": FORECASTER})
    found = analyze_file(str(pkg / "model.py"), ["MHA004", "MHA003"])
    assert _rows(found) == [(12, 13, "MHA004"), (14, 16, "MHA004")]
    assert "self.causal_mask -> pkg/base.py:12" in found[0].message


def test_a_helper_whose_model_comes_by_star_args_is_read_without_error(tmp_path):
    # ``*models`` and keyword-only parameters of a helper its file calls
    text = (PACKAGE / "scoring.py").read_text()
    text = text.replace(
        "def keep_scores(model, input_ids, pad_id):", "def keep_scores(*models, input_ids, pad_id):"
    )
    text = text.replace(
        "    return model(input_ids, attention_mask=keep)",
        "    return models[0](input_ids, attention_mask=keep)",
    )
    text = text.replace("keep_scores(model, ids, 0)", "keep_scores(model, input_ids=ids, pad_id=0)")
    pkg = copied(PACKAGE, tmp_path)
    (pkg / "scoring.py").write_text(text)
    assert _rows(analyze_file(str(pkg / "scoring.py"), ["MHA002", "MHA004"])) == [
        (15, 12, "MHA002")
    ]
