"""The runtime confirmer's witnesses and worker, through the real runner.

Every witness runs in the worker subprocess exactly as ``flake8-mha confirm``
runs it; findings are built by hand, so these tests do not depend on the
analyzer. Magnitudes asserted here are the seed articles' numbers, measured
again on torch 2.13 CPU (TORCH_FACTS.md).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

from flake8_mha.core.findings import Finding

# The witnesses run in a worker process: no need to import torch here.
if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed (pip install 'flake8-mha[confirm]')",
                allow_module_level=True)

from flake8_mha.confirm.runner import (  # noqa: E402
    CRASHED, ERROR, TIMEOUT, Runner, TorchUnavailable,
)
from flake8_mha.confirm.witnesses import (  # noqa: E402
    CONFIRMED, CONFIRMED_ASSUMED, INCONCLUSIVE, NOT_REPRODUCED, SKIPPED, WITNESSES,
)
from flake8_mha.confirm.worker import TEST_FAULTS_ENV  # noqa: E402

NEED_MASK = ("RuntimeError: Need attn_mask if specifying the is_causal hint. You may use the "
             "Transformer module method `generate_square_subsequent_mask` to create this mask.")
EXPLICIT_MASK = ("RuntimeError: _scaled_dot_product_attention: Explicit attn_mask should not "
                 "be set when is_causal=True")

# The facts construction_evidence gives for nn.MultiheadAttention(..., batch_first=True).
MHA_FACTS = {"batch_first": True, "bias": True, "add_bias_kv": False, "add_zero_attn": False,
             "kdim": None, "vdim": None, "dropout": 0.0}
PAD_MASK = {"meaning": "keep", "kind": "bool", "shape": "broadcast", "origin": "padding",
            "by_name": False}
TRIANGLE = {"meaning": "keep", "kind": "bool", "shape": "square", "origin": "causal_triangle",
            "by_name": False}

# name -> (code, evidence)
CASES = {
    "mha001_mha": ("MHA001", {"module": "MultiheadAttention", "embed_dim": 64, "num_heads": 8}),
    "mha001_enc_layer": ("MHA001", {"module": "TransformerEncoderLayer", "embed_dim": 64,
                                    "num_heads": 8}),
    "mha001_dec_layer": ("MHA001", {"module": "TransformerDecoderLayer"}),
    "mha001_encoder": ("MHA001", {"module": "TransformerEncoder"}),
    "mha001_transformer": ("MHA001", {"module": "Transformer", "embed_dim": 32, "num_heads": 4}),
    "mha001_unknown": ("MHA001", {}),
    "mha902": ("MHA902", {"module": "MultiheadAttention", "embed_dim": 64, "num_heads": 8,
                          "batch_first": False}),
    "mha002_padding": ("MHA002", {"sink": "attn_mask", "module": "scaled_dot_product_attention",
                                  "mask": {"meaning": "ignore", "kind": "bool",
                                           "shape": "padding", "source": "x == pad_id"}}),
    "mha002_causal": ("MHA002", {"sink": "attn_mask",
                                 "mask": {"meaning": "ignore", "kind": "bool",
                                          "shape": "square", "source": "triu(..., 1).bool()"}}),
    "mha002_where": ("MHA002", {"sink": "where", "module": "where",
                                "call": "torch.where(mask, x, -inf)",
                                "mask": {"meaning": "ignore", "shape": "padding"}}),
    "mha003_where": ("MHA003", {"sink": "where", "module": "where",
                                "call": "torch.where(mask, -inf, x)",
                                "mask": {"meaning": "keep", "shape": "padding"}}),
    "mha003_kpm": ("MHA003", {"sink": "key_padding_mask", "module": "MultiheadAttention",
                              "mask": {"meaning": "keep", "kind": "bool", "shape": "padding",
                                       "source": "attention_mask.bool()"}}),
    "mha003_src_kpm": ("MHA003", {"sink": "src_key_padding_mask",
                                  "mask": {"meaning": "keep", "shape": "padding"}}),
    "mha003_tril": ("MHA003", {"sink": "attn_mask", "mask": {"meaning": "keep",
                                                             "shape": "square"}}),
    "mha003_fill": ("MHA003", {"sink": "masked_fill", "mask": {"meaning": "keep",
                                                               "shape": "padding"}}),
    "mha004_float_kpm": ("MHA004", {"sink": "key_padding_mask",
                                    "mask": {"kind": "float01", "shape": "padding",
                                             "dtype": "float32"}}),
    "mha004_float_triu": ("MHA004", {"sink": "attn_mask", "mask": {"kind": "float01",
                                                                   "shape": "square"}}),
    "mha004_int_kpm": ("MHA004", {"sink": "key_padding_mask",
                                  "mask": {"kind": "int", "shape": "padding", "dtype": "int64"}}),
    "mha004_uint8_attn": ("MHA004", {"sink": "attn_mask", "mask": {"kind": "int",
                                                                   "shape": "square",
                                                                   "dtype": "uint8"}}),
    "mha004_double_kpm": ("MHA004", {"sink": "key_padding_mask",
                                     "mask": {"kind": "float01", "shape": "padding",
                                              "dtype": "float64"}}),
    "mha004_sdpa_int": ("MHA004", {"sink": "attn_mask", "module": "scaled_dot_product_attention",
                                   "mask": {"kind": "int", "shape": "padding"}}),
    "mha004_sdpa_float": ("MHA004", {"sink": "attn_mask",
                                     "module": "scaled_dot_product_attention",
                                     "mask": {"kind": "float01", "shape": "padding"}}),
    "mha004_enc_float": ("MHA004", {"sink": "src_key_padding_mask",
                                    "module": "TransformerEncoderLayer",
                                    "mask": {"kind": "float01", "shape": "padding"}}),
    "mha005_mha": ("MHA005", {"module": "MultiheadAttention", "flag": "is_causal",
                              "mask_arg": "attn_mask", "embed_dim": 64, "num_heads": 8,
                              "batch_first": True}),
    "mha005_dec_tgt": ("MHA005", {"module": "TransformerDecoderLayer", "flag": "tgt_is_causal",
                                  "mask_arg": "tgt_mask"}),
    "mha005_memory": ("MHA005", {"module": "TransformerDecoderLayer",
                                 "flag": "memory_is_causal", "mask_arg": "memory_mask"}),
    "mha006": ("MHA006", {"module": "scaled_dot_product_attention", "dropout_p": 0.1,
                          "is_causal": True, "mask": PAD_MASK}),
    "mha006_pad_zero_p": ("MHA006", {"dropout_p": 0.0, "is_causal": True, "mask": PAD_MASK}),
    "mha006_unknown_p": ("MHA006", {"dropout_p": None}),
    "mha006_triangle": ("MHA006", {"dropout_p": 0.0, "is_causal": True, "mask": TRIANGLE}),
    "mha006_triangle_unknown_p": ("MHA006", {"dropout_p": None, "is_causal": True,
                                             "mask": TRIANGLE}),
    "mha007": ("MHA007", {"dropout_p": 0.1, "dropout_is_module": False}),
    "mha007_unknown_p": ("MHA007", {}),
    "mha007_zero": ("MHA007", {"dropout_p": 0.0}),
    "mha007_module": ("MHA007", {"module": "scaled_dot_product_attention", "dropout_p": None,
                                 "dropout_is_module": True}),
    "mha008_divide": ("MHA008", {"module": "MultiheadAttention", "embed_dim": 10,
                                 "num_heads": 3}),
    "mha008_zero": ("MHA008", {"module": "Transformer", "embed_dim": 10, "num_heads": 0}),
    "mha008_encoder": ("MHA008", {"module": "TransformerEncoder", "embed_dim": 100,
                                  "num_heads": 8}),
    "mha008_fine": ("MHA008", {"embed_dim": 12, "num_heads": 3}),
    "mha008_unknown": ("MHA008", {"embed_dim": None, "num_heads": 3}),
    "mha009": ("MHA009", {"sink": "attn_mask", "mask": {"meaning": "keep", "shape": "padding"}}),
    "mha009_additive": ("MHA009", {"sink": "attn_mask",
                                   "mask": {"meaning": "additive", "kind": "additive",
                                            "shape": "padding"}}),
    "mha101": ("MHA101", {"module": "MultiheadAttention", "embed_dim": 112, "num_heads": 7,
                          **MHA_FACTS}),
    "mha101_seq_first": ("MHA101", {"module": "MultiheadAttention", "embed_dim": 96,
                                    "num_heads": 3, **dict(MHA_FACTS, batch_first=False)}),
    "mha101_no_bias": ("MHA101", {"module": "MultiheadAttention", "embed_dim": 96,
                                  "num_heads": 3, **dict(MHA_FACTS, bias=False)}),
    "mha101_layer": ("MHA101", {"module": "TransformerEncoderLayer", "num_heads": 3}),
    "mha102": ("MHA102", {"module": "MultiheadAttention", "embed_dim": 256, "num_heads": 8}),
    "mha901_bias": ("MHA901", {"module": "MultiheadAttention", "blockers": ["bias=False"]}),
    "mha901_seq_first": ("MHA901", {"module": "MultiheadAttention", "blockers": ["bias=False"],
                                    "batch_first": False}),
    "mha901_kv": ("MHA901", {"blockers": ["add_bias_kv=True", "kdim=32", "vdim=32"]}),
    "no_witness": ("MHA011", {}),
    # The fault hook is inert without its environment variable.
    "fault_key_inert": ("MHA008", {"embed_dim": 10, "num_heads": 6, "_test_fault": "exit"}),
    # The same evidence twice: the witness runs once.
    "twin_1": ("MHA008", {"embed_dim": 30, "num_heads": 4}),
    "twin_2": ("MHA008", {"embed_dim": 30, "num_heads": 4}),
}


@pytest.fixture(scope="module")
def outcomes():
    """Every case through one worker, as one confirm run does it."""
    names = list(CASES)
    findings = [Finding(code, i + 1, 1, "m", "cases.py", evidence)
                for i, (code, evidence) in enumerate(CASES[n] for n in names)]
    env = {k: v for k, v in os.environ.items() if k != TEST_FAULTS_ENV}
    runner = Runner(timeout=60, env=env)
    try:
        runner.ready()
        results = runner.run(findings)
    finally:
        runner.close()
    return dict(zip(names, results))


def test_every_case_ran_without_worker_faults(outcomes):
    assert {o.verdict for o in outcomes.values()} <= {
        CONFIRMED, CONFIRMED_ASSUMED, NOT_REPRODUCED, INCONCLUSIVE, SKIPPED}, {
        n: (o.verdict, o.reason) for n, o in outcomes.items()}


# ---------------------------------------------------------------- MHA001/902

def test_mha001_reproduces_the_seed_leak(outcomes):
    o = outcomes["mha001_mha"]
    # the evidence has no layout_kind: the damage rests on the assumed (N, L, E) layout
    assert o.verdict == CONFIRMED_ASSUMED
    assert o.depends_on == o.assumed
    assert o.measured["leak"] == pytest.approx(4.804e-01, abs=5e-4)
    assert o.measured["leak_batch_first_true"] == 0.0
    assert o.measured["weights_shape"] == [10, 4, 4]
    assert o.measured["weights_shape_batch_first_true"] == [4, 10, 10]
    assert "4.804e-01" in o.damage
    # every parameter came from the evidence; the data's layout did not (the
    # evidence has no layout_kind), so the witness says what it assumed
    assert o.assumed == ["layout of the data unknown (the code does not say it): assumed (N, L, E)"]


@pytest.mark.parametrize("name", ["mha001_enc_layer", "mha001_dec_layer", "mha001_encoder",
                                  "mha001_transformer", "mha001_unknown", "mha902"])
def test_batch_first_leak_for_every_module_kind(outcomes, name):
    o = outcomes[name]
    assert o.verdict == CONFIRMED_ASSUMED  # the data's layout is not in the evidence
    assert o.measured["leak"] > 0.1  # TORCH_FACTS item 1: 0.4-0.9 depending on the kind
    assert o.measured["leak_batch_first_true"] == 0.0


def test_unknown_parameters_are_said_in_the_witness_text(outcomes):
    o = outcomes["mha001_unknown"]
    assert any("embed_dim" in a and "64" in a for a in o.assumed)
    assert any("module unknown" in a for a in o.assumed)
    assert "nn.MultiheadAttention(64, 8" in o.witness


def test_mha902_is_the_mha001_experiment(outcomes):
    assert outcomes["mha902"].measured["leak"] == pytest.approx(4.804e-01, abs=5e-4)


# ---------------------------------------------------------------- masks

def test_mha002_padding_mask_to_sdpa_is_off_by_the_seed_amount(outcomes):
    o = outcomes["mha002_padding"]
    assert o.verdict == CONFIRMED
    assert o.measured["max_error"] == pytest.approx(1.35, abs=0.01)
    assert o.measured["max_error_inverted"] < 1e-5
    assert o.measured["nan"] is False  # SDPA gives zeros for fully masked rows
    assert "no NaN" in o.damage


def test_mha002_causal_triu_to_sdpa(outcomes):
    o = outcomes["mha002_causal"]
    assert o.verdict == CONFIRMED
    assert o.measured["max_error"] > 0.5
    assert o.measured["max_error_inverted"] < 1e-5
    assert "triu" in o.witness


def test_mha002_ignore_mask_to_torch_where_nans_the_unpadded_sample(outcomes):
    o = outcomes["mha002_where"]
    assert o.verdict == CONFIRMED
    assert o.measured["max_error"] == pytest.approx(1.35, abs=0.01)
    assert o.measured["nan"] is True  # unlike SDPA, softmax over all -inf is NaN
    assert "torch.where(mask, scores, -inf)" in o.witness


def test_mha003_keep_mask_as_key_padding_mask(outcomes):
    o = outcomes["mha003_kpm"]
    assert o.verdict == CONFIRMED
    assert o.measured["max_error"] == pytest.approx(1.35, abs=0.01)
    assert o.measured["nan_samples"] == [1]  # the sample without padding is all NaN
    assert "NaN" in o.damage


@pytest.mark.parametrize("name", ["mha003_src_kpm", "mha003_fill", "mha003_where"])
def test_mha003_other_ignore_sinks_nan_the_unpadded_sample(outcomes, name):
    o = outcomes[name]
    assert o.verdict == CONFIRMED
    assert o.measured["nan_samples"] == [1]


def test_mha003_src_key_padding_mask_runs_the_encoder_layer(outcomes):
    assert "nn.TransformerEncoderLayer" in outcomes["mha003_src_kpm"].witness
    assert "masked_fill" in outcomes["mha003_fill"].witness


def test_mha003_tril_as_attn_mask(outcomes):
    o = outcomes["mha003_tril"]
    assert o.verdict == CONFIRMED
    assert o.measured["max_error"] > 0.5
    assert o.measured["nan_rows"] >= 1  # the last query row has every key masked


@pytest.mark.parametrize("name", ["mha004_float_kpm", "mha004_float_triu", "mha004_sdpa_float"])
def test_mha004_float_masks_are_added_not_applied(outcomes, name):
    o = outcomes[name]
    assert o.verdict == CONFIRMED
    assert o.measured["max_error"] > 0.1
    assert "exception" not in o.measured


@pytest.mark.parametrize("name, message", [
    ("mha004_int_kpm",
     "AssertionError: only bool and floating types of key_padding_mask are supported"),
    ("mha004_uint8_attn",
     "AssertionError: only bool and floating types of attn_mask are supported"),
    ("mha004_double_kpm",
     "RuntimeError: Input dtypes must be the same, got: input double, batch1: float, "
     "batch2: float"),
    ("mha004_sdpa_int",
     "RuntimeError: Expected attn_mask dtype to be bool or float or to match query dtype, but "
     "got attn_mask.dtype: long int and  query.dtype: float instead."),
])
def test_mha004_exact_exceptions(outcomes, name, message):
    o = outcomes[name]
    assert o.verdict == CONFIRMED
    assert o.measured["exception"] == message
    assert message in o.damage


def test_mha004_encoder_layer_float_mask_differs_between_train_and_eval(outcomes):
    # TORCH_FACTS item 9: the fastpath reads a float mask as bool, the slow path adds it.
    m = outcomes["mha004_enc_float"].measured
    assert m["max_error (training mode)"] > 0.1
    assert m["max_error (eval + no_grad)"] < 1e-5


@pytest.mark.parametrize("name", ["mha009", "mha009_additive"])
def test_mha009_silent_when_l_equals_n_and_a_shape_error_otherwise(outcomes, name):
    o = outcomes[name]
    assert o.verdict == CONFIRMED
    assert o.measured["max_error_L_equals_N"] > 0.5
    assert o.measured["exception_L_not_N"] == (
        "RuntimeError: The size of tensor a (3) must match the size of tensor b (2) at "
        "non-singleton dimension 2")


# ---------------------------------------------------------------- causal

def test_mha005_raises_in_training_and_is_silently_non_causal_on_the_fastpath(outcomes):
    o = outcomes["mha005_mha"]
    assert o.verdict == CONFIRMED
    assert o.measured["exception_training"] == NEED_MASK
    assert o.measured["exception_eval"] is None
    assert o.measured["max_error_eval"] > 0.5
    assert o.measured["diff_from_non_causal"] == 0.0  # exactly the non-causal output


def test_mha005_decoder_tgt_is_causal(outcomes):
    o = outcomes["mha005_dec_tgt"]
    assert o.verdict == CONFIRMED
    assert o.measured["exception_training"] == NEED_MASK
    assert o.measured["max_error_eval"] > 0.5


def test_mha005_memory_is_causal_raises_in_eval_too(outcomes):
    o = outcomes["mha005_memory"]
    assert o.verdict == CONFIRMED
    assert o.measured["exception_eval"] == NEED_MASK


def test_mha006_padding_with_dropout_raises_on_torchs_own_kernel(outcomes):
    o = outcomes["mha006"]
    assert o.verdict == CONFIRMED and o.depends_on == []
    assert o.measured["default, dropout_p=0.1"] == EXPLICIT_MASK
    assert o.measured["math, dropout_p=0.1"] == EXPLICIT_MASK
    assert o.measured["kernels"] == ["default", "flash_attention", "math"]


def test_mha006_padding_without_dropout_double_masks_silently(outcomes):
    o = outcomes["mha006_pad_zero_p"]
    assert o.verdict == CONFIRMED
    assert o.measured["default, dropout_p=0"] == "ran"
    assert "default, dropout_p=0: ran, 2.834e+00 from the mask alone (both masks applied)" \
        in o.damage
    assert o.measured["math, dropout_p=0"] == EXPLICIT_MASK  # each kernel reported


def test_mha006_causal_triangle_cannot_double_mask(outcomes):
    o = outcomes["mha006_triangle"]
    assert o.verdict == NOT_REPRODUCED
    assert "default, dropout_p=0: ran, 0.000e+00 from the mask alone" in o.damage
    assert o.measured["math, dropout_p=0"] == EXPLICIT_MASK  # reported, not judged


def test_mha006_unknown_facts_give_confirmed_with_assumptions(outcomes):
    o = outcomes["mha006_unknown_p"]
    assert o.verdict == CONFIRMED_ASSUMED
    assert o.depends_on == ["mask origin unknown: used a (N, 1, 1, S) padding mask "
                            "(True = attend)", "is_causal may be True on this path: used True"]
    t = outcomes["mha006_triangle_unknown_p"]
    assert t.verdict == CONFIRMED_ASSUMED  # raises only with dropout, which is unknown
    assert t.depends_on == ["the damage shows only with dropout_p=0.1, and dropout_p is unknown"]


def test_mha006_says_which_dropout_it_assumed(outcomes):
    assert any("dropout_p" in a for a in outcomes["mha006_unknown_p"].assumed)
    assert not any("dropout_p" in a for a in outcomes["mha006"].assumed)


# ---------------------------------------------------------------- dropout, heads

@pytest.mark.parametrize("name, verdict", [("mha007", CONFIRMED),
                                           ("mha007_unknown_p", CONFIRMED_ASSUMED)])
def test_mha007_two_eval_calls_differ(outcomes, name, verdict):
    o = outcomes[name]
    assert o.verdict == verdict
    assert o.measured["max_diff"] == pytest.approx(1.5, abs=0.5)
    assert o.measured["dropout_p"] == 0.1


def test_mha007_dropout_module_as_dropout_p_raises(outcomes):
    o = outcomes["mha007_module"]
    assert o.verdict == CONFIRMED
    assert o.measured["exception"] == (
        "TypeError: scaled_dot_product_attention(): argument 'dropout_p' must be float, "
        "not Dropout")
    assert o.measured["max_diff"] > 0.5  # and its .p, ungated, still fires in eval


def test_mha007_with_zero_dropout_is_honestly_not_reproduced(outcomes):
    o = outcomes["mha007_zero"]
    assert o.verdict == NOT_REPRODUCED
    assert o.measured["max_diff"] == 0.0


@pytest.mark.parametrize("name, message", [
    ("mha008_divide", "AssertionError: embed_dim must be divisible by num_heads"),
    ("mha008_encoder", "AssertionError: embed_dim must be divisible by num_heads"),
    ("mha008_zero", "ValueError: embed_dim and num_heads must be greater than 0, got "
                    "embed_dim=10 and num_heads=0 instead"),
])
def test_mha008_exact_exception(outcomes, name, message):
    o = outcomes[name]
    assert o.verdict == CONFIRMED
    assert o.measured["exception"] == message


def test_mha008_values_that_divide_are_not_reproduced(outcomes):
    assert outcomes["mha008_fine"].verdict == NOT_REPRODUCED


def test_mha008_unknown_values_are_skipped_with_a_reason(outcomes):
    o = outcomes["mha008_unknown"]
    assert o.verdict == SKIPPED
    assert "no safe default" in o.reason


# ---------------------------------------------------------------- performance

def test_mha101_shows_the_kernels_and_a_time_ratio(outcomes):
    o = outcomes["mha101"]
    assert o.verdict == CONFIRMED  # the profiler, not the time, decides; no fact assumed
    m = o.measured
    assert m["path_odd_default_call"].startswith("math path")
    assert m["path_even_default_call"] == "fastpath (aten::_native_multi_head_attention)"
    assert m["path_odd_need_weights_False"].startswith("SDPA path")
    assert 0 < m["ratio_low_default_call"] <= m["ratio_default_call"] \
        <= m["ratio_high_default_call"]
    assert m["time_need_weights_False"] in ("slower", "faster", "no clear difference")
    assert "7 heads" in o.damage and "8 heads" in o.damage


@pytest.mark.parametrize("name, setting", [("mha101_seq_first", "batch_first=False"),
                                           ("mha101_no_bias", "bias=False")])
def test_mha101_is_moot_when_a_stated_setting_keeps_the_fastpath_off(outcomes, name, setting):
    o = outcomes[name]
    assert o.verdict == NOT_REPRODUCED
    assert o.measured["settings_off"] == [setting]
    assert not o.measured["path_even_default_call"].startswith("fastpath")
    assert o.damage.startswith(f"moot: {setting} keeps the fastpath off")


def test_mha101_encoder_layer_fastpath_kernel(outcomes):
    o = outcomes["mha101_layer"]
    assert o.verdict == CONFIRMED_ASSUMED  # batch_first and bias not in the evidence
    assert o.depends_on == ["batch_first unknown: used True", "bias unknown: used True"]
    assert o.measured["path_even_default_call"] == (
        "fastpath (aten::_transformer_encoder_layer_fwd)")


def test_mha102_reports_a_ratio_with_its_spread(outcomes):
    o = outcomes["mha102"]
    # a time: its value is not asserted, but a length is always assumed
    assert o.verdict in (CONFIRMED_ASSUMED, NOT_REPRODUCED, INCONCLUSIVE)
    m = o.measured
    assert 0 < m["ratio_low"] <= m["ratio"] <= m["ratio_high"]
    if o.verdict == CONFIRMED_ASSUMED:
        assert m["ratio_low"] >= m["threshold"]
        assert any(a.startswith("sequence length unknown") for a in o.depends_on)
    assert m["path_need_weights_true"].startswith("math path")
    assert m["path_need_weights_false"].startswith("SDPA path")


@pytest.mark.parametrize("name", ["mha901_bias", "mha901_kv"])
def test_mha901_blockers_leave_the_fastpath(outcomes, name):
    o = outcomes[name]
    assert o.verdict == CONFIRMED_ASSUMED  # batch_first not in the evidence
    assert o.depends_on == ["batch_first unknown: used True (the fastpath needs it)"]
    assert not o.measured["path_blocked"].startswith("fastpath")
    assert o.measured["path_plain"].startswith("fastpath")
    assert o.measured["ratio"] > 0


def test_mha901_is_moot_on_a_sequence_first_module(outcomes):
    o = outcomes["mha901_seq_first"]
    assert o.verdict == NOT_REPRODUCED
    assert o.damage.startswith("moot: batch_first=False keeps the fastpath off")


def test_code_without_witness_is_skipped(outcomes):
    o = outcomes["no_witness"]
    assert o.verdict == SKIPPED
    assert o.reason == "no witness for MHA011"


# ---------------------------------------------------------------- faults

@pytest.fixture(scope="module")
def fault_outcomes():
    """Faulty test-only witnesses between real ones, with a short budget."""
    ok = {"module": "MultiheadAttention", "embed_dim": 10, "num_heads": 3}
    plan = [
        ("raise", "MHA008", {"_test_fault": "raise"}),
        ("after_raise", "MHA008", ok),
        ("hang", "MHA008", {"_test_fault": "hang", "n": 1}),
        ("after_hang", "MHA008", dict(ok, n=2)),
        ("exit", "MHA008", {"_test_fault": "exit"}),
        ("after_exit", "MHA001", {"embed_dim": 64, "num_heads": 8}),
        ("segfault", "MHA008", {"_test_fault": "segfault"}),
        ("after_segfault", "MHA008", dict(ok, n=3)),
    ]
    findings = [Finding(code, i + 1, 1, "m", "faults.py", ev)
                for i, (_, code, ev) in enumerate(plan)]
    env = dict(os.environ, **{TEST_FAULTS_ENV: "1"})
    runner = Runner(timeout=2, env=env)
    try:
        results = runner.run(findings)
    finally:
        runner.close()
    return {name: o for (name, _, _), o in zip(plan, results)}


def test_a_witness_that_raises_is_an_error_and_the_worker_goes_on(fault_outcomes):
    o = fault_outcomes["raise"]
    assert o.verdict == ERROR
    assert "RuntimeError: injected fault" in o.reason
    assert fault_outcomes["after_raise"].verdict == CONFIRMED


def test_a_witness_that_hangs_is_a_timeout_and_the_run_continues(fault_outcomes):
    o = fault_outcomes["hang"]
    assert o.verdict == TIMEOUT
    assert "no answer within 2 s" in o.reason
    assert fault_outcomes["after_hang"].verdict == CONFIRMED


def test_a_witness_that_exits_is_a_crash_and_a_fresh_worker_runs_the_rest(fault_outcomes):
    o = fault_outcomes["exit"]
    assert o.verdict == CRASHED
    assert "exit status 17" in o.reason
    after = fault_outcomes["after_exit"]
    assert after.verdict == CONFIRMED_ASSUMED  # an MHA001 finding whose layout is assumed
    assert after.measured["leak"] == pytest.approx(4.804e-01, abs=5e-4)


def test_a_segfault_is_a_crash(fault_outcomes):
    o = fault_outcomes["segfault"]
    assert o.verdict == CRASHED
    assert "SIGSEGV" in o.reason
    assert fault_outcomes["after_segfault"].verdict == CONFIRMED


def test_the_fault_hook_is_inert_without_its_environment_variable(outcomes):
    assert outcomes["fault_key_inert"].verdict == CONFIRMED


def test_identical_evidence_runs_once(outcomes):
    first, second = outcomes["twin_1"], outcomes["twin_2"]
    assert first.verdict == second.verdict == CONFIRMED
    assert second.finding.line == first.finding.line + 1
    assert second.seconds == 0.0 and second.measured == first.measured


def test_time_budget_skips_the_rest():
    runner = Runner(timeout=30, budget=1e-9)
    try:
        (o,) = runner.run([Finding("MHA008", 1, 1, "m", "a.py",
                                   {"embed_dim": 10, "num_heads": 3})])
    finally:
        runner.close()
    assert o.verdict == SKIPPED
    assert "time budget" in o.reason


# ---------------------------------------------------------------- torch missing

@pytest.fixture()
def no_torch_env(tmp_path):
    """An environment in which ``import torch`` fails."""
    fake = tmp_path / "no_torch"
    fake.mkdir()
    (fake / "torch.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(fake), env.get("PYTHONPATH")) if p)
    return env


def test_worker_without_torch_says_so_in_its_handshake(no_torch_env):
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.confirm.worker"], input="",
                          capture_output=True, text=True, env=no_torch_env, timeout=60)
    assert proc.returncode == 3
    hello = json.loads(proc.stdout.splitlines()[0])
    assert hello == {"ready": False, "error": "torch-unavailable",
                     "detail": "ImportError: No module named 'torch'"}


def test_runner_without_torch_raises_torch_unavailable(no_torch_env):
    runner = Runner(env=no_torch_env)
    with pytest.raises(TorchUnavailable, match="No module named 'torch'"):
        runner.ready()
    runner.close()


# ---------------------------------------------------------------- registry

def test_registry_covers_every_code_and_imports_no_torch():
    script = textwrap.dedent("""
        import json, sys
        from flake8_mha.confirm.witnesses import WITNESSES
        print(json.dumps({"torch": "torch" in sys.modules,
                          "codes": sorted(WITNESSES),
                          "items": [[w.code, w.summary, w.threshold_text, callable(w.run)]
                                    for w in WITNESSES.values()]}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    data = json.loads(proc.stdout)
    assert data["torch"] is False
    assert data["codes"] == ["MHA001", "MHA002", "MHA003", "MHA004", "MHA005", "MHA006",
                             "MHA007", "MHA008", "MHA009", "MHA010", "MHA012", "MHA013",
                             "MHA014", "MHA015", "MHA016", "MHA101", "MHA102", "MHA901",
                             "MHA902", "MHA903", "MHA904"]
    for code, summary, threshold_text, runnable in data["items"]:
        assert runnable
        assert summary and "\n" not in summary, code
        assert "CONFIRMED" in threshold_text and "torch 2.13" in threshold_text, code


def test_witness_keys_match_the_registry():
    assert all(code == w.code for code, w in WITNESSES.items())
