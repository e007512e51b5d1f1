"""A wrapper that reshapes its mask parameter before SDPA (``if mask is not
None: mask = mask[:, None, None, :]``, ``attn_mask = attn_mask.unsqueeze(1)``,
``pad = ~pad.bool()[...]``) is a wrapper of that parameter, through the step
it applies (``summaries._rebinds``): the caller's wrong mask is reported at
the call, per file and over the package, and the right one is not.  A
rebinding the summary cannot describe leaves the parameter unread."""
from __future__ import annotations

import textwrap

from fixture_expect import flake8_run
from flake8_mha.analysis.program.summaries import summarise

PACKAGE = "fixtures/program_calls/rebound"
WANT = [(14, 13, "MHA002"), (16, 13, "MHA002"), (19, 13, "MHA002")]


def test_over_the_package_and_one_file_at_a_time():
    status, found = flake8_run(PACKAGE, select="MHA")
    assert (status, sorted((f.path.rsplit("/", 1)[1], f.line, f.col, f.code) for f in found)) == (
        1, [("model.py",) + w for w in WANT])
    status, found = flake8_run(f"{PACKAGE}/model.py", select="MHA")
    assert (status, sorted((f.line, f.col, f.code) for f in found)) == (1, WANT)
    for name in ("ops.py", "blocks.py", "__init__.py"):
        assert flake8_run(f"{PACKAGE}/{name}", select="MHA") == (0, [])


def _reach(body: str):
    source = "import torch.nn.functional as F\n\n\n" + textwrap.dedent(body)
    return summarise(source).get("attend", {}).get("reach", {}).get("attn_mask")


def test_what_rebinding_is_read_and_what_is_not():
    call = "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"
    head = "def attend(q, k, v, mask=None):\n"
    assert _reach(head + "    if mask is not None:\n        mask = ~mask[:, None]\n" + call) == {
        "param": "mask", "ops": [["index", ":, None"], ["invert"]]}
    assert _reach(head + "    mask = mask.unsqueeze(1)\n" + call) == {
        "param": "mask", "ops": [["unsqueeze", 1]]}
    # made numbers: a step the rules know (a caller's bool mask arrives as 0/1 floats)
    assert _reach(head + "    mask = mask.float()\n" + call) == {
        "param": "mask", "ops": [["cast", "float"]]}
    for unread in (
        "    mask = mask.softmax(-1)\n",  # a step the rules do not know
        "    mask = mask[:, None]\n    mask = ~mask\n",  # twice
        "    if flag:\n        mask = ~mask\n",  # on one branch of another test
        "    for _ in range(2):\n        mask = mask[:, None]\n",  # in a loop
        "    if mask is not None:\n        mask = other[:, None]\n",  # another value
    ):
        assert _reach(head.replace("mask=None", "mask=None, flag=False, other=None")
                      + unread + call) is None, unread
