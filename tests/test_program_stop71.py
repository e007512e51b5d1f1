"""The forty-second stop.  Issue 26: what probe AN left open across files."""

from __future__ import annotations

from fixture_expect import assert_package_runs, write_package
from flake8_mha.lint.engine import analyze_file

CONFIG = """\
EMBED_DIMS = (64, 128, 320, 512)
NUM_HEADS = (2, 4, 6, 8)
"""

LAYERS = """\
import torch.nn as nn


class Stage(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(dim, heads, batch_first=True)
"""

MODEL = """\
import torch.nn as nn

from .config import EMBED_DIMS, NUM_HEADS
from .layers import Stage


class PVT(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList()
        for i, (dim, heads) in enumerate(zip(EMBED_DIMS, NUM_HEADS)):
            self.stages.append(Stage(dim, heads))
"""


def _sizes(tmp_path, model, config=CONFIG, codes=("MHA008",)):
    pkg = write_package(
        tmp_path / "pkg", {"config.py": config, "layers.py": LAYERS, "model.py": model}
    )
    return analyze_file(str(pkg / "model.py"), list(codes))


def _rows(found):
    return [(f.line, f.col, f.code) for f in found]


def test_a_zip_loop_over_another_files_tuples_is_judged_pass_by_pass(tmp_path):
    # probe AN's AN28: the third pass hands 320 over 6 heads to Stage
    found = _sizes(tmp_path, MODEL)
    assert _rows(found) == [(12, 32, "MHA008")]
    assert found[0].message.startswith("d_model=320 is not divisible by nhead=6")
    assert found[0].message.endswith("(in the loop at line 11, pass 3 of 4)")
    assert (found[0].evidence["embed_dim"], found[0].evidence["num_heads"]) == (320, 6)


def test_every_pass_that_divides_reports_nothing(tmp_path):
    assert _sizes(tmp_path, MODEL, CONFIG.replace("6, 8)", "5, 8)")) == []


def test_a_width_is_never_paired_with_another_passes_head_count(tmp_path):
    # 320 and 6 are both in the tuples, but never in the same pass
    config = "EMBED_DIMS = (64, 96, 320, 384)\nNUM_HEADS = (2, 6, 5, 8)\n"
    assert _sizes(tmp_path, MODEL, config) == []


def test_a_comprehension_a_range_loop_and_an_index_are_read_alike(tmp_path):
    comprehension = MODEL.replace(
        "        self.stages = nn.ModuleList()\n"
        "        for i, (dim, heads) in enumerate(zip(EMBED_DIMS, NUM_HEADS)):\n"
        "            self.stages.append(Stage(dim, heads))\n",
        "        self.stages = nn.ModuleList(\n"
        "            [Stage(d, h) for d, h in zip(EMBED_DIMS, NUM_HEADS)]\n"
        "        )\n",
    )
    assert _rows(_sizes(tmp_path / "a", comprehension)) == [(11, 14, "MHA008")]
    ranged = MODEL.replace(
        "for i, (dim, heads) in enumerate(zip(EMBED_DIMS, NUM_HEADS)):\n"
        "            self.stages.append(Stage(dim, heads))",
        "for i in range(len(EMBED_DIMS)):\n"
        "            self.stages.append(Stage(EMBED_DIMS[i], NUM_HEADS[i]))",
    )
    assert _rows(_sizes(tmp_path / "b", ranged)) == [(12, 32, "MHA008")]
    indexed = MODEL.replace(
        "for i, (dim, heads) in enumerate(zip(EMBED_DIMS, NUM_HEADS)):\n"
        "            self.stages.append(Stage(dim, heads))",
        "self.stages.append(Stage(EMBED_DIMS[-2], NUM_HEADS[-2]))",
    )
    found = _sizes(tmp_path / "c", indexed)
    assert _rows(found) == [(11, 28, "MHA008")]
    assert "(in the loop" not in found[0].message


def test_a_list_the_code_changes_in_place_is_not_read(tmp_path):
    changed = "EMBED_DIMS = [64, 128, 320, 512]\nEMBED_DIMS[2] = 384\nNUM_HEADS = (2, 4, 6, 8)\n"
    assert _sizes(tmp_path / "a", MODEL, changed) == []
    appended = "EMBED_DIMS = [64, 128, 320]\nEMBED_DIMS.append(512)\nNUM_HEADS = (2, 4, 6, 8)\n"
    assert _sizes(tmp_path / "b", MODEL, appended) == []
    # a list never changed is read like a tuple
    plain = "EMBED_DIMS = [64, 128, 320, 512]\nNUM_HEADS = [2, 4, 6, 8]\n"
    assert _rows(_sizes(tmp_path / "c", MODEL, plain)) == [(12, 32, "MHA008")]


def test_a_loop_over_unknown_sizes_stays_unknown(tmp_path):
    # one of the tuples is not known: no pass is judged
    config = (
        "import os\nEMBED_DIMS = (64, 128, 320, int(os.environ['W']))\nNUM_HEADS = (2, 4, 6, 8)\n"
    )
    assert _sizes(tmp_path, MODEL, config) == []


def test_a_loop_in_one_function_builds_torchs_module_pass_by_pass(tmp_path):
    source = """\
import torch.nn as nn

DIMS = (64, 96, 320)
HEADS = (4, 6, 6)

blocks = [nn.MultiheadAttention(d, h, batch_first=True) for d, h in zip(DIMS, HEADS)]
for d, h in zip(DIMS, HEADS[:2]):
    nn.MultiheadAttention(d, h, batch_first=True)
"""
    pkg = write_package(tmp_path / "pkg", {"blocks.py": source})
    found = analyze_file(str(pkg / "blocks.py"), ["MHA008"])
    # the slice is not read: its loop stays unknown
    assert _rows(found) == [(6, 11, "MHA008")]
    assert found[0].message == (
        "embed_dim=320 is not divisible by num_heads=6: MultiheadAttention raises at "
        "construction (in the loop at line 6, pass 3 of 3)"
    )
    assert (found[0].evidence["embed_dim"], found[0].evidence["num_heads"]) == (320, 6)


def test_the_stage_sizes_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/stage_sizes",
        [("heads.py", 13, 21, "MHA008"), ("model.py", 14, 32, "MHA008")],
    )


BLOCKS = """\
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)

    def forward(self, x):
        return x + self.attn(x, x, x, need_weights=False)[0]


class Transformer(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.resblocks = nn.ModuleList([Block(d) for _ in range(n)])
"""

TOWER = """\
import torch.nn as nn

from .layers import Transformer


class Vision(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = Transformer(64, 2)

    def forward(self, x):
        B, L, D = x.shape
        x = x.permute(1, 0, 2)  # NLD -> LND
        for blk in self.transformer.resblocks:
            x = blk(x)
        return x
"""


def _layout(tmp_path, blocks=BLOCKS, tower=TOWER, codes=("MHA001", "MHA010")):
    pkg = write_package(tmp_path / "pkg", {"layers.py": blocks, "model.py": tower})
    return analyze_file(str(pkg / "layers.py"), list(codes))


def test_blocks_run_one_by_one_from_another_files_transformer_get_its_layout(tmp_path):
    # probe AN's AN01: model.py names no block class, only the Transformer that holds them
    found = _layout(tmp_path)
    assert _rows(found) == [(10, 20, "MHA010")]
    assert "model.py line 13: `x.permute(1, 0, 2)`" in found[0].message


def test_sequence_first_blocks_fed_sequence_first_from_another_file_are_right(tmp_path):
    # the CLIP original: no batch_first, the tower converts to LND (MHA001 fired before)
    blocks = BLOCKS.replace(
        "nn.MultiheadAttention(d, 4, batch_first=True)", "nn.MultiheadAttention(d, 4)"
    )
    assert _layout(tmp_path, blocks) == []
    # and batch-first data into those blocks is MHA001's case
    batch_first = TOWER.replace("        x = x.permute(1, 0, 2)  # NLD -> LND\n", "")
    assert _rows(_layout(tmp_path / "b", blocks, batch_first)) == [(7, 21, "MHA001")]


def test_a_list_the_holder_changes_in_place_is_not_read(tmp_path):
    blocks = BLOCKS + "\n    def extend(self, block):\n        self.resblocks[0] = block\n"
    assert _layout(tmp_path, blocks) == []


def test_the_reach_in_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/tower_reach_in",
        [("layers.py", 15, 20, "MHA010"), ("layers.py", 22, 21, "MHA903")],
    )


HELPER = """\
import einops
import torch


@torch.no_grad()
def attention_mask_from_logits(mask_logits, num_heads, threshold=0.5):
    return einops.repeat(mask_logits.sigmoid() < threshold, "b q s -> (h b) q s", h=num_heads)
"""

DECODER = """\
import torch.nn as nn

from .masks import attention_mask_from_logits


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_heads = 8
        self.attn = nn.MultiheadAttention(64, 8, batch_first=True)

    def heads(self, logits):
        attn_mask = attention_mask_from_logits(logits, self.num_heads)
        return logits, attn_mask.detach()

    def forward(self, output, memory, logits):
        _, attn_mask = self.heads(logits)
        return self.attn(output, memory, memory, attn_mask=attn_mask, need_weights=False)[0]
"""


def _tiled(tmp_path, helper=HELPER, decoder=DECODER):
    pkg = write_package(tmp_path / "pkg", {"masks.py": helper, "model.py": decoder})
    return analyze_file(str(pkg / "model.py"), ["MHA016"])


def test_a_helper_of_another_file_tiling_thresholded_logits_head_major_is_reported(tmp_path):
    # probe AN's AN25: Mask2Former's mask from logits, returned in a tuple by a method
    found = _tiled(tmp_path)
    assert _rows(found) == [(18, 16, "MHA016")]
    assert found[0].message.endswith(
        "(use (mask_logits.sigmoid() < threshold).repeat_interleave(num_heads, dim=0) "
        "in the helper)"
    )


def test_the_helper_tiling_batch_major_or_a_tensor_threshold_is_silent(tmp_path):
    assert _tiled(tmp_path / "a", HELPER.replace("(h b) q s", "(b h) q s")) == []
    # a threshold that may be a tensor of another shape: the rows it keeps are not known
    tensor = HELPER.replace("threshold=0.5", "threshold")
    assert _tiled(tmp_path / "b", tensor) == []


def test_the_mask_heads_helpers_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/mask_heads_helpers", [("decoder.py", 29, 22, "MHA016")]
    )


GQA = """\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
"""

STACK = """\
import functools

import torch.nn as nn

from .attention import Attention


class Block(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.attention = Attention(dim, n_heads, n_kv_heads)


class Transformer(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, n_layers):
        super().__init__()
        self.layers = nn.ModuleList([Block(dim, n_heads, n_kv_heads) for _ in range(n_layers)])


make_draft = functools.partial(Transformer, 96, 6, 4)


class Spec(nn.Module):
    def __init__(self):
        super().__init__()
        self.draft = make_draft(1)
"""


def _gqa(tmp_path, stack=STACK, more=None):
    files = {"attention.py": GQA, "model.py": stack, **(more or {})}
    pkg = write_package(tmp_path / "pkg", files)
    return analyze_file(str(pkg / "attention.py"), ["MHA014"])


def test_a_partial_of_the_model_class_is_a_construction_with_its_arguments(tmp_path):
    # probe AN's AN06: the draft model's 6 query heads over 4 KV heads, two classes down
    found = _gqa(tmp_path)
    assert _rows(found) == [(18, 16, "MHA014")]
    assert found[0].message.startswith("enable_gqa=True with 6 query heads over 4 key/value heads")


def test_a_partial_whose_arguments_divide_or_that_another_file_calls_settles_nothing(tmp_path):
    assert _gqa(tmp_path / "a", STACK.replace("96, 6, 4)", "96, 6, 3)")) == []
    # called from a file the class's constructions are not read in: unknown
    caller = "from .model import make_draft\n\ndraft = make_draft(2)\n"
    assert _gqa(tmp_path / "b", more={"run.py": caller}) == []
    # handed around as a value: built elsewhere, with anything
    handed = STACK + "\nBUILDERS = {'draft': make_draft}\n"
    assert _gqa(tmp_path / "c", handed) == []


def test_the_draft_partials_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/draft_partials", [("attention.py", 23, 15, "MHA014")]
    )


POOLING = """\
import torch.nn as nn


class AttentivePooling(nn.Module):
    num_heads = 4

    def __init__(self, dim):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, self.num_heads, batch_first=True)


class WidePooling(AttentivePooling):
    num_heads = 8
"""

ENCODER = """\
import torch.nn as nn

from .layers import WidePooling


class SpeakerEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = WidePooling(180)
"""


def _pooling(tmp_path, layers=POOLING, model=ENCODER):
    pkg = write_package(tmp_path / "pkg", {"layers.py": layers, "model.py": model})
    return analyze_file(str(pkg / "layers.py"), ["MHA008"])


def test_a_subclass_head_count_is_judged_with_the_subclass_constructions(tmp_path):
    # probe AN's AN18 with the subclass beside its base: 180 over WidePooling's 8 heads
    found = _pooling(tmp_path)
    assert _rows(found) == [(9, 21, "MHA008")]
    assert found[0].message.startswith(
        "embed_dim=180 is not divisible by num_heads=8: MultiheadAttention raises at "
        "construction (in an instance of WidePooling)"
    )


def test_subclasses_that_divide_unused_or_with_their_own_init_say_nothing(tmp_path):
    assert _pooling(tmp_path / "a", model=ENCODER.replace("180", "160")) == []
    # never named outside its class statement: its instances are never made
    unused = ENCODER.replace("WidePooling", "AttentivePooling")
    assert _pooling(tmp_path / "b", model=unused) == []
    # an ``__init__`` of its own: the base's parameters are not its constructions'
    own_init = POOLING + ("\n    def __init__(self, dim):\n        super().__init__(dim)\n")
    assert _pooling(tmp_path / "c", own_init) == []
    # the base sets it on its instances: that hides every class body
    instance = POOLING.replace(
        "        super().__init__()\n",
        "        super().__init__()\n        self.num_heads = 4\n",
    )
    assert _pooling(tmp_path / "d", instance) == []


def test_the_subclass_heads_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/subclass_heads",
        [
            ("attention.py", 26, 15, "MHA014"),
            ("encoders.py", 14, 17, "MHA101"),
            ("pooling.py", 13, 21, "MHA008"),
        ],
    )


ENCODERS = """\
import torch.nn as nn


class SeqEncoder(nn.Module):
    num_heads = 5
    d_model = 320

    def __init__(self, depth=3):
        super().__init__()
        layer = nn.TransformerEncoderLayer(self.d_model, self.num_heads, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)


class EvenEncoder(SeqEncoder):
    num_heads = 4


class Classifier(nn.Module):
    def __init__(self, encoder_cls=SeqEncoder):
        super().__init__()
        self.body = encoder_cls()
"""


def _odd(tmp_path, source=ENCODERS):
    pkg = write_package(tmp_path / "pkg", {"model.py": source})
    return analyze_file(str(pkg / "model.py"), ["MHA101"])


def test_the_bases_own_head_count_is_judged_when_its_file_builds_the_base(tmp_path):
    # probe AM's AM18: the base's 5 heads (built as the default class), a subclass's 4
    found = _odd(tmp_path)
    assert _rows(found) == [(10, 17, "MHA101")]
    assert found[0].message == (
        "nhead=5 is odd: TransformerEncoderLayer never takes the fast inference path "
        "(in an instance of SeqEncoder)"
    )


def test_a_base_named_only_in_its_subclasses_statements_is_not_judged_on_its_own(tmp_path):
    only_subclassed = ENCODERS.replace("encoder_cls=SeqEncoder", "encoder_cls=EvenEncoder")
    assert _odd(tmp_path, only_subclassed) == []


def test_masks_a_generator_yields_are_what_its_loop_hands_the_blocks():
    # probe AN's AN29 (``for blk, mask in self.layer_masks(T)``) and AM's AM03 (zipped)
    assert_package_runs(
        "fixtures/program_calls/yielded_masks",
        [("model.py", 25, 17, "MHA002"), ("model.py", 47, 17, "MHA003")],
    )


GENERATOR = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def forward(self, x, mask=None):
        return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])

    def layer_masks(self, T):
        far = torch.ones(T, T, dtype=torch.bool).triu(1)
        for blk in self.blocks:
            yield blk, far

    def forward(self, x):
        for blk, mask in self.layer_masks(x.shape[1]):
            x = blk(x, mask)
        return x
"""


def test_a_generator_that_also_yields_the_right_mask_is_joined_and_silent(tmp_path):
    pkg = write_package(tmp_path / "pkg", {"model.py": GENERATOR})
    assert _rows(analyze_file(str(pkg / "model.py"), ["MHA002"])) == [(23, 17, "MHA002")]
    mixed = GENERATOR.replace(
        "            yield blk, far\n", "            yield blk, far\n            yield blk, ~far\n"
    )
    pkg = write_package(tmp_path / "b" / "pkg", {"model.py": mixed})
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []


def test_a_forward_pre_hook_on_the_module_leaves_its_layout_to_the_hook():
    # probe AO's FALSE02: the hook transposes the input, the module reads sequence-first
    assert_package_runs("fixtures/program_calls/hooked_layouts", [("blocks.py", 28, 21, "MHA001")])


def test_each_loop_over_a_container_calls_its_own_items_even_under_one_name():
    # probe AO's AO18: ``for layer in self.encoder`` then ``for layer in self.decoder``
    assert_package_runs(
        "fixtures/program_calls/reused_loop_names",
        [("detr.py", 19, 16, "MHA016")],
        select="MHA0,MHA1",
    )


def test_a_step_that_calls_self_runs_the_forward_and_reports_at_that_call():
    # probe AO's AO27: the validation step's right mask does not hide the training step's
    assert_package_runs("fixtures/program_calls/lightning_steps", [("lit.py", 19, 18, "MHA003")])


def test_zeroing_the_attention_output_with_the_mask_is_no_second_product_of_scores():
    # probe AO's AO24: ``out = out * keep[...]`` after ``out = einsum(attn, v)``
    assert_package_runs("fixtures/program_calls/set_outputs", [("model.py", 16, 16, "MHA012")])


def test_an_output_name_also_stored_by_a_loop_is_read_without_error():
    # alphafold3-pytorch's ``for pair_mask in ...`` beside ``pair_mask *= ...``: a
    # store with no value (the loop) once raised in the output test (MHA000)
    import ast

    from flake8_mha.analysis.program import fills

    tree = ast.parse("for m in xs:\n    pass\nm = a * m\n")
    stores = {"m": [tree.body[0], tree.body[1]]}
    assert fills._weighted_values(ast.Name("m", ast.Load()), stores) is False


KINDS_MODEL = """\
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.embed = nn.Embedding(100, d)
        layer = nn.TransformerEncoderLayer(d, 4, batch_first=True)
        self.stack = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.adapter = nn.TransformerEncoderLayer(d, 4, batch_first=True)

    def forward(self, ids, key_padding_mask=None):
        h = self.stack(self.embed(ids), src_key_padding_mask=key_padding_mask)
        return self.adapter(h, src_key_padding_mask=key_padding_mask)
"""

KINDS_CALLER = """\
from .model import Encoder


def encode(batch):
    keep = batch["attention_mask"].bool()
    return Encoder()(batch["input_ids"], key_padding_mask=keep)
"""


def test_a_mask_that_reaches_two_kinds_of_torch_module_is_judged_once(tmp_path):
    # probe AO's AO27 package: a TransformerEncoder, then a further encoder layer
    pkg = write_package(tmp_path / "pkg", {"model.py": KINDS_MODEL, "run.py": KINDS_CALLER})
    found = analyze_file(str(pkg / "run.py"), ["MHA003"])
    assert _rows(found) == [(6, 12, "MHA003")]


PROCESSOR = """\
import torch
import torch.nn as nn


class MathProcessor:
    def __call__(self, attn, hidden_states, attention_mask=None):
        q = attn.to_q(hidden_states)
        k = attn.to_k(hidden_states)
        scores = torch.bmm(q, k.transpose(1, 2)) * attn.scale
        if attention_mask is not None:
            keep = attention_mask.repeat_interleave(attn.heads, dim=0)[:, None, :]
            scores = scores * keep.to(scores.dtype)
        return torch.bmm(scores.softmax(dim=-1), hidden_states)


class Attention(nn.Module):
    def __init__(self, dim, heads=1):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.scale = dim**-0.5
        self.heads = heads
        self.processor = MathProcessor()

    def forward(self, hidden_states, attention_mask=None):
        return self.processor(self, hidden_states, attention_mask=attention_mask)
"""

BLOCK = """\
import torch.nn as nn

from .proc import Attention


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention(16)

    def forward(self, h, ids):
        keep = ids != 0
        return self.attn(h, attention_mask=keep)
"""


def test_a_mask_repeated_per_head_in_a_processor_is_still_the_callers_mask(tmp_path):
    # probe AO's AO06: diffusers' ``repeat_interleave(heads, dim=0)`` before the product
    pkg = write_package(tmp_path / "pkg", {"proc.py": PROCESSOR, "block.py": BLOCK})
    found = analyze_file(str(pkg / "block.py"), ["MHA012"])
    assert _rows(found) == [(13, 16, "MHA012")]
    # repeated along another axis it is not read (the rows no longer the samples')
    other = PROCESSOR.replace("repeat_interleave(attn.heads, dim=0)", "repeat_interleave(2, dim=1)")
    pkg = write_package(tmp_path / "b" / "pkg", {"proc.py": other, "block.py": BLOCK})
    assert analyze_file(str(pkg / "block.py"), ["MHA012"]) == []
