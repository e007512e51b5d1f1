"""Misses of probes AE and AH mended in the thirty-fifth stop, each a package
of several files run through flake8 per file, over the package and through
``check``, with the one-file forms and the look-alikes beside them."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, copied, flake8_in_project, source_rows as _rows


HOOKS = pathlib.Path("fixtures/program_calls/hook_overrides")
BATCH = pathlib.Path("fixtures/program_calls/batch_fields")


def test_a_hook_overridden_by_a_subclass_of_another_file_is_read_at_the_base_call():
    # probe AH's AH05 in its package form: ``MaskedSelfAttention.forward``
    # tiles through ``self.expand_heads(mask)`` (batch-major, right), and
    # ``ToothRelationAttention`` in tooth.py, built by model.py, overrides it
    # head-major; RootAttention's batch-major override and DraftAttention's
    # head-major one that nothing builds are silent
    found = assert_package_runs(HOOKS, [("layers.py", 18, 18, "MHA016")], select="MHA")
    assert found[0].msg.startswith(
        "`self.expand_heads(mask)` (as ToothRelationAttention overrides it at"
        " fixtures/program_calls/hook_overrides/tooth.py:8) repeats the mask head-major"
    )
    assert found[0].msg.endswith(
        "(use mask.repeat_interleave(num_heads, dim=0) in ToothRelationAttention's override)"
    )


def test_an_override_nothing_builds_never_runs(tmp_path):
    # with ToothRelationAttention no longer built, only DraftAttention tiles
    # head-major, and nothing names it outside its class statement
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(HOOKS, tmp_path)
    model = pkg / "model.py"
    model.write_text(
        model.read_text()
        .replace(
            "from .tooth import RootAttention, ToothRelationAttention",
            "from .tooth import RootAttention",
        )
        .replace("        self.teeth = ToothRelationAttention(dim, heads)\n", "")
        .replace("self.teeth(x, slot_pad) + ", "")
    )
    assert flake8_in_project(tmp_path, f"{pkg.name}/layers.py", "MHA016") == (0, [])
    # DraftAttention built in the model: its override runs
    model.write_text(
        model.read_text()
        .replace("import RootAttention", "import DraftAttention, RootAttention")
        .replace(
            "        self.roots = ",
            "        self.draft = DraftAttention(dim, heads)\n        self.roots = ",
        )
    )
    code, rows = flake8_in_project(tmp_path, f"{pkg.name}/layers.py", "MHA016")
    assert (code, rows) == (1, [[f"{pkg.name}/layers.py:18:18:", "MHA016"]])


def test_an_edit_of_the_override_in_another_file_changes_the_finding_with_the_cache_on(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(HOOKS, tmp_path)

    def run():
        return flake8_in_project(tmp_path, f"{pkg.name}/layers.py", "MHA016")

    assert run() == (1, [[f"{pkg.name}/layers.py:18:18:", "MHA016"]])
    tooth = pkg / "tooth.py"
    text = tooth.read_text()
    tooth.write_text(
        text.replace(
            "    def expand_heads(self, mask):\n        return mask.repeat(self.num_heads, 1, 1)\n\n\nclass Root",
            "    def expand_heads(self, mask):\n        return mask.repeat_interleave(self.num_heads, dim=0)\n\n\nclass Root",
        )
    )
    assert tooth.read_text() != text
    assert run() == (0, [])
    tooth.write_text(text)
    assert run() == (1, [[f"{pkg.name}/layers.py:18:18:", "MHA016"]])


def test_a_batch_field_named_as_a_padding_mask_is_one_by_its_name():
    # probe AH's AH04: ``batch.pad_mask`` of a dataclass a collate function of
    # another file builds, handed to an SDPA wrapper whose parameter says
    # nothing (``keep``); inverted on the way, or given to torch's module as
    # ``batch["padding_mask"]``, it is right
    found = assert_package_runs(BATCH, [("model.py", 15, 16, "MHA002")], select="MHA")
    assert found[0].msg.startswith(
        "mask from line 15 (batch.pad_mask) means True = ignore; scaled_dot_product_attention"
        " treats True as attend (invert it: ~mask)"
    )


def test_a_batch_entry_by_its_key_but_not_a_wrapper_s_own_kwargs(tmp_path):
    # ``batch["pad_mask"]`` of a parameter is the field's form as a dict entry;
    # ``kwargs["pad_mask"]`` is what the wrapper's callers pass (judged there);
    # a mask the code builds is read from the code
    source = (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def attend(q, k, v, lengths):\n"
        "    keep = torch.arange(k.size(2))[None, :] < lengths[:, None]\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])\n"
        "def attend_field(q, k, v, batch):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=batch['pad_mask'][:, None, None, :])\n"
        "def attend_kwargs(q, k, v, **kwargs):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=kwargs['pad_mask'])\n"
    )
    assert _rows(source, {"MHA002"}, tmp_path) == [(7, 12, "MHA002")]


def test_a_kv_expansion_overridden_in_another_file_meets_the_base_s_grouping():
    # probe AE's AE30: ``GQAttention`` groups with enable_gqa on its fused
    # path and calls ``self._expand_kv(k, v)`` (repeat_interleave, right) on
    # its fallback; ``FrameGQAttention`` of video.py, built by model.py,
    # overrides it with ``torch.cat`` copies: its two paths disagree.
    # WordGQAttention's grouping override is silent; the tiling's own file,
    # which groups nothing, is MHA904's
    found = assert_package_runs(
        "fixtures/program_calls/kv_overrides",
        [
            ("base.py", 26, 16, "MHA013"),
            ("video.py", 13, 16, "MHA904"),
            ("video.py", 13, 52, "MHA904"),
        ],
        select="MHA",
    )
    assert found[0].msg.endswith(
        "but enable_gqa on line 25 pairs it with KV head i // n_rep: the two paths give"
        " different numbers; the call tiles them in FrameGQAttention._expand_kv() at"
        " fixtures/program_calls/kv_overrides/video.py:13"
    )


def test_a_module_built_as_a_parameter_s_default_is_torch_s_when_handed_torch_s(tmp_path):
    # release review 36's miss (SAM3's encoder layer): ``self.self_attn =
    # self_attention or nn.MultiheadAttention(...)``, every construction
    # handing torch's module built right there; the container's ``assert
    # isinstance(layer, FusionLayer)`` is a type test, not the class passed
    # around. GridLayer is handed the project's own PoolMixer: silent
    found = assert_package_runs(
        "fixtures/program_calls/or_defaults", [("encoder.py", 15, 21, "MHA102")], select="MHA"
    )
    assert found[0].msg.startswith("attention weights computed and thrown away")
    # one construction hands a module of the project: the layer's is not known
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_calls/or_defaults"), tmp_path)
    build = pkg / "build.py"
    build.write_text(
        build.read_text().replace(
            "self_attention=nn.MultiheadAttention(d_model, 8, batch_first=True)",
            "self_attention=PoolMixer(d_model)",
        )
    )
    assert flake8_in_project(tmp_path, f"{pkg.name}/encoder.py", "MHA102") == (0, [])
    # left out by a construction: the default runs there
    build.write_text(build.read_text().replace("        self_attention=PoolMixer(d_model),\n", ""))
    assert flake8_in_project(tmp_path, f"{pkg.name}/encoder.py", "MHA102") == (
        1,
        [[f"{pkg.name}/encoder.py:15:21:", "MHA102"]],
    )


def test_torch_s_module_handed_under_its_full_name_is_torch_s(tmp_path):
    # ``import torch`` then ``torch.nn.MultiheadAttention(...)``: read through the
    # constructing file's imports as ``nn.MultiheadAttention`` is
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_calls/or_defaults"), tmp_path)
    build = pkg / "build.py"
    build.write_text(
        build.read_text()
        .replace("import torch.nn as nn\n", "import torch\nimport torch.nn as nn\n")
        .replace("_attention=nn.MultiheadAttention(", "_attention=torch.nn.MultiheadAttention(")
    )
    assert flake8_in_project(tmp_path, f"{pkg.name}/encoder.py", "MHA102") == (
        1,
        [[f"{pkg.name}/encoder.py:15:21:", "MHA102"]],
    )


def test_a_named_method_of_a_mask_maker_of_another_file_is_read():
    # probe AI's AI16 (MHA009) and AI19 (MHA003): ``self.masker.valid(n)`` and
    # ``self.masker.causal(T)`` of an EventMasker kept on the module, read as
    # its ``__call__`` was; shaped, or inverted on the way, they are right
    found = assert_package_runs(
        "fixtures/program_calls/masker_methods",
        [("model.py", 18, 16, "MHA009"), ("model.py", 27, 16, "MHA003")],
        select="MHA",
    )
    assert found[0].msg.startswith(
        "mask from line 17 (self.masker.valid() ->"
        " fixtures/program_calls/masker_methods/masks.py:12: steps[None, :] < n_events[:, None])"
        " is a 2-D (N, S) padding mask"
    )
    assert "masks.py:15: torch.tril(" in found[1].msg


def test_keys_masked_by_a_one_tensor_helper_of_another_file_report_at_the_caller():
    # probe AI's AI09: ``k = mask_atoms(k, pocket_mask)`` with ``mask_atoms``
    # in utils.py; the caller hands a keep-mask it builds. Reported once, at
    # the call that hands the mask (the callee's parameter name said it
    # before, at the callee); the class that also masks the scores is silent
    found = assert_package_runs(
        "fixtures/program_calls/kv_single_helpers", [("model.py", 17, 15, "MHA015")], select="MHA"
    )
    assert found[0].msg.endswith(
        "the call reaches scaled_dot_product_attention's keys and values at"
        " fixtures/program_calls/kv_single_helpers/attention.py:13 through PocketCross.forward()"
    )


def test_layout_through_a_dict_an_encoder_of_another_file_returns():
    # probe AI's AI21: a fairseq-style encoder returns ``{"encoder_out": x}``
    # with x made T x B x C; a layer built batch_first=True is fed
    # ``enc["encoder_out"]``; swapped back first, it is right
    found = assert_package_runs(
        "fixtures/program_layout/dict_outputs", [("model.py", 17, 16, "MHA010")], select="MHA"
    )
    assert found[0].msg.startswith(
        "TransformerEncoderLayer built with batch_first=True is fed sequence-first data"
        " ((L, N, C), dict_outputs/encoder.py line 13: `# B x T x C -> T x B x C`)"
    )


def test_layout_through_a_list_entry_of_a_returned_dict(tmp_path):
    # fairseq's own form: ``{"encoder_out": [x]}``, read as ``enc["encoder_out"][0]``
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_layout/dict_outputs"), tmp_path)
    encoder, model = pkg / "encoder.py", pkg / "model.py"
    encoder.write_text(encoder.read_text().replace('{"encoder_out": x,', '{"encoder_out": [x],'))
    model.write_text(model.read_text().replace('enc["encoder_out"]', 'enc["encoder_out"][0]'))
    assert flake8_in_project(tmp_path, f"{pkg.name}/model.py", "MHA010") == (
        1,
        [[f"{pkg.name}/model.py:17:16:", "MHA010"]],
    )
