"""Name conventions: what a name says about a mask where the code says nothing.

Names are weaker evidence than code: the evaluator asks them only where the
code is silent (a parameter nobody in the file calls with a known mask, a
tokenizer's ``attention_mask``), and a comparison with a pad id.
"""

from __future__ import annotations

import re

from typing import Optional

import libcst as cst

from .domain import BOOL, IGNORE, INT, KEEP, Mask, Origin

IGNORE_PARAM_NAMES = {
    "key_padding_mask",
    "src_key_padding_mask",
    "tgt_key_padding_mask",
    "memory_key_padding_mask",
    "padding_mask",
    "pad_mask",
}
KEEP_PARAM_NAMES = {"attention_mask"}
TOKENIZER_KEYS = {"attention_mask"}
_TOKEN_WORDS = ("ids", "token", "tok")
_FEATURE_WORDS = ("emb", "feat", "hid", "out", "rep", "state", "vec", "x_", "h_", "z_")
_TOKEN_NAMES = {
    "src",
    "tgt",
    "input",
    "inputs",
    "text",
    "texts",
    "captions",
    "seq",
    "seqs",
    "source",
    "target",
    "targets",
    "sentences",
    "words",
}


def last_name(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def string_key(node: cst.Subscript) -> Optional[str]:
    """``"attention_mask"`` of ``batch["attention_mask"]``."""
    if len(node.slice) != 1:
        return None
    el = node.slice[0].slice
    if isinstance(el, cst.Index) and isinstance(el.value, cst.SimpleString):
        try:
            key = el.value.evaluated_value
        except Exception:  # pragma: no cover - odd string prefixes
            return None
        return key if isinstance(key, str) else None
    return None


def is_pad_name(node: cst.CSTNode) -> bool:
    """``pad_id``, ``PAD_IDX``, ``self.padding_idx``, ``tokenizer.pad_token_id``;
    a tabular model's ``MISSING_ID`` (a missing category) is padding too, and
    so is a label to ignore (``IGNORE``, ``ignore_index``: segmentation's
    unlabelled 255, probe AB's AB28)."""
    name = last_name(node)
    if name is None:
        return False
    low = name.lower()
    return (
        ("pad" in low or "missing" in low or "ignore" in low)
        and "mask" not in low
        and "len" not in low
    )


_NOT_PADDING = ("len", "size", "num", "count", "idx", "width", "amount", "value", "token")


def says_padding(name: str) -> bool:
    """A local whose name says it marks padding (``pad``, ``padding``,
    ``pad_mask``, ``is_pad``), not an amount or an id of it (``pad_len``,
    ``pad_idx``, ``pad_token``)."""
    low = name.lower()
    return "pad" in low and not any(w in low for w in _NOT_PADDING)


def says_mask(node: cst.CSTNode) -> bool:
    """A name (or attribute) that says it holds a mask: ``mask``, ``src_mask``,
    ``valid``, ``keep``."""
    low = (last_name(node) or "").lower()
    return "mask" in low or low in ("valid", "keep", "is_valid")


def zero_test(node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """What ``x == 0`` or ``x.eq(0)`` tests, possibly reduced over an axis
    (``(images == 0).all(dim=1)``, ``torch.all(x == 0, -1)``): True where the
    values are zero, the way padded pixels or frames are told apart; None
    for anything else, and for a mask, a length, a count or a pad id or
    amount compared with zero (``pad_len == 0`` marks the rows *without*
    padding)."""
    while isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("all", "any"):
            if isinstance(func.value, cst.Name) and func.value.value == "torch":
                if not node.args:
                    return None
                node = node.args[0].value
            else:
                node = func.value
        elif isinstance(func, cst.Attribute) and func.attr.value == "eq" and len(node.args) == 1:
            return _tested(func.value) if _is_zero(node.args[0].value) else None
        else:
            return None
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return None
    comp = node.comparisons[0]
    if not isinstance(comp.operator, cst.Equal):
        return None
    if _is_zero(comp.comparator):
        return _tested(node.left)
    return _tested(comp.comparator) if _is_zero(node.left) else None


def _tested(node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """``node``, unless its name says it is no data (a mask, a length, a
    count, a pad id or amount)."""
    inner = node
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
        inner = inner.func.value  # ``x.abs().sum(-1)``: what ``x`` is
    name = last_name(inner)
    if is_mask_or_length(inner) or is_pad_name(inner) or (name and is_count_name(name)):
        return None
    return node


def _is_zero(node: cst.CSTNode) -> bool:
    """A literal zero (``0``, ``0.0``, ``0x0``)."""
    if not isinstance(node, (cst.Integer, cst.Float)):
        return False
    try:
        return node.evaluated_value == 0
    except (ValueError, SyntaxError):  # pragma: no cover - a literal Python would refuse
        return False


def is_token_name(node: cst.CSTNode) -> bool:
    """Names that hold token ids: ``input_ids``, ``tokens``, ``src``."""
    name = last_name(node)
    if name is None:
        if isinstance(node, cst.Subscript):
            key = string_key(node)
            return (
                key is not None and is_token_name(cst.Name(key))
                if key and key.isidentifier()
                else False
            )
        return False
    low = name.lower()
    if "mask" in low or "len" in low or "pos" in low or low.startswith(_COUNTS):
        return False  # ``num_seqs``, ``n_tokens``: how many, not which
    if low.endswith(("_seq", "_seqs")) and not any(w in low for w in _FEATURE_WORDS):
        return True  # SASRec's ``log_seqs``, RecBole's ``item_seq``: item ids
    return says_ids(low) or low in _TOKEN_NAMES


_COUNTS = ("num_", "n_", "nb_", "count_")


def says_ids(name: str) -> bool:
    """A name that says token ids by a word of it (``input_ids``, ``tokens``,
    ``tok``); ``src`` or ``seq`` alone does not."""
    low = name.lower()
    return any(w in low for w in _TOKEN_WORDS)


_ADJACENCY = re.compile(r"(adj|adjacency)(_?(matrix|mat|matrices))?s?")


def is_adjacency_name(node: cst.CSTNode) -> bool:
    """A graph's adjacency (``adj``, ``adjacency``, ``self.adj_matrix``):
    nonzero where an edge joins two nodes, the pairs a graph attention
    attends."""
    name = last_name(node)
    return name is not None and bool(_ADJACENCY.fullmatch(name.lower()))


def is_mask_or_length(node: cst.CSTNode) -> bool:
    name = last_name(node)
    if name is None and isinstance(node, cst.Subscript):
        name = string_key(node)
    low = (name or "").lower()
    return "mask" in low or "len" in low


def is_length_name(name: str) -> bool:
    """A per-sample length: ``lengths``, ``src_lens``, ``sizes``, and an
    image's per-sample ``widths``/``heights`` (a text line's valid columns)."""
    low = name.lower()
    if "max" in low:
        return False
    return (
        "len" in low
        or low in ("lens", "ilens", "olens", "sizes")
        or low.endswith(("widths", "heights"))
    )


# what a model has a number of, not a sample (layers and epochs are also a
# sample's own: a snow pit's layers, a night's 30-second sleep epochs, probe AK)
_MODEL_THINGS = (
    "head",
    "dim",
    "hidden",
    "class",
    "embed",
    "expert",
    "block",
    "channel",
    "feature",
    "group",
    "bucket",
    "bit",
    "kv",
    "vocab",
    "param",
    "gpu",
    "worker",
)
_COUNT_NAME = re.compile(
    r"(n|num|number_of|nb)_?(valid|real|tokens?|frames?|patches?|items?|elements?|words?|samples"
    r"|points?|steps?|chars?|objects?|boxes|queries|keys|nodes?|media|images?|segments?"
    r"|sentences?|turns?|events?|regions?|utterances?|chunks?|atoms?|residues?|res|visits?"
    r"|entities|spans?|seqs?|sequences?|msas?|agents?|actors?|vehicles?|tracks?|players?)(_per_\w+)?"
    r"|valid_?(tokens?|patches|frames|items|count|num)|\w*counts?"
    # any other ``n_<things>`` / ``num_<things>``: a per-sample count when it is
    # indexed per sample against an arange (``arange(S) < n_pings[:, None]``),
    # unless the things are the model's own (``num_heads``, ``n_layers``)
    r"|(n|num|nb|number_of)_(?!(?:" + "|".join(_MODEL_THINGS) + r"))[a-z]\w*"
    # a bare ``n`` too, on the same terms (probe AE's AE10: ``arange(S) < n[:, None]``)
    r"|n"
)


def is_count_name(name: str) -> bool:
    """A per-sample count of real items by its name (``n_valid``,
    ``num_frames``, ``token_count``); never a padding count or a maximum."""
    low = name.lower()
    return not any(w in low for w in ("pad", "max", "start", "offset", "skip")) and bool(
        _COUNT_NAME.fullmatch(low)
    )


def is_device_name(name: Optional[str]) -> bool:
    """``device``, ``self.dev``, ``"cuda"``-like names passed to ``.to(...)``."""
    return name is not None and (
        "device" in name.lower() or name.lower() in ("dev", "gpu", "cuda", "cpu")
    )


def parameter_by_name(p: cst.Param, name: str, func: cst.FunctionDef) -> Optional[Mask]:
    """The mask a parameter's name promises (``key_padding_mask``: True =
    ignore), or None when the name says nothing sure."""
    if p is func.params.star_kwarg or p is func.params.star_arg:
        return None
    low = name.lower()
    if low in IGNORE_PARAM_NAMES:
        origin = Origin(p, f"parameter {name}", by_name=True)
        return Mask(meaning=IGNORE, kind=BOOL, dtype="bool", origin=origin, kind_origin=origin)
    params = list(func.params.posonly_params) + list(func.params.params)
    if (
        low in KEEP_PARAM_NAMES
        and any(_names_ids(q.name.value) for q in params + list(func.params.kwonly_params))
        and not _documented_as_scores_mask(func, name)
    ):
        # beside the token ids it is the tokenizer's mask (1 = real token, an
        # int64 tensor, as ``batch["attention_mask"]``); alone (an attention
        # layer's parameter) it is whatever the model made of it: additive,
        # or True = ignore (transformers does both)
        origin = Origin(p, f"parameter {name}", by_name=True)
        return Mask(meaning=KEEP, kind=INT, dtype="int64", origin=origin, kind_origin=origin)
    return None


_FLAGS = ("is_", "has_", "use_", "exist", "with_", "max_", "min_")  # counts: is_token_name
# what a docstring says of a mask that is no tokenizer's: SDPA's own form, a
# shape of three axes or more, additive values (kornia's PaliGemma, review 30)
_SCORES_MASK_WORDS = re.compile(
    r"scaled.dot.product.attention|additive|-inf|\b[34]-?d\b"
    r"|[(\[]\s*[\w.]+\s*,\s*[\w.]+\s*,\s*[\w.]+|\b\w+\s*x\s*\w+\s*x\s*\w+"
)


def _doc_entry(func: cst.FunctionDef, name: str) -> Optional[str]:
    """The entry of the function's docstring for its parameter ``name``: the
    line that starts with it and the lines indented below, lower case."""
    try:
        doc = func.get_docstring()
    except Exception:  # pragma: no cover - a docstring libcst cannot evaluate
        return None
    lines = (doc or "").splitlines()
    for i, line in enumerate(lines):
        if not re.match(r"\s*:?(param\s+)?" + re.escape(name) + r"\b", line):
            continue
        indent = len(line) - len(line.lstrip())
        said = [line]
        for more in lines[i + 1 :]:
            if more.strip() and len(more) - len(more.lstrip()) <= indent:
                break
            said.append(more)
        return " ".join(said).lower()
    return None


def _documented_as_scores_mask(func: cst.FunctionDef, name: str) -> bool:
    """The function's docstring describes ``name`` as a mask over the scores,
    not a tokenizer's ``(batch, length)`` one: its entry names SDPA, gives
    three axes or more, or says additive or -inf."""
    entry = _doc_entry(func, name)
    return entry is not None and _SCORES_MASK_WORDS.search(entry) is not None


_BATCH_AXES = ("b", "bs", "bsz", "n", "batch", "batch_size", "nbatch")
_KEY_AXES = (
    "n", "s", "l", "t", "k", "seq", "seq_len", "seqlen", "seq_length", "len", "length",
    "sequence_length", "src_len", "kv_len", "max_len", "tokens", "num_tokens", "n_tokens",
)  # fmt: skip
_TWO_AXES = re.compile(r"(?:[(\[]\s*([\w.]+)\s*,\s*([\w.]+)\s*[)\]])|(?:\b(\w+)\s+x\s+(\w+)\b)")


def documented_padding(func: cst.FunctionDef, name: str) -> bool:
    """The docstring entry of the mask parameter ``name`` gives it two axes,
    the batch and the keys (``attn_mask: ... B x N``, ``(batch, seq_len)``:
    monai's ``SABlock``, release review 30), and no shape of more axes."""
    entry = _doc_entry(func, name)
    if entry is None or _SCORES_MASK_WORDS.search(entry):
        return False
    found = [tuple(a for a in m.groups() if a) for m in _TWO_AXES.finditer(entry)]
    # ``(torch.Tensor, optional)`` is a type, not a shape
    found = [f for f in found if f[0] in _BATCH_AXES + _KEY_AXES and f[1] in _KEY_AXES]
    return len(found) == 1 and found[0][0] in _BATCH_AXES


def _names_ids(name: str) -> bool:
    """A parameter that says token ids outright (``input_ids``, ``tokens``,
    ``text_tokens``): not ``inputs`` or ``src`` (features as often as ids),
    nor a flag or a count that mentions tokens
    (``exist_non_image_gen_tokens``, ``num_tokens``), nor positions
    (``position_ids``, as ``is_token_name`` reads them)."""
    low = name.lower()
    if low.startswith(_FLAGS) or not is_token_name(cst.Name(name)):
        return False  # ``position_ids``: positions, not tokens
    return low.endswith(("ids", "tokens", "toks")) or low in ("token", "tok")
