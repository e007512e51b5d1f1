"""The forty-fourth stop.  Issue 26: the items of a container a project
factory of another file returns (probe AP's AP21)."""

from __future__ import annotations

from pathlib import Path

from fixture_expect import assert_package_runs, copied
from flake8_mha.lint.engine import analyze_file

ITEMS = Path("fixtures/program_calls/factory_items")
FACTORY = (
    "def stack(n, dim, heads):\n    return nn.ModuleList(SDPALayer(dim, heads) for _ in range(n))\n"
)


def _rows(found):
    return [(f.line, f.col, f.code) for f in found]


def test_each_item_of_a_factory_of_another_file_runs_its_class():
    assert_package_runs(
        str(ITEMS), [("retriever.py", 21, 17, "MHA002"), ("score.py", 11, 12, "MHA002")]
    )


def _with_factory(tmp_path, factory: str, file: str = "retriever.py"):
    pkg = copied(ITEMS, tmp_path)
    layers = pkg / "layers.py"
    layers.write_text(layers.read_text().replace(FACTORY, factory))
    return _rows(analyze_file(str(pkg / file), ["MHA002", "MHA003"]))


def test_a_list_comprehension_of_one_class_is_read_the_same(tmp_path):
    factory = (
        "def stack(n, dim, heads):\n"
        "    return nn.ModuleList([SDPALayer(dim, heads) for _ in range(n)])\n"
    )
    assert _with_factory(tmp_path, factory) == [(21, 17, "MHA002")]


def test_a_list_filled_in_a_loop_is_read_the_same(tmp_path):
    factory = (
        "def stack(n, dim, heads):\n"
        "    layers = nn.ModuleList()\n"
        "    for _ in range(n):\n"
        "        layers.append(SDPALayer(dim, heads))\n"
        "    return layers\n"
    )
    assert _with_factory(tmp_path, factory) == [(21, 17, "MHA002")]
    assert _with_factory(tmp_path / "b", factory, "score.py") == [(11, 12, "MHA002")]


def test_items_of_two_classes_are_not_guessed(tmp_path):
    factory = (
        "class Plain(nn.Module):\n"
        "    def forward(self, x, attn_mask=None):\n"
        "        return x\n\n\n"
        "def stack(n, dim, heads):\n"
        "    return nn.ModuleList([SDPALayer(dim, heads), Plain()])\n"
    )
    assert _with_factory(tmp_path, factory) == []
    assert _with_factory(tmp_path / "b", factory, "score.py") == []


def test_what_the_items_class_does_with_the_mask_decides(tmp_path):
    # a layer that takes the ignore convention and inverts it for SDPA: the
    # padding mask is now right, the keep-mask of ``encode_query`` wrong
    pkg = copied(ITEMS, tmp_path)
    layers = pkg / "layers.py"
    text = layers.read_text().replace(
        "attn_mask=attn_mask)", "attn_mask=None if attn_mask is None else ~attn_mask)"
    )
    layers.write_text(text)
    found = _rows(analyze_file(str(pkg / "retriever.py"), ["MHA002", "MHA003"]))
    assert found == [(28, 17, "MHA002")]


HEADS = Path("fixtures/program_calls/head_helpers")


def test_heads_split_by_a_helper_of_another_file_are_counted_at_the_call():
    assert_package_runs(str(HEADS), [("layers.py", 34, 15, "MHA014")])


def _pair(tmp_path, old: str, new: str):
    pkg = copied(HEADS, tmp_path)
    pair = pkg / "pair.py"
    pair.write_text(pair.read_text().replace(old, new))
    return _rows(analyze_file(str(pair), ["MHA014"]))


def test_a_method_that_splits_heads_is_read_with_the_count_it_is_handed(tmp_path):
    assert _pair(tmp_path, "self._split(self.kv(x), 4)", "self._split(self.kv(x), 3)") == [
        (20, 16, "MHA014")
    ]


def test_a_count_the_helper_fixes_itself_is_its_own(tmp_path):
    # a helper that always splits 3 heads: 8 over 3 do not divide
    fixed = (
        "    def _kv(self, x):\n"
        "        b, t, _ = x.shape\n"
        "        return x.view(b, t, 3, 8).transpose(1, 2)\n\n"
        "    def forward(self, x):\n"
        "        q = self._split(self.q(x), 8)\n"
        "        k = self._kv(self.kv(x))\n"
    )
    old = (
        "    def forward(self, x):\n        q = self._split(self.q(x), 8)\n"
        "        k = self._split(self.kv(x), 4)\n"
    )
    assert _pair(tmp_path, old, fixed) == [(24, 16, "MHA014")]


def test_a_count_the_call_leaves_unknown_stays_unknown(tmp_path):
    old = "    def forward(self, x):\n"
    new = "    def forward(self, x, kv_heads=None):\n"
    got = _pair(tmp_path, old, new)
    assert got == []
    pkg = copied(HEADS, tmp_path / "b")
    pair = pkg / "pair.py"
    text = pair.read_text().replace(old, new)
    pair.write_text(text.replace("self._split(self.kv(x), 4)", "self._split(self.kv(x), kv_heads)"))
    assert _rows(analyze_file(str(pair), ["MHA014"])) == []


RETURNED = Path("fixtures/program_calls/returned_scores")


def test_scores_a_helper_masks_and_returns_are_judged_where_its_caller_softmaxes():
    assert_package_runs(str(RETURNED), [("model.py", 18, 20, "MHA012")])


def _scoring(tmp_path, extra: str):
    pkg = copied(RETURNED, tmp_path)
    scoring = pkg / "scoring.py"
    scoring.write_text(scoring.read_text() + extra)
    return _rows(analyze_file(str(scoring), ["MHA012", "MHA004"]))


def test_the_mask_made_beside_the_softmax_is_judged_at_the_helper_call(tmp_path):
    extra = (
        "\n\ndef node_probs(q, k, num_nodes):\n"
        "    from .graph_utils import node_valid\n\n"
        "    valid = node_valid(num_nodes, k.size(2))\n"
        "    return masked_scores(q, k, valid).softmax(dim=-1)\n"
    )
    assert _scoring(tmp_path, extra) == [(35, 12, "MHA012")]


def test_a_local_bound_to_the_helper_call_then_softmaxed_is_the_same(tmp_path):
    extra = (
        "\n\ndef node_probs(q, k, num_nodes):\n"
        "    from .graph_utils import node_valid\n\n"
        "    s = masked_scores(q, k, node_valid(num_nodes, k.size(2)))\n"
        "    return F.softmax(s, dim=-1)\n"
    )
    text = "import torch.nn.functional as F\n"
    pkg = copied(RETURNED, tmp_path)
    scoring = pkg / "scoring.py"
    scoring.write_text(text + scoring.read_text() + extra)
    assert _rows(analyze_file(str(scoring), ["MHA012"])) == [(35, 9, "MHA012")]


def test_a_helper_result_not_softmaxed_is_not_judged(tmp_path):
    extra = (
        "\n\ndef node_gates(q, k, num_nodes):\n"
        "    from .graph_utils import node_valid\n\n"
        "    valid = node_valid(num_nodes, k.size(2))\n"
        "    return masked_scores(q, k, valid).sigmoid()\n"
    )
    assert _scoring(tmp_path, extra) == []


def test_a_helper_that_softmaxes_itself_is_unchanged(tmp_path):
    pkg = copied(RETURNED, tmp_path)
    scoring = pkg / "scoring.py"
    text = scoring.read_text().replace(
        "    return s * valid[:, None, None, :]\n",
        "    return (s * valid[:, None, None, :]).softmax(dim=-1)\n",
    )
    text = text.replace(
        "    return masked_scores(q, k, valid).softmax(dim=-1)\n",
        "    return masked_scores(q, k, valid)\n",
    )
    scoring.write_text(text)
    # the gate's call now reaches a softmaxed product too
    assert_package_runs(str(pkg), [("model.py", 18, 20, "MHA012"), ("model.py", 31, 20, "MHA012")])


def test_a_0_1_mask_added_to_the_scores_a_helper_returns_is_mha004(tmp_path):
    pkg = copied(RETURNED, tmp_path)
    model = pkg / "model.py"
    model.write_text(
        model.read_text().replace(
            "self.attn(x, additive_valid(num_nodes, feats.size(1)))",
            "self.attn(x, node_valid(num_nodes, feats.size(1)))",
        )
    )
    found = _rows(analyze_file(str(model), ["MHA004", "MHA012"]))
    assert found == [(18, 20, "MHA012"), (30, 17, "MHA004")]


CONTEXT = Path("fixtures/program_calls/context_modules")


def test_a_context_zeroed_by_its_mask_and_handed_to_a_cross_attention_block():
    assert_package_runs(str(CONTEXT), [("denoiser.py", 20, 25, "MHA015")])


def _blocks(tmp_path, old: str, new: str):
    pkg = copied(CONTEXT, tmp_path)
    blocks = pkg / "blocks.py"
    blocks.write_text(blocks.read_text().replace(old, new))
    return _rows(analyze_file(str(pkg / "denoiser.py"), ["MHA015"]))


def test_a_block_that_masks_the_scores_itself_is_silent(tmp_path):
    causal = "key_padding_mask=ctx_pad, attn_mask=self.window, need_weights=False"
    assert _blocks(tmp_path, "key_padding_mask=ctx_pad, need_weights=False", causal) == []


def test_a_block_whose_padding_default_is_not_none_is_silent(tmp_path):
    assert (
        _blocks(
            tmp_path,
            "def forward(self, x, ctx, ctx_pad=None):",
            "def forward(self, x, ctx, ctx_pad=PAD):",
        )
        == []
    )


def test_a_self_attention_block_handed_zeroed_input_is_left_to_its_file(tmp_path):
    # the query is the context too: not read across the call (docs/reach.md)
    old = "out, _ = self.attn(self.norm(x), ctx, ctx,"
    assert _blocks(tmp_path, old, "out, _ = self.attn(ctx, ctx, ctx,") == []


HOOKS = Path("fixtures/program_calls/mask_hooks")


def test_a_mask_each_subclass_returns_from_an_abstract_hook_is_judged_per_subclass():
    assert_package_runs(str(HOOKS), [("base.py", 25, 15, "MHA002"), ("base.py", 25, 15, "MHA009")])


def test_the_message_names_the_subclass_whose_override_is_wrong(tmp_path):
    pkg = copied(HOOKS, tmp_path)
    found = analyze_file(str(pkg / "base.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in found] == [(25, 15, "MHA002")]
    assert "self.build_mask() of PaddedSelfAttention -> " in found[0].message
    assert found[0].message.endswith(
        "; an instance of PaddedSelfAttention returns this mask from its build_mask()"
    )


def test_a_subclass_nothing_builds_is_not_judged(tmp_path):
    pkg = copied(HOOKS, tmp_path)
    encoder = pkg / "encoder.py"
    text = encoder.read_text().replace('    "padded": PaddedSelfAttention,\n', "")
    encoder.write_text(text.replace(", PaddedSelfAttention\n", "\n"))
    assert _rows(analyze_file(str(pkg / "base.py"), ["MHA002", "MHA009"])) == [(25, 15, "MHA009")]


def test_a_subclass_of_the_base_file_is_read_there(tmp_path):
    pkg = copied(HOOKS, tmp_path)
    base = pkg / "base.py"
    base.write_text(base.read_text().replace(".tril()", ".triu(1)"))
    found = analyze_file(str(base), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in found] == [(25, 15, "MHA002")]
    assert "an instance of CausalSelfAttention returns this mask" in found[0].message


def test_a_hook_the_base_defines_itself_is_its_own(tmp_path):
    # the base's own build_mask returns the keep-mask: the subclasses are not asked
    pkg = copied(HOOKS, tmp_path)
    base = pkg / "base.py"
    own = (
        "    def build_mask(self, lengths, n_frames):\n"
        "        keep = torch.arange(n_frames, device=lengths.device)[None, :] < lengths[:, None]\n"
        "        return keep[:, None, None, :]\n"
    )
    text = base.read_text().replace(
        "    @abstractmethod\n    def build_mask(self, lengths, n_frames):\n"
        '        """An SDPA ``attn_mask`` for (B, T) frames of the given lengths."""\n',
        own,
    )
    base.write_text(text)
    assert _rows(analyze_file(str(base), ["MHA002", "MHA009"])) == []


HINTS = Path("fixtures/program_calls/causal_hints")


def test_the_call_that_leaves_the_mask_of_a_wrapper_s_causal_hint_is_reported():
    assert_package_runs(str(HINTS), [("evaluate.py", 13, 9, "MHA005")])


def test_when_every_call_leaves_the_mask_the_wrapper_s_own_call_is_reported_once(tmp_path):
    pkg = copied(HINTS, tmp_path)
    for name, old in (
        ("model.py", "self.decode(tgt, memory, tgt_mask=causal)"),
        ("generate.py", "model.decode(ys, memory, tgt_mask=mask)"),
    ):
        path = pkg / name
        path.write_text(path.read_text().replace(old, old.split(", tgt_mask=")[0] + ")"))
    found = [
        (f, line, col, code)
        for f in ("model.py", "generate.py", "evaluate.py")
        for line, col, code in _rows(analyze_file(str(pkg / f), ["MHA005"]))
    ]
    assert found == [("model.py", 18, 16, "MHA005")]
