"""MHA004 where a mask reaches the attention scores together with a position
bias (probe E's T5 and relative-position packages).

``fixtures/program_calls/bias_folds``: T5's attention folds its ``mask``
parameter into ``position_bias`` before adding it to the scores; an ALiBi
attention adds the bias, then its ``attention_mask``.  The callers pass a
float 0/1 mask (MHA004 at the call, per file, over the package and through
``check``) or an additive one (silent)."""

from __future__ import annotations

import textwrap

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_source

PKG = "fixtures/program_calls/bias_folds"


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(PKG, [("model.py", 15, 16, "MHA004"), ("model.py", 29, 16, "MHA004")])


def _found(body: str):
    src = textwrap.dedent(
        """\
        import torch


        def attend(q, k, v, bias, input_ids):
            keep = (input_ids != 0)[:, None, None, :].float()
            scores = q @ k.transpose(-1, -2)
        """
    ) + textwrap.indent(textwrap.dedent(body), "    ")
    src += "    return scores.softmax(-1) @ v\n"
    return [(f.code, f.line, f.col) for f in analyze_source(src, "a.py", ["MHA004"])]


def test_a_fold_in_the_function_itself():
    assert _found("b = bias + keep\nscores = scores + b\n") == [("MHA004", 8, 14)]
    assert _found("b = bias + (1 - keep) * -1e9\nscores = scores + b\n") == []
    # two 0/1 summands: which one masks is not known
    assert _found("b = keep + keep\nscores = scores + b\n") == []


def test_several_terms_added_through_a_call_keep_the_one_named_a_mask():
    src = textwrap.dedent(
        """\
        import torch


        def attend(q, k, v, bias, mask, other):
            scores = q @ k.transpose(-1, -2)
            scores = scores + bias
            scores = scores + mask
            return scores.softmax(-1) @ v


        def caller(q, k, v, bias, input_ids):
            keep = (input_ids != 0)[:, None, None, :].float()
            return attend(q, k, v, bias, keep, None)


        def two_masks(q, k, v, mask_a, mask_b):
            scores = q @ k.transpose(-1, -2)
            scores = scores + mask_a
            scores = scores + mask_b
            return scores.softmax(-1) @ v


        def caller_two(q, k, v, input_ids):
            keep = (input_ids != 0)[:, None, None, :].float()
            return two_masks(q, k, v, keep, keep)
        """
    )
    got = [(f.code, f.line, f.col) for f in analyze_source(src, "a.py", ["MHA004"])]
    # attend's mask is judged at its call; two_masks has no one mask term to
    # hand to its callers, so its terms are judged where they are added
    assert got == [("MHA004", 13, 12), ("MHA004", 18, 14), ("MHA004", 19, 14)]
