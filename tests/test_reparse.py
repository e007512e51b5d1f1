"""A file linted again in the same process (an editor's long-lived flake8)
parses again only the top-level statements that changed, and summarises
again only the definitions that changed (``lint/reparse.py``,
``summaries.summarise(reuse=True)``).  What the analysis sees must be
exactly what a fresh parse and a fresh summary give: the same tree, node for
node, and the same findings at the same lines and columns."""
from __future__ import annotations

import ast
import importlib.util
import pathlib

import libcst as cst
import pytest

from fixture_expect import FIXTURES
from flake8_mha.analysis.focus import focus
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.lint import reparse
from flake8_mha.lint.engine import analyze_source

TORCH_FILES = ("nn/modules/activation.py", "nn/modules/transformer.py", "nn/functional.py")
FILES = sorted(FIXTURES.rglob("*.py"))


def _torch_file(rel: str) -> pathlib.Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:  # pragma: no cover - the test extra has it
        pytest.skip("torch is not installed")
    return pathlib.Path(spec.origin).parent / rel


def _texts():
    for p in FILES:
        yield pytest.param(p, id=str(p.relative_to(FIXTURES)))
    for rel in TORCH_FILES:
        yield pytest.param(rel, id=f"torch/{rel}")


def _read(which) -> str:
    path = which if isinstance(which, pathlib.Path) else _torch_file(which)
    return path.read_text(encoding="utf-8")


def _edited(text: str) -> str:
    """A line inserted before the first top-level class or def, and one
    more line inside the last function: both what an editor does."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, l in enumerate(lines) if l.startswith(("class ", "def "))), len(lines))
    lines.insert(at, "_edit_marker = 1\n")
    return "".join(lines)


@pytest.mark.parametrize("which", _texts())
def test_the_chunks_put_together_are_the_tree_of_the_whole(which):
    text = _read(which)
    tree = ast.parse(text)
    for variant in (text, focus(text, tree)):
        chunks = reparse.cut(variant, tree)
        whole = cst.parse_module(variant)
        got = reparse.assemble([cst.parse_module(c) for c in chunks])
        assert "".join(chunks) == variant
        if got is None:  # chunks that disagree on indentation: parsed whole
            continue
        assert got.deep_equals(whole)
        assert got.code == whole.code


def test_a_cut_is_never_made_where_a_comment_is_indented():
    text = "def f():\n    x = 1\n    # about x\n\nclass A:\n    pass\n\n\ny = 2\n"
    chunks = reparse.cut(text, ast.parse(text))
    assert chunks == ["def f():\n    x = 1\n    # about x\n\nclass A:\n    pass\n\n\n", "y = 2\n"]


@pytest.mark.parametrize("which", _texts())
def test_a_summary_made_again_after_an_edit_is_the_fresh_one(which):
    text = _read(which)
    summarise(text, reuse=True)  # what the first lint keeps
    edited = _edited(text)
    assert summarise(edited, reuse=True) == summarise(edited)


def _findings(text: str, path: str):
    return [(f.code, f.line, f.col, f.message) for f in analyze_source(text, path)]


@pytest.mark.parametrize("which", [p for p in FILES if p.parent == FIXTURES])
def test_a_relint_after_an_edit_finds_what_a_fresh_process_finds(which, tmp_path):
    path, other = str(tmp_path / "one" / which.name), str(tmp_path / "two" / which.name)
    text = which.read_text(encoding="utf-8")
    edited = _edited(text)
    reparse.forget()
    fresh = _findings(edited, path)  # the first lint of the path: parsed whole
    assert reparse.again(path)
    assert _findings(text, path) == _findings(text, other)  # chunks, then whole
    assert _findings(edited, path) == fresh  # every chunk but the edited one kept
    assert len(reparse._kept) > 0


def test_what_is_kept_stays_bounded(monkeypatch):
    monkeypatch.setattr(reparse, "MAX_KEPT_CHARS", 400)
    reparse.forget()
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(200))
    tree = ast.parse(text)
    reparse.parse(text, tree, "big.py")
    got = reparse.parse(text, tree, "big.py")
    assert got.code == text
    assert 0 < reparse._kept_chars[0] <= 400
    assert sum(len(c) for c in reparse._kept) == reparse._kept_chars[0]
    reparse.forget()


def test_a_chunk_libcst_refuses_gives_the_whole_parse_s_error(monkeypatch):
    reparse.forget()
    text = "x = 1\n\n\ndef f():\n    return 2\n"
    tree = ast.parse(text)
    reparse.parse(text, tree, "bad.py")
    real = cst.parse_module

    def refuse_chunks(source, *args, **kwargs):
        if source != text:
            raise cst.ParserSyntaxError("chunk", lines=[source], raw_line=1, raw_column=0)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(reparse.cst, "parse_module", refuse_chunks)
    got = reparse.parse(text, tree, "bad.py")  # chunked, refused, parsed whole
    assert got.code == text
    reparse.forget()


# what a review found: each text once gave another tree, or other findings, on
# its second lint
TRICKY = [
    "x=1\n   \n   \ny=2\n",  # whitespace-only lines LibCST drops at a text's end
    "x = 1;\n\x0c\n\"\"\"doc\"\"\"\n\t# tabc\n  # ic\n",  # indented comments at a chunk's end
    "x = 1  # a\x0cy = 2\nz = 3\n",  # a form feed: no line break to Python
    "x = 1  # a\u2028y = 2\nz = 3\n",  # nor a Unicode line separator
    "import torch.nn as nn\n\nblocks = []\n" + "blocks.append(nn.MultiheadAttention(8, 2))\n" * 3,
]


@pytest.mark.parametrize("text", TRICKY)
def test_a_second_parse_is_the_whole_parse_on_tricky_texts(text):
    reparse.forget()
    tree = ast.parse(text)
    first = reparse.parse(text, tree, "tricky.py")
    second = reparse.parse(text, tree, "tricky.py")
    assert second.code == first.code and second.deep_equals(first)
    reparse.forget()


@pytest.mark.parametrize("text", [
    "import torch.nn as nn\n\n    \ndef build():\n    return nn.MultiheadAttention(8, 2)\n",
    "import torch.nn as nn\na = nn.MultiheadAttention(8, 2)  # see\x0cb\nm = nn.MultiheadAttention(8, 2)\n",
    "import torch.nn as nn\n\nblocks = []\n" + "blocks.append(nn.MultiheadAttention(8, 2))\n" * 3,
])
def test_a_relint_of_a_tricky_text_reports_the_same_lines(text, tmp_path):
    reparse.forget()
    path = str(tmp_path / "t.py")
    first = [(f.code, f.line, f.col) for f in analyze_source(text, path, ["MHA001"])]
    assert first
    assert [(f.code, f.line, f.col) for f in analyze_source(text, path, ["MHA001"])] == first
    reparse.forget()


def test_a_summary_after_a_form_feed_is_made_again_when_its_definition_changes():
    t1 = ("import torch.nn.functional as F\n\x0c\ndef attend(q, k, v, mask):\n"
          "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n")
    t2 = t1.replace("attn_mask=mask)", "is_causal=mask)")
    summarise(t1, reuse=True)
    assert summarise(t2, reuse=True) == summarise(t2)
    assert "is_causal" in summarise(t2, reuse=True)["attend"]["reach"]


def test_a_large_text_linted_once_is_parsed_by_pieces_and_keeps_nothing(monkeypatch):
    """Above ``LARGE_TEXT`` the first parse is made of pieces too (the native
    parser's memory peaks at a piece's): the same tree as the whole parse,
    node for node, and nothing kept for a later lint."""
    monkeypatch.setattr(reparse, "LARGE_TEXT", 2_000)
    monkeypatch.setattr(reparse, "PIECE_CHARS", 500)
    reparse.forget()
    text = (FIXTURES / "MHA002_ignore_mask_to_sdpa.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    sizes = []
    real = cst.parse_module
    monkeypatch.setattr(reparse.cst, "parse_module", lambda s, *a, **k: sizes.append(len(s))
                        or real(s, *a, **k))
    got = reparse.parse(text, tree, "large.py")
    assert len(sizes) > 2 and max(sizes) < len(text)  # pieces, not the whole
    whole = real(text)
    assert got.deep_equals(whole) and got.code == whole.code
    assert not reparse._kept and reparse._kept_chars[0] == 0
    # focused; one piece per line; whitespace-only lines LibCST drops at a piece's end
    for variant in (focus(text, tree), "x = 1\n" * 600, "x = 1\n   \n\ny = 2\n" * 300):
        assert reparse.parse(variant, ast.parse(variant), "other.py").deep_equals(real(variant))
    reparse.forget()


def test_a_large_text_s_findings_are_those_of_the_whole_parse(monkeypatch, tmp_path):
    text = (FIXTURES / "MHA002_ignore_mask_to_sdpa.py").read_text(encoding="utf-8")
    path = str(tmp_path / "large.py")
    reparse.forget()
    from flake8_mha.lint.engine import select_codes

    every = select_codes(["MHA"])
    whole = [(f.code, f.line, f.col, f.message) for f in analyze_source(text, path, every)]
    reparse.forget()
    monkeypatch.setattr(reparse, "LARGE_TEXT", 2_000)
    monkeypatch.setattr(reparse, "PIECE_CHARS", 500)
    pieces = [(f.code, f.line, f.col, f.message) for f in analyze_source(text, path, every)]
    assert pieces == whole and whole
    reparse.forget()
