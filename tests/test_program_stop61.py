"""Misses of probe AB and later probes, and release reviews' false findings
mended in the thirty-second stop, each a package of several files run
through flake8 per file, over the package and through ``check``."""

from __future__ import annotations

import pathlib

from fixture_expect import (
    assert_package_runs,
    copied,
    flake8_in_project,
    flake8_run,
    write_package,
)

from flake8_mha.lint.engine import analyze_source


def _rows(source: str, codes=None):
    return [(f.line, f.col, f.code) for f in analyze_source(source, "t.py", codes)]


def test_functions_kept_on_self_in_another_file():
    # probe AB's AB11: ``self.expand = tile_heads`` and ``self.attend = attend``,
    # both imported; hive.py names no attention word
    found = assert_package_runs(
        "fixtures/program_calls/held_functions",
        [("hive.py", 24, 15, "MHA002"), ("swarm.py", 18, 16, "MHA016")],
        select="MHA",
    )
    assert found[0].msg.endswith(
        "the call reaches scaled_dot_product_attention at"
        " fixtures/program_calls/held_functions/kernels.py:7 through attend()"
    )
    assert found[1].msg.startswith("`self.expand(far, self.heads)` repeats the mask head-major")
    assert found[1].msg.endswith("(use far.repeat_interleave(self.heads, dim=0))")


def test_an_edit_of_the_kept_function_changes_the_finding_with_the_cache_on(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_calls/held_functions"), tmp_path)

    def run():
        return flake8_in_project(tmp_path, f"{pkg.name}/swarm.py", "MHA016")

    assert run() == (1, [[f"{pkg.name}/swarm.py:18:16:", "MHA016"]])
    kernels = pkg / "kernels.py"
    text = kernels.read_text()
    kernels.write_text(text.replace("mask.repeat(heads, 1, 1)", "mask.repeat_interleave(heads, 0)"))
    assert run() == (0, [])
    kernels.write_text(text)
    assert run() == (1, [[f"{pkg.name}/swarm.py:18:16:", "MHA016"]])


_KEPT_ONE_FILE = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "def attend(q, k, v, mask):\n"
    "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"
    "def tile(mask, heads):\n"
    "    return mask.repeat(heads, 1, 1)\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, dim, heads):\n"
    "        super().__init__()\n"
    "        self.heads = heads\n"
    "        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)\n"
    "        self.attend = attend\n"
    "        self.expand = tile\n"
    "    def forward(self, x, q, k, v, ids, far):\n"
    "        a = self.attend(q, k, v, (ids == 0)[:, None, None, :])\n"
    "        b = self.attn(x, x, x, attn_mask=self.expand(far, self.heads), need_weights=False)\n"
    "        return a, b\n"
)


def test_functions_kept_on_self_in_the_same_file():
    assert _rows(_KEPT_ONE_FILE, ["MHA002", "MHA016"]) == [(15, 13, "MHA002"), (16, 13, "MHA016")]


def test_a_parameter_kept_on_self_is_not_a_function_of_the_module():
    # ``self.attend = attend`` where ``attend`` is ``__init__``'s parameter:
    # what the caller hands in, not the module's ``attend``
    source = _KEPT_ONE_FILE.replace(
        "def __init__(self, dim, heads):", "def __init__(self, dim, heads, attend, tile):"
    )
    assert _rows(source, ["MHA002", "MHA016"]) == []


def test_a_name_set_twice_on_self_is_not_followed():
    source = _KEPT_ONE_FILE.replace(
        "        return a, b\n",
        "        return a, b\n    def swap(self):\n        self.expand = len\n",
    ).replace(
        "        self.attend = attend\n",
        "        self.attend = attend\n        self.attend = len\n",
    )
    assert _rows(source, ["MHA002", "MHA016"]) == []


def test_a_factory_builds_its_encoder_from_a_partial_of_another_file():
    # probe AB's AB07: ``GaugeLayer = partial(nn.TransformerEncoderLayer, ...,
    # batch_first=True)`` in layers.py, built into an encoder by encoders.py
    found = assert_package_runs(
        "fixtures/program_layout/partial_layers", [("forecast.py", 19, 13, "MHA010")], select="MHA"
    )
    assert found[0].msg == (
        "TransformerEncoder (its layers) built with batch_first=True is fed sequence-first"
        " data ((L, N, E), line 18: `x.transpose(0, 1)`): samples mix across the batch"
    )


def test_an_edit_of_the_partial_moves_the_finding_with_the_cache_on(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_layout/partial_layers"), tmp_path)

    def run():
        return flake8_in_project(tmp_path, f"{pkg.name}/forecast.py", "MHA010")

    assert run() == (1, [[f"{pkg.name}/forecast.py:19:13:", "MHA010"]])
    layers = pkg / "layers.py"
    text = layers.read_text()
    layers.write_text(text.replace("batch_first=True)", "batch_first=False)"))
    assert run() == (1, [[f"{pkg.name}/forecast.py:24:13:", "MHA010"]])  # the other call
    layers.write_text(text)
    assert run() == (1, [[f"{pkg.name}/forecast.py:19:13:", "MHA010"]])


def test_a_partial_of_the_factorys_own_file():
    source = (
        "from functools import partial\n"
        "import torch.nn as nn\n"
        "Layer = partial(nn.TransformerEncoderLayer, batch_first=True)\n"
        "def build(d, h):\n"
        "    return nn.TransformerEncoder(Layer(d, h), 2)\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(10, 8)\n"
        "        self.enc = build(8, 2)\n"
        "    def forward(self, ids):\n"
        "        x = self.embed(ids)  # (B, S, D)\n"
        "        x = x.transpose(0, 1)\n"
        "        return self.enc(x)\n"
    )
    assert _rows(source, ["MHA010"]) == [(14, 16, "MHA010")]


def test_a_mixins_factory_method_is_judged_by_what_its_subclasses_feed():
    # probe AC's FA01: ``self.attn = self._make_attention(d, h)`` in subclasses of
    # another file; one swaps to sequence-first (correct), one feeds batch-first
    found = assert_package_runs(
        "fixtures/program_layout/mixin_factories",
        [("alarms.py", 14, 20, "MHA005"), ("mixins.py", 8, 16, "MHA001")],
        select="MHA",
    )
    assert "is fed batch-first data ((N, L, E), mixin_factories/events.py line 14" in found[1].msg
    # probe AC's AC20: the module a mixin's method builds is that module at its calls
    assert found[0].msg == (
        "is_causal=True without attn_mask: MultiheadAttention raises in training and silently"
        " ignores the causal hint on the inference fastpath"
    )


def test_a_mixins_factory_method_fed_sequence_first_only_is_not_reported(tmp_path):
    pkg = copied(pathlib.Path("fixtures/program_layout/mixin_factories"), tmp_path)
    (pkg / "events.py").unlink()
    (pkg / "alarms.py").unlink()
    status, found = flake8_run(str(pkg), select="MHA0")
    assert (status, found) == (0, [])
    # a subclass that builds its own: the mixin's method is not what it runs
    (pkg / "own.py").write_text(
        "import torch.nn as nn\n"
        "from .mixins import AttentionMixin\n"
        "class Own(AttentionMixin, nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attn = self._make_attention(8, 2)\n"
        "    def _make_attention(self, dim, heads):\n"
        "        return nn.MultiheadAttention(dim, heads, batch_first=True)\n"
        "    def forward(self, x):\n"
        "        B, T, D = x.shape\n"
        "        return self.attn(x, x, x, need_weights=False)[0]\n"
    )
    status, found = flake8_run(str(pkg), select="MHA0")
    assert (status, found) == (0, [])


def test_the_fix_for_a_float_keep_mask_added_to_scores_does_not_invert_it():
    # probe AC: ``~`` of a float mask raises TypeError; the fix says ``mask == 0``
    source = (
        "import torch\n"
        "import torch.nn as nn\n"
        "class Attn(nn.Module):\n"
        "    def __init__(self, n=16):\n"
        "        super().__init__()\n"
        "        self.register_buffer('seen', torch.tril(torch.ones(n, n)))\n"
        "    def forward(self, q, k, v):\n"
        "        L = q.shape[-2]\n"
        "        scores = q @ k.transpose(-2, -1) + self.seen[:L, :L]\n"
        "        return scores.softmax(dim=-1) @ v\n"
    )
    (found,) = analyze_source(source, "t.py", ["MHA004"])
    assert (found.line, found.col, found.code) == (9, 18, "MHA004")
    assert found.message.endswith(
        "is a float32 0/1 keep-mask added to the attention scores before softmax: masked"
        " positions are shifted by 1, not removed (fill them with -inf:"
        " scores.masked_fill(mask == 0, float('-inf')))"
    )


def test_a_helper_of_the_file_that_returns_its_parameters_softmax_method():
    # probe AC's AC11: ``def normalize(logits): return logits.softmax(dim=-1)``
    source = (
        "import torch\n"
        "def normalize(logits):\n"
        "    return logits.softmax(dim=-1)\n"
        "def attend(q, k, v, atoms, pad_idx):\n"
        "    node_mask = atoms != pad_idx\n"
        "    logits = torch.matmul(q, k.transpose(-2, -1))\n"
        "    logits = logits * node_mask[:, None, None, :]\n"
        "    return normalize(logits) @ v\n"
    )
    assert _rows(source, ["MHA012"]) == [(7, 14, "MHA012")]
    # over another axis it is no softmax over the keys
    assert _rows(source.replace("softmax(dim=-1)", "softmax(dim=1)"), ["MHA012"]) == []


_PROPERTY = (
    "import torch.nn as nn\n"
    "class Layer(nn.Module):\n"
    "    def __init__(self, dim=64, heads=4):\n"
    "        super().__init__()\n"
    "        self._cross = nn.MultiheadAttention(dim, heads, batch_first=True)\n"
    "    @property\n"
    "    def cross(self):\n"
    "        return self._cross\n"
    "    def forward(self, queries, memory):\n"
    "        B, Q, D = queries.shape\n"
    "        m = memory.transpose(0, 1)\n"
    "        out = self.cross(queries.transpose(0, 1), m, m, need_weights=False)[0]\n"
    "        return queries + out.transpose(0, 1)\n"
)


def test_a_module_a_property_returns():
    # probe AC's AC23: ``self.cross(...)`` with ``cross`` a ``@property``
    assert _rows(_PROPERTY, ["MHA010", "MHA102"]) == [(12, 15, "MHA010")]
    # a plain method of that name is no module: its call is not the module's
    assert _rows(_PROPERTY.replace("    @property\n", ""), ["MHA010", "MHA102"]) == []


def test_static_and_class_methods_of_another_file_are_read_as_helpers(tmp_path):
    # probe AC's AC14 and AC28: ``MaskOps.per_head(m, h)``, ``KVMasker.apply(k, v, keep)``
    assert_package_runs(
        "fixtures/program_calls/static_helpers",
        [("gusts.py", 24, 15, "MHA015"), ("turbines.py", 16, 16, "MHA016")],
        select="MHA",
    )
    # the class method's ``cls`` is no argument of the call: its mask is ``mask``
    pkg = copied(pathlib.Path("fixtures/program_calls/static_helpers"), tmp_path)
    ops = pkg / "maskops.py"
    ops.write_text(
        ops.read_text().replace("repeat_interleave(heads, dim=0)", "repeat(heads, 1, 1)")
    )
    status, found = flake8_run(str(pkg / "turbines.py"), select="MHA016")
    assert status == 1
    assert [(f.line, f.col, f.code) for f in found] == [(16, 16, "MHA016"), (20, 16, "MHA016")]


def test_a_helper_of_another_file_that_expands_its_parameter_in_the_return(tmp_path):
    # probe AC's AC14: ``return pad[:, None, :].expand(-1, pad.size(1), -1).repeat(heads, 1, 1)``
    pkg = write_package(
        tmp_path / "pkg",
        {
            "maskops.py": (
                "def per_head(pad, heads):\n"
                "    return pad[:, None, :].expand(-1, pad.size(1), -1).repeat(heads, 1, 1)\n"
            ),
            "block.py": (
                "import torch.nn as nn\n"
                "from .maskops import per_head\n"
                "class Block(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.heads = 4\n"
                "        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)\n"
                "    def forward(self, x, pad):\n"
                "        mask = per_head(pad, self.heads)\n"
                "        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]\n"
            ),
        },
    )
    status, found = flake8_run(str(pkg / "block.py"), select="MHA016")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(10, 16, "MHA016")])
    assert found[0].msg.endswith(
        "(use pad[:, None, :].expand(-1, pad.size(1), -1).repeat_interleave(heads, dim=0)"
        " in the helper)"
    )


_HOLDER = (
    "import torch\n"
    "import torch.nn as nn\n"
    "class TriangularCausalMask:\n"
    "    def __init__(self, B, L, device='cpu'):\n"
    "        with torch.no_grad():\n"
    "            self._mask = torch.triu(torch.ones([B, 1, L, L], dtype=torch.bool), diagonal=1)\n"
    "    @property\n"
    "    def mask(self):\n"
    "        return self._mask\n"
    "class FullAttention(nn.Module):\n"
    "    def forward(self, queries, keys, values):\n"
    "        B, H, L, E = queries.shape\n"
    "        attn_mask = TriangularCausalMask(B, L, device=queries.device)\n"
    "        return nn.functional.scaled_dot_product_attention(\n"
    "            queries, keys, values, attn_mask=attn_mask.mask)\n"
)


def test_a_mask_an_object_of_the_file_holds():
    # release review 30: pytorch-forecasting's (and TSLib's) TriangularCausalMask,
    # True = the future, handed to SDPA through its ``mask`` property
    (found,) = analyze_source(_HOLDER, "t.py", ["MHA002"])
    assert (found.line, found.col, found.code) == (14, 16, "MHA002")
    assert found.message.startswith("mask from line 6 (torch.triu(")
    # a holder whose mask keeps the past is right
    fixed = _HOLDER.replace("torch.triu(", "~torch.triu(")
    assert _rows(fixed, ["MHA002", "MHA003"]) == []


_REBOUND_AFTER = (
    "import torch\n"
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class Attn(nn.Module):\n"
    "    def __init__(self, flash=True):\n"
    "        super().__init__()\n"
    "        self.flash = flash\n"
    "    def forward(self, q, k, v, attn_mask=None):\n"
    "        if self.flash:\n"
    "            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)\n"
    "        attn_mask = attn_mask[:, None, None, :]\n"
    "        scores = (q @ k.transpose(-2, -1)).masked_fill(~attn_mask, float('-inf'))\n"
    "        return scores.softmax(dim=-1) @ v\n"
    "def run(q, k, v, tokens):\n"
    "    return Attn()(q, k, v, attn_mask=(tokens == 0)[:, None, None, :])\n"
)


def test_a_parameter_stored_again_where_the_sink_cannot_see_it():
    # release review 30 (monai's SABlock): the mask reshaped on the other path, or
    # after the call, is the caller's mask at SDPA
    assert _rows(_REBOUND_AFTER, ["MHA002"]) == [(15, 12, "MHA002")]
    branches = _REBOUND_AFTER.replace(
        "        attn_mask = attn_mask[:, None, None, :]\n",
        "        if attn_mask is not None:\n            attn_mask = ~attn_mask\n",
    )
    assert _rows(branches, ["MHA002"]) == [(16, 12, "MHA002")]
    # stored before the call on its path: the caller's mask is not what SDPA gets
    before = _REBOUND_AFTER.replace(
        "        if self.flash:\n",
        "        attn_mask = attn_mask.logical_not() if self.flash else attn_mask\n"
        "        if self.flash:\n",
    )
    assert _rows(before, ["MHA002"]) == []
    # in a loop, a store after the call runs before its next turn
    looped = _REBOUND_AFTER.replace(
        "        if self.flash:\n            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)\n"
        "        attn_mask = attn_mask[:, None, None, :]\n",
        "        for _ in range(2):\n"
        "            q = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)\n"
        "            attn_mask = ~attn_mask\n",
    )
    assert _rows(looped, ["MHA002"]) == []


def test_a_mask_the_docstring_gives_as_sdpas_is_no_tokenizers():
    # release review 30 (kornia's PaliGemma): ``attention_mask`` beside ``input_ids``,
    # documented as an SDPA mask over image and text positions
    source = (
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(100, 16)\n"
        "    def forward(self, input_ids, pixels, attention_mask=None):\n"
        '        """\n'
        "        Args:\n"
        "            attention_mask: a mask over the image and text positions, as\n"
        "                scaled_dot_product_attention broadcasts it, e.g. (batch, 1, T, T).\n"
        '        """\n'
        "        x = torch.cat([pixels, self.embed(input_ids)], dim=1)[:, None]\n"
        "        return F.scaled_dot_product_attention(x, x, x, attn_mask=attention_mask)\n"
    )
    assert _rows(source, ["MHA004", "MHA009"]) == []
    tokenizer = source.replace(
        "a mask over the image and text positions, as\n",
        "1 for the tokens to attend to, 0 for padding,\n",
    ).replace(
        "scaled_dot_product_attention broadcasts it, e.g. (batch, 1, T, T).", "(batch, length)."
    )
    assert [r[2] for r in _rows(tokenizer, ["MHA004"])] == ["MHA004"]


def test_a_decorated_helper_of_another_file_is_not_read_and_does_not_crash(tmp_path):
    # probe AC's AC26 form: the helper's reading gives nothing, silently
    pkg = write_package(
        tmp_path / "pkg",
        {
            "kernels.py": (
                "import functools\n"
                "def traced(fn):\n"
                "    @functools.wraps(fn)\n"
                "    def inner(*a, **k):\n"
                "        return fn(*a, **k)\n"
                "    return inner\n"
                "@traced\n"
                "def broadcast_kv(x, n_rep):\n"
                "    return x.repeat(1, n_rep, 1, 1)\n"
            ),
            "layer.py": (
                "import torch.nn.functional as F\n"
                "from .kernels import broadcast_kv\n"
                "def attend(q, k, v, n_rep):\n"
                "    k, v = broadcast_kv(k, n_rep), broadcast_kv(v, n_rep)\n"
                "    return F.scaled_dot_product_attention(q, k, v)\n"
            ),
        },
    )
    status, found = flake8_run(str(pkg), select="MHA")
    assert (status, found) == (0, [])


_KWARGS_WRAPPER = (
    "import torch.nn as nn\n"
    "class Wrapper(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.inner = nn.MultiheadAttention(64, 4, batch_first=True)\n"
    "    def forward(self, x, **kwargs):\n"
    "        return self.inner(x, x, x, **kwargs)\n"
    "class Model(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.mixer = Wrapper()\n"
    "    def forward(self, x, pad):\n"
    "        out, _ = self.mixer(x, key_padding_mask=pad)\n"
    "        return out\n"
)


def test_a_wrapper_that_hands_its_kwargs_to_the_module(tmp_path):
    # probe AC's AC06: no caller passes need_weights through the **kwargs
    path = tmp_path / "m.py"
    path.write_text(_KWARGS_WRAPPER)
    status, found = flake8_run(str(path), select="MHA102")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(7, 16, "MHA102")])
    assert "thrown away by every caller of `Wrapper.forward` (line 13)" in found[0].msg
    for changed in (
        "key_padding_mask=pad, need_weights=False)",  # a caller turns them off
        "key_padding_mask=pad, need_weights=self.training)",  # or may
    ):
        path.write_text(_KWARGS_WRAPPER.replace("key_padding_mask=pad)", changed))
        assert flake8_run(str(path), select="MHA102") == (0, [])
    # a wrapper that sets the keyword itself decides
    path.write_text(
        _KWARGS_WRAPPER.replace(
            "        return self.inner(x, x, x, **kwargs)\n",
            "        kwargs['need_weights'] = False\n        return self.inner(x, x, x, **kwargs)\n",
        )
    )
    assert flake8_run(str(path), select="MHA102") == (0, [])


_DOCUMENTED_MASK = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class SABlock(nn.Module):\n"
    "    def forward(self, q, k, v, attn_mask=None):\n"
    '        """\n'
    "        Args:\n"
    "            attn_mask (torch.Tensor, optional): mask to apply to the attention matrix. B x N.\n"
    '        """\n'
    "        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)\n"
)


def test_a_mask_parameter_documented_with_the_batch_and_the_keys():
    # release review 30 (monai's SABlock): its (B, N) mask handed to SDPA unshaped
    (found,) = analyze_source(_DOCUMENTED_MASK, "t.py", ["MHA009"])
    assert (found.line, found.col, found.code) == (9, 16, "MHA009")
    assert found.message.startswith(
        "mask from line 4 (parameter attn_mask, (N, S) in its docstring) is a 2-D (N, S) padding mask"
    )
    # shaped in the docstring as SDPA reads it, or as three axes: nothing to say
    for shape in ("(B, 1, 1, N)", "B x N x N", "(batch, heads, L, S)"):
        assert _rows(_DOCUMENTED_MASK.replace("B x N.", shape + "."), ["MHA009"]) == []
    # shaped in the code before the call
    shaped = _DOCUMENTED_MASK.replace(
        "attn_mask=attn_mask)", "attn_mask=attn_mask[:, None, None, :])"
    )
    assert _rows(shaped, ["MHA009"]) == []


def test_a_class_a_module_lookup_may_build_is_not_said_never_built(tmp_path):
    # probe AC's AC18: ``getattr(attn_lib, name)()`` may build any class of the module
    attention = (
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "class SelfAttention(nn.Module):\n"
        "    def __init__(self, causal=False):\n"
        "        super().__init__()\n"
        "        self.causal = causal\n"
        "    def forward(self, x, mask=None):\n"
        "        return F.scaled_dot_product_attention(x, x, x, attn_mask=mask, is_causal=self.causal)\n"
    )
    model = (
        "import torch.nn as nn\n"
        "from . import attention as attn_lib\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, kind):\n"
        "        super().__init__()\n"
        "        self.tower = getattr(attn_lib, kind)(causal=True)\n"
        "    def forward(self, x, keep):\n"
        "        return self.tower(x, mask=keep[:, None, None, :])\n"
    )
    pkg = write_package(tmp_path / "pkg", {"attention.py": attention, "model.py": model})
    status, found = flake8_run(str(pkg / "attention.py"), select="MHA006")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(8, 16, "MHA006")])
    assert "never built" not in found[0].msg
    (pkg / "model.py").unlink()  # no lookup: its callers are outside the project
    status, found = flake8_run(str(pkg / "attention.py"), select="MHA006")
    assert found[0].msg.endswith(
        "SelfAttention is never built in the project: its callers are outside it"
    )


def test_a_softmax_helper_of_another_file(tmp_path):
    # probe AC's AC11 with the helper in another file; the scores are filled
    # for a distance cutoff (another mask) and multiplied by the padding
    pkg = write_package(
        tmp_path / "pkg",
        {
            "ops.py": "def normalize(logits):\n    return logits.softmax(dim=-1)\n",
            "attn.py": (
                "import torch\n"
                "from .ops import normalize\n"
                "def attend(q, k, v, atoms, far, pad_idx=0):\n"
                "    node_mask = atoms != pad_idx\n"
                "    logits = torch.matmul(q, k.transpose(-2, -1))\n"
                "    logits = logits.masked_fill(far, float('-inf'))\n"
                "    logits = logits * node_mask[:, None, None, :]\n"
                "    return normalize(logits) @ v\n"
            ),
        },
    )
    status, found = flake8_run(str(pkg / "attn.py"), select="MHA012")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(7, 14, "MHA012")])
    (pkg / "ops.py").write_text("def normalize(logits):\n    return logits.softmax(dim=1)\n")
    assert flake8_run(str(pkg / "attn.py"), select="MHA012") == (0, [])


_ASDICT = (
    "from dataclasses import asdict, dataclass\n"
    "import torch.nn as nn\n"
    "@dataclass\n"
    "class LayerConfig:\n"
    "    d_model: int = 64\n"
    "    nhead: int = 4\n"
    "class ConfiguredLayer(nn.TransformerEncoderLayer):\n"
    "    def __init__(self, cfg: LayerConfig):\n"
    "        super().__init__(**asdict(cfg))\n"
)


def test_a_dataclass_splat_carries_only_its_fields():
    # probe AC's AC29: ``**asdict(cfg)`` of a config without ``batch_first``
    assert _rows(_ASDICT, ["MHA001"]) == [(9, 9, "MHA001")]
    with_flag = _ASDICT.replace(
        "    nhead: int = 4\n", "    nhead: int = 4\n    batch_first: bool = True\n"
    )
    assert _rows(with_flag, ["MHA001"]) == []
    # a config of unknown class, or a dict, may carry anything
    assert _rows(_ASDICT.replace("cfg: LayerConfig", "cfg"), ["MHA001"]) == []


def test_a_constant_of_a_class_body():
    # probe AC's AC30: ``nhead=Defaults.HEADS``, ``class Defaults: HEADS = 3``
    source = (
        "import torch.nn as nn\n"
        "class Defaults:\n"
        "    WIDTH = 48\n"
        "    HEADS = 3\n"
        "class SummaryLayer(nn.TransformerEncoderLayer):\n"
        "    def __init__(self):\n"
        "        super().__init__(Defaults.WIDTH, Defaults.HEADS, batch_first=True)\n"
    )
    (found,) = analyze_source(source, "t.py", ["MHA101"])
    assert (found.line, found.col, found.code) == (7, 9, "MHA101")
    assert found.message.startswith("nhead=3 is odd")
    # assigned twice in the body: not a constant
    twice = source.replace("    HEADS = 3\n", "    HEADS = 3\n    HEADS = 4\n")
    assert _rows(twice, ["MHA101"]) == []


def test_a_constant_of_a_class_body_of_another_file(tmp_path):
    # probe AC's AC30 in its package form: ``from .config import Defaults``
    pkg = write_package(
        tmp_path / "pkg",
        {
            "config.py": "class Defaults:\n    WIDTH = 48\n    HEADS = WIDTH // 16\n",
            "layers.py": (
                "import torch.nn as nn\n"
                "from .config import Defaults\n"
                "class SummaryLayer(nn.TransformerEncoderLayer):\n"
                "    def __init__(self):\n"
                "        super().__init__(Defaults.WIDTH, Defaults.HEADS, batch_first=True)\n"
            ),
        },
    )
    status, found = flake8_run(str(pkg / "layers.py"), select="MHA101")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(5, 9, "MHA101")])
    (pkg / "config.py").write_text("class Defaults:\n    WIDTH = 48\n    HEADS = 4\n")
    assert flake8_run(str(pkg / "layers.py"), select="MHA101") == (0, [])


def test_probe_ad_look_alikes_stay_silent(tmp_path):
    # LA03a: a helper of another file returns the swap (sequence-first) the layer reads
    pkg = write_package(
        tmp_path / "days",
        {
            "helpers.py": (
                "def day_summary(h):\n"
                "    B, T, N, D = h.shape\n"
                "    return h.mean(2).transpose(0, 1)  # (T, B, D)\n"
            ),
            "model.py": (
                "import torch.nn as nn\n"
                "from .helpers import day_summary\n"
                "class DayContext(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0)\n"
                "    def forward(self, h):\n"
                "        return self.layer(day_summary(h))\n"
            ),
        },
    )
    assert flake8_run(str(pkg), select="MHA0,MHA1") == (0, [])
    # LA09a: one KV head (multi-query) tiled by a helper agrees with enable_gqa
    mqa = (
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "def tile_kv(t, n_rep):\n"
        "    return t.repeat(1, n_rep, 1, 1)\n"
        "class MultiQueryAttention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, head_dim):\n"
        "        super().__init__()\n"
        "        self.n_heads, self.head_dim = n_heads, head_dim\n"
        "        self.wq = nn.Linear(d_model, n_heads * head_dim)\n"
        "        self.wk = nn.Linear(d_model, head_dim)\n"
        "    def forward(self, x):\n"
        "        B, L, _ = x.shape\n"
        "        q = self.wq(x).view(B, L, self.n_heads, self.head_dim).transpose(1, 2)\n"
        "        k = self.wk(x).view(B, L, 1, self.head_dim).transpose(1, 2)\n"
        "        fused = F.scaled_dot_product_attention(q, k, k, enable_gqa=True)\n"
        "        k = tile_kv(k, self.n_heads)\n"
        "        return fused, F.scaled_dot_product_attention(q, k, k)\n"
    )
    assert _rows(mqa, ["MHA013", "MHA904"]) == []
    # with two KV heads the same helper tiles wrongly: reported
    two = mqa.replace("view(B, L, 1, self.head_dim)", "view(B, L, 2, self.head_dim)")
    assert [r[2] for r in _rows(two, ["MHA013"])] == ["MHA013"]
    # LA12b: an odd head count only ever used for cross-attention loses no fastpath
    cross = (
        "import torch.nn as nn\n"
        "class CrossBlock(nn.Module):\n"
        "    def __init__(self, dim, heads):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)\n"
        "    def forward(self, x, memory):\n"
        "        return self.attn(x, memory, memory, need_weights=False)[0]\n"
        "block = CrossBlock(96, 3)\n"
    )
    assert _rows(cross, ["MHA101"]) == []
    selfattn = cross.replace("self.attn(x, memory, memory,", "self.attn(x, x, x,")
    assert _rows(selfattn, ["MHA101"]) == [(8, 9, "MHA101")]
    # LA12c: a pooling query of one position, scaled at its creation
    pool = (
        "import torch\n"
        "import torch.nn as nn\n"
        "class AttentionPool(nn.Module):\n"
        "    def __init__(self, dim, heads):\n"
        "        super().__init__()\n"
        "        self.query = nn.Parameter(torch.randn(1, 1, dim) * 0.02)\n"
        "        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)\n"
        "    def forward(self, h, pad_mask):\n"
        "        q = self.query.expand(h.size(0), -1, -1)\n"
        "        out, _ = self.attn(q, h, h, key_padding_mask=pad_mask)\n"
        "        return out[:, 0]\n"
    )
    assert _rows(pool, ["MHA102"]) == []
    assert _rows(pool.replace("randn(1, 1, dim)", "randn(1, 4, dim)"), ["MHA102"]) == [
        (10, 18, "MHA102")
    ]


def test_keys_and_values_split_by_a_lambda_over_the_pair():
    # release review 31 (spear-tts): ``k, v = map(lambda t: repeat(t, ...), (k, v))``
    source = (
        "import torch.nn.functional as F\n"
        "from einops import repeat\n"
        "def attend(q, k, v, fused):\n"
        "    if fused:\n"
        "        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)\n"
        "    heads, kv_heads = q.shape[1], k.shape[1]\n"
        "    if kv_heads < heads:\n"
        "        k, v = map(lambda t: repeat(t, 'b h ... -> b (g h) ...', g=heads // kv_heads), (k, v))\n"
        "    return F.scaled_dot_product_attention(q, k, v)\n"
    )
    assert _rows(source, ["MHA013"]) == [(8, 30, "MHA013")]
    grouped = source.replace("'b h ... -> b (g h) ...'", "'b h ... -> b (h g) ...'")
    assert _rows(grouped, ["MHA013", "MHA904"]) == []


def test_a_size_from_a_dict_the_module_writes_out():
    # probe AD's AD24: ``QUERY_CFG = dict(dim=96, heads=3)``, ``QUERY_CFG["heads"]``
    source = (
        "import torch.nn as nn\n"
        "QUERY_CFG = dict(dim=96, heads=3, ff=192)\n"
        "layer = nn.TransformerEncoderLayer(QUERY_CFG['dim'], QUERY_CFG['heads'],"
        " QUERY_CFG['ff'], dropout=0.0, batch_first=True)\n"
    )
    assert _rows(source, ["MHA101"]) == [(3, 9, "MHA101")]
    changed = source + "QUERY_CFG['heads'] = 4\n"  # changed in place: not known
    assert _rows(changed, ["MHA101"]) == []
    literal = source.replace("dict(dim=96, heads=3, ff=192)", "{'dim': 96, 'heads': 4, 'ff': 192}")
    assert _rows(literal, ["MHA101"]) == []
