"""Issue 7, generated code: programs from hypothesmith and byte mutations of the
fixtures.  The engine never raises (but SourceSyntaxError), and on a file
Python parses it finds the same with and without the text pre-filter.

Bounded and deterministic (``derandomize=True``): a few hundred examples,
well under a minute.
"""
from __future__ import annotations

import ast
import random
import warnings

import pytest

from fixture_expect import fixture_files
from flake8_mha.lint.engine import SourceSyntaxError, analyze_source, decode_source, select_codes

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ALL_CODES = select_codes(["MHA"])
SETTINGS = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

# appended to generated programs so that the rules, not only the pass, meet them
ATTENTION = (
    "\nimport torch\nimport torch.nn.functional as F\n"
    "attn = torch.nn.MultiheadAttention(10, 3)\n"
    "def f(q, k, v, m):\n"
    "    m = m.float()\n"
    "    out, w = attn(q, k, v, key_padding_mask=m)\n"
    "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True,\n"
    "                                          dropout_p=0.1)\n"
)


def python_parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def check(source: str) -> None:
    """The properties every input must have."""
    try:
        with_filter = analyze_source(source, "gen.py", ALL_CODES)
    except SourceSyntaxError:
        assert not python_parses(source), "a program Python parses was called a syntax error"
        return
    try:
        without = analyze_source(source, "gen.py", ALL_CODES, use_prefilter=False)
    except SourceSyntaxError:
        assert not python_parses(source)
        return
    crashes = [f for f in with_filter + without if "internal error" in f.message]
    assert not crashes, crashes[0].message
    if python_parses(source):
        assert with_filter == without, (with_filter, without)


@SETTINGS
@given(hypothesmith.from_grammar())
def test_programs_from_the_grammar(source):
    check(source)


@SETTINGS
@given(hypothesmith.from_node())
@example("class A:\n pass\nclass A:\n\x0c pass\n")  # a form feed in an indent (CI found it)
def test_programs_from_libcst_nodes(source):
    check(source)


@SETTINGS
@given(hypothesmith.from_grammar())
def test_generated_code_next_to_attention_code(source):
    check(source + ATTENTION)
    check(ATTENTION + "\n" + source)


def _mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not out:
            out += bytes([rng.randrange(256)])
            continue
        i = rng.randrange(len(out))
        op = rng.randrange(5)
        if op == 0:
            out[i] = rng.randrange(256)  # any byte, including invalid UTF-8 and NUL
        elif op == 1:
            del out[i:i + rng.randint(1, 40)]
        elif op == 2:
            punct = b"()[]{}:,.=\n\t\r\\'\"#@ "
            out[i:i] = bytes(rng.choice(punct) for _ in range(rng.randint(1, 3)))
        elif op == 3:
            j = rng.randrange(len(out))
            out[i:i] = out[j:j + rng.randint(1, 60)]  # duplicate a slice elsewhere
        else:
            out[i] = out[i] ^ 0x20  # flip case: breaks names such as MultiheadAttention
    return bytes(out)


FIXTURES = fixture_files()


@pytest.mark.skipif(not FIXTURES, reason="no fixtures yet")
@SETTINGS
@given(st.sampled_from(FIXTURES or [None]), st.integers(min_value=0, max_value=2**32))
def test_byte_mutations_of_the_fixtures(path, seed):
    data = _mutate(path.read_bytes(), random.Random(seed))
    try:
        source = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return  # analyze_file turns these into MHA000; the decoding is not the engine's
    check(source)
