"""The forty-fifth stop.  Issue 26: a module call whose masks come some from
the callers, some from in here, judged per argument (probe AP's finding
given twice); a model or a torch module handed to a helper of another file
(AP06, AP10's package); dicts of classes of another file (AP13's package)."""

from __future__ import annotations

from pathlib import Path

from fixture_expect import assert_package_runs, copied, flake8_in_project, write_package
from flake8_mha.lint.engine import analyze_file

PADDING = Path("fixtures/program_calls/padding_beside_causal")
CAUSAL = "causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), 1)"


def _rows(found):
    return [(f.line, f.col, f.code) for f in found]


def test_the_callers_padding_is_reported_once_at_the_call_that_hands_it():
    assert_package_runs(str(PADDING), [("decoder.py", 30, 14, "MHA003")])


def test_a_wrong_mask_made_in_here_is_still_judged_in_here(tmp_path):
    pkg = copied(PADDING, tmp_path)
    decoder = pkg / "decoder.py"
    decoder.write_text(
        decoder.read_text().replace(
            CAUSAL, "causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))"
        )
    )
    assert _rows(analyze_file(str(decoder), ["MHA003"])) == [(17, 16, "MHA003"), (30, 14, "MHA003")]


def test_a_right_padding_leaves_the_decoder_silent(tmp_path):
    pkg = copied(PADDING, tmp_path)
    decoder = pkg / "decoder.py"
    decoder.write_text(
        decoder.read_text().replace('enc["attention_mask"].bool()', 'enc["attention_mask"] == 0')
    )
    assert _rows(analyze_file(str(decoder), ["MHA003", "MHA004"])) == []


HANDED = Path("fixtures/program_calls/handed_elsewhere")
TORCH = Path("fixtures/program_calls/handed_torch_modules")


def test_a_model_handed_two_calls_down_to_a_helper_of_another_file_runs_its_class():
    found = assert_package_runs(str(HANDED), [("evaluate.py", 11, 18, "MHA003")])
    assert (
        f"; model is the Tagger the project's calls hand evaluate() ({HANDED}/loop.py:17); "
        f"the call reaches TransformerEncoder's src_key_padding_mask at {HANDED}/tagger.py:15 "
        "through Tagger.forward()"
    ) in found[0].msg


def test_a_torch_module_handed_to_a_helper_of_another_file_is_that_module():
    found = assert_package_runs(str(TORCH), [("ops.py", 5, 14, "MHA102")])
    assert found[0].msg.endswith(
        f"; mha is the MultiheadAttention the project's calls hand attend() ({TORCH}/blocks.py:15)"
    )


def _evaluate(tmp_path, old: str, new: str, file: str = "train.py"):
    pkg = copied(HANDED, tmp_path)
    path = pkg / file
    path.write_text(path.read_text().replace(old, new))
    return _rows(analyze_file(str(pkg / "evaluate.py"), ["MHA003"]))


def test_the_model_s_class_is_read_where_it_is_built(tmp_path):
    # built right at the call, or through ``.to(device)``
    inline = "    return fit(Tagger().to('cpu'), loader, torch.optim.SGD([], lr=lr))\n"
    assert _evaluate(
        tmp_path / "a",
        "    model = Tagger()\n    opt = torch.optim.AdamW(model.parameters(), lr=lr)\n"
        "    return fit(model, loader, opt)\n",
        inline,
    ) == [(11, 18, "MHA003")]


def test_a_model_the_calls_do_not_tell_is_not_guessed(tmp_path):
    # bound twice, built by a factory, or handed different classes: unknown
    assert (
        _evaluate(
            tmp_path / "a",
            "    model = Tagger()\n",
            "    model = Tagger()\n    model = wrap(model)\n",
        )
        == []
    )
    assert _evaluate(tmp_path / "b", "model = Tagger()", "model = build_tagger()") == []
    other = "\n\ndef probe(loader):\n    return evaluate(Probe(), loader)\n"
    pkg = copied(HANDED, tmp_path / "c")
    (pkg / "probe.py").write_text(
        "import torch.nn as nn\n\nfrom .evaluate import evaluate\n\n\n"
        "class Probe(nn.Module):\n    def forward(self, ids, padding):\n        return ids\n"
        + other
    )
    assert _rows(analyze_file(str(pkg / "evaluate.py"), ["MHA003"])) == []


def test_a_helper_handed_the_model_as_a_value_is_not_read(tmp_path):
    # ``fit`` passed around (a callback) may be called with anything
    assert (
        _evaluate(
            tmp_path,
            "    return fit(model, loader, opt)\n",
            "    run = fit\n    return run(model, loader, opt)\n",
        )
        == []
    )


def test_an_edit_of_the_builder_changes_the_helper_s_finding_with_the_cache_on(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(HANDED, tmp_path)

    def run():
        return flake8_in_project(tmp_path, f"{pkg.name}/evaluate.py", "MHA003")

    assert run() == (1, [[f"{pkg.name}/evaluate.py:11:18:", "MHA003"]])
    train = pkg / "train.py"
    text = train.read_text()
    train.write_text(text.replace("model = Tagger()", "model = build()"))
    assert run() == (0, [])
    train.write_text(text)
    assert run() == (1, [[f"{pkg.name}/evaluate.py:11:18:", "MHA003"]])


def test_a_torch_module_handed_by_two_classes_of_one_kind_is_that_kind(tmp_path):
    pkg = copied(TORCH, tmp_path)
    blocks = pkg / "blocks.py"
    # FastBlock hands its module to ``attend`` too: still an nn.MultiheadAttention
    blocks.write_text(blocks.read_text().replace("attend_fast(self.attn", "attend(self.attn"))
    found = analyze_file(str(pkg / "ops.py"), ["MHA102"])
    assert _rows(found) == [(5, 14, "MHA102")]
    assert found[0].message.endswith("blocks.py:15 and 1 more)")
    # one of them hands something else: unknown
    blocks.write_text(
        blocks.read_text().replace(
            "self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)\n\n    def forward(self, x, pad):\n        return x + attend(self.attn, self.norm(x), pad)\n\n\nclass FastBlock",
            "self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)\n\n    def forward(self, x, pad):\n        return x + attend(self.norm, self.norm(x), pad)\n\n\nclass FastBlock",
        )
    )
    assert _rows(analyze_file(str(pkg / "ops.py"), ["MHA102"])) == []


REGISTRIES = Path("fixtures/program_calls/imported_registries")


def test_a_dict_of_classes_of_another_file_runs_each_class_that_attends():
    assert_package_runs(
        str(REGISTRIES), [("blocks.py", 23, 20, "MHA012"), ("blocks.py", 32, 20, "MHA012")]
    )


def test_a_kind_that_is_no_class_of_the_project_leaves_the_mixer_unknown(tmp_path):
    pkg = copied(REGISTRIES, tmp_path)
    blocks = pkg / "blocks.py"
    text = blocks.read_text().replace(
        'MIXERS = {"attention": ScoreAttention, "linear": LinearMixer}',
        'MIXERS = {"attention": ScoreAttention, "linear": nn.Identity}',
    )
    blocks.write_text(text.replace('"linear": LinearMixer}[kind]', '"linear": make_mixer}[kind]'))
    assert _rows(analyze_file(str(blocks), ["MHA012"])) == []


def test_only_a_parameter_named_as_a_module_is_read_from_its_callers(tmp_path):
    from flake8_mha.analysis.program.handed_params import module_like

    assert [module_like(n) for n in ("model", "text_encoder", "attn", "self_attn", "net")] == [
        True
    ] * 5
    assert [module_like(n) for n in ("fn", "attn_mask", "model_fn", "module_cls", "x")] == [
        False
    ] * 5
    # a callback's name: its callers are not read (the cost of every helper of a large tree)
    pkg = copied(HANDED, tmp_path)
    for name in ("evaluate.py", "loop.py"):
        path = pkg / name
        path.write_text(path.read_text().replace("model", "step"))
    assert _rows(analyze_file(str(pkg / "evaluate.py"), ["MHA003"])) == []


TRAINER = (
    "from .evaluate import evaluate\n\n\n"
    "class Trainer:\n"
    "    def __init__(self, model, loader):\n"
    "        self.model = model\n"
    "        self.loader = loader\n\n"
    "    def validate(self):\n"
    "        return evaluate(self.model, self.loader)\n"
)


def test_a_model_a_class_keeps_from_its_constructor_is_what_its_constructions_hand(tmp_path):
    pkg = copied(HANDED, tmp_path)
    (pkg / "trainer.py").write_text(TRAINER)
    loop = pkg / "loop.py"
    loop.write_text(loop.read_text().replace("evaluate(model, loader)", "0.0"))
    train = "from .tagger import Tagger\nfrom .trainer import Trainer\n\n\ndef main(loader):\n"
    (pkg / "train.py").write_text(
        train + "    return Trainer({}, loader).validate()\n".format("Tagger()")
    )
    found = analyze_file(str(pkg / "evaluate.py"), ["MHA003"])
    assert _rows(found) == [(11, 18, "MHA003")]
    assert "model is the Tagger the project's calls hand evaluate() (" in found[0].message
    # a construction that hands anything else: unknown
    (pkg / "train.py").write_text(train + "    return Trainer(load(), loader).validate()\n")
    assert _rows(analyze_file(str(pkg / "evaluate.py"), ["MHA003"])) == []


def test_n_after_an_axis_no_name_explains_is_no_batch():
    from flake8_mha.analysis.layout.domain import BATCH, EMBED, SEQ, roles_of_names

    # probe AQ's pkg05: ``reshape(G, N, D)``, G graphs of N atoms, read as (?, N, E) before
    assert roles_of_names(["G", "N", "D"]) == (None, None, EMBED)
    assert roles_of_names(["L", "N", "E"]) == (SEQ, BATCH, EMBED)  # torch's docs
    assert roles_of_names(["N", "L", "E"]) == (BATCH, SEQ, EMBED)
    assert roles_of_names(["B", "N", "D"]) == (BATCH, SEQ, EMBED)  # einops' b n d


GRAPHS = """import math

import torch
import torch.nn as nn


class RadiusAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        G, N, D = x.shape
        q, k, v = self.qkv(x).view(G, N, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1) / math.sqrt(D)).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(G, N, D)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.radius = RadiusAttention(dim, heads)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        h = self.radius(x)
        return self.attn(h, h, h, need_weights=False)[0]
"""


def test_graphs_of_atoms_reshaped_g_n_d_are_not_read_sequence_first(tmp_path):
    pkg = write_package(tmp_path / "pkg", {"layers.py": GRAPHS})
    assert _rows(analyze_file(str(pkg / "layers.py"), ["MHA001", "MHA010", "MHA903"])) == []
