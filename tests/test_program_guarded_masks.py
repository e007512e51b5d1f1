"""Masks a block hands two attention layers of another file
(``fixtures/program_calls/guarded_masks/``, probe L's diffusion backbone):
a keep-mask multiplied into keys and values under ``if context_mask is not
None:`` (MHA015), and a 0/1 frame mask named ``valid`` multiplied into the
scores before the softmax (MHA012).  Both are judged at the call that hands
them in, each naming its own chain; a temperature multiplied in the same
way is no mask."""

from __future__ import annotations

from fixture_expect import assert_package_runs
from flake8_mha.analysis.program.summaries import summarise

PACKAGE = "fixtures/program_calls/guarded_masks"


def test_each_mask_is_judged_at_the_call_with_its_own_chain():
    found = assert_package_runs(
        PACKAGE,
        [("backbone.py", 30, 17, "MHA012"), ("backbone.py", 30, 17, "MHA015")],
        select="MHA0,MHA1",
    )
    by_code = {f.code: f.msg for f in found}
    assert by_code["MHA012"].endswith(
        "the call reaches scores * mask at fixtures/program_calls/guarded_masks/attention.py:44"
        " through Block.forward() -> FrameAttention.forward()"
    )
    assert by_code["MHA015"].endswith(
        "at fixtures/program_calls/guarded_masks/attention.py:26 through Block.forward() -> TextCrossAttention.forward()"
    )


def test_the_summaries_of_the_guarded_and_the_named_masks():
    with open(f"{PACKAGE}/attention.py", encoding="utf-8") as fh:
        table = summarise(fh.read())
    assert table["TextCrossAttention.forward"]["reach"]["kv"]["param"] == "context_mask"
    assert table["FrameAttention.forward"]["reach"]["multiplied"] == {
        "param": "valid",
        "ops": [["index", ":, None, None, :"], ["softmax"]],
    }
    # a term given unit axes is read as a mask; the caller's value decides
    assert table["ScaledFrameAttention.forward"]["reach"]["multiplied"]["param"] == "temperature"
