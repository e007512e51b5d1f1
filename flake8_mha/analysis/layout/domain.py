"""The layout domain (axis roles of a tensor) and the parsers of what code says about it.

For each tensor that reaches an attention module's query/key/value
(``src``/``tgt``/``memory`` for the Transformer modules) the evaluator infers
its axis order from what the code says, and keeps the node that decided it
as evidence.  Evidence (docs/evidence.md, "Layout evidence"):

- einops ``rearrange`` patterns and ``einsum`` strings;
- shape-unpacking names (``B, L, D = x.shape``, ``bsz, seq_len, _ = x.size()``)
  and ``view``/``reshape`` with named sizes; ``torch.randn(B, L, E)``-style
  constructors with named sizes;
- ``transpose``/``swapaxes``/``permute``/``movedim``/``flatten``/``unflatten``
  of a known layout;
- conventional sources: ``nn.Embedding`` of ids of known layout, convolution
  feature maps ``(N, C, ...)``, layout-preserving operations (Linear, norms,
  dropout, activations, residual and broadcast adds), an attention module's
  own output (shaped like its query);
- shape comments on the same or the previous line, jaxtyping annotations;
- followed through locals, ``self.<attr>``, helpers, methods and the callers
  of a function.

Nothing else: without evidence the layout is unknown (``None``), never a
prior.  A layout is a tuple of axis roles; ``batch_first`` is derived from
where the ``batch`` role stands.  Never imports torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

BATCH, SEQ, EMBED, CHANNEL, HEAD, SPATIAL = "batch", "seq", "embed", "channel", "head", "spatial"
MAX_DEPTH = 40
MAX_CALLER_DEPTH = 6
_TEXT_MAX = 80

# --------------------------------------------------------------------------- the value


@dataclass(frozen=True)
class Layout:
    """Axis roles of a tensor (None: an axis whose role the code does not say),
    and the node whose code decided them."""

    roles: Tuple[Optional[str], ...]
    node: Optional[cst.CSTNode] = None
    how: str = ""  # which kind of evidence: "comment", "einops", "transpose", ...
    # an axis swap of data of unknown layout fed to a module: converted to the
    # layout that module reads (layout/program.py), whatever that is
    conforms: bool = False
    # (file, line, code) of the evidence when it stands in another file of the
    # project (layout/project_callers.py); None: in the file analyzed
    origin: Optional[Tuple[str, Optional[int], str]] = None
    # paths that meet here stating opposite layouts (one batch-first, one
    # sequence-first): the roles are unknown, and a module that reads one of
    # them is fed the other on one path (``LayoutAnalysis``: a correct sibling
    # path does not hide a wrong one)
    disagree: Tuple["Layout", ...] = ()

    @property
    def batch_first(self) -> Optional[bool]:
        """True: batch axis first (N, L, E); False: second (L, N, E); None: not known
        or not a 3-D batched tensor."""
        roles = self.roles
        if len(roles) != 3:
            return None
        if roles.count(BATCH) == 1:
            at = roles.index(BATCH)
            return True if at == 0 else False if at == 1 else None
        if BATCH not in roles and roles.count(SEQ) == 1 and roles[2] in (EMBED, CHANNEL):
            # a 3-D attention input with its sequence and its features stated: the
            # other axis is the batch (``L, NT, C = x.shape``: NT names nothing)
            at = roles.index(SEQ)
            return False if at == 0 and roles[1] is None else True if roles[0] is None else None
        return None

    @property
    def unbatched(self) -> bool:
        """A 2-D (L, E) tensor with no batch axis: the module treats it as one sample."""
        return len(self.roles) == 2 and BATCH not in self.roles and SEQ in self.roles

    def text(self) -> str:
        short = {BATCH: "N", SEQ: "L", EMBED: "E", CHANNEL: "C", HEAD: "H", SPATIAL: "S"}
        return "(" + ", ".join(short.get(r, "?") if r else "?" for r in self.roles) + ")"

    def with_roles(self, roles: Sequence[Optional[str]], node, how: str) -> "Layout":
        return Layout(tuple(roles), node, how)


# --------------------------------------------------------------------------- names of axes

_BATCH_NAMES = {
    "b",
    "bs",
    "bsz",
    "batch",
    "batch_size",
    "batchsize",
    "nbatch",
    "n_batch",
    "nb",
    "num_batch",
    "n_batches",
    "bsize",
    "batch_sz",
}
_SEQ_NAMES = {
    "l",
    "t",
    "s",
    "seq",
    "seq_len",
    "seqlen",
    "seq_length",
    "sequence_length",
    "len",
    "length",
    "n_tokens",
    "num_tokens",
    "ntokens",
    "tokens",
    "src_len",
    "tgt_len",
    "q_len",
    "k_len",
    "kv_len",
    "time",
    "steps",
    "timesteps",
    "n_ctx",
    "ctx",
    "hw",
    "num_patches",
    "n_patches",
    "npatch",
    "max_len",
    "num_queries",
    "n_queries",
    "queries",
    "seq_length",
    "sl",
    "ls",
    "lq",
    "lk",
    "sq",
    "sk",
    "tq",
    "tk",
    "nq",
    "nk",
    "n_q",
    "n_k",
    "frames",
    "num_frames",
    "n_frames",
}
_EMBED_NAMES = {
    "e",
    "d",
    "dim",
    "d_model",
    "dmodel",
    "embed_dim",
    "emb_dim",
    "hidden",
    "hidden_size",
    "hidden_dim",
    "emb",
    "embed",
    "d_emb",
    "features",
    "feat",
    "n_embd",
    "n_embed",
    "model_dim",
    "width",
    "d_k",
    "dk",
    "head_dim",
    "dh",
    "hd",
    "embed_size",
    "emb_size",
    "e_dim",
    "embedding_dim",
    "f",
    "feature_dim",
    "feat_dim",
    "feature_size",
    "d_feature",
    "num_features",
    "n_features",
}
_CHANNEL_NAMES = {
    "c",
    "ch",
    "channel",
    "channels",
    "n_channels",
    "num_channels",
    "in_channels",
    "cin",
    "c_in",
}
_HEAD_NAMES = {"heads", "num_heads", "n_heads", "nh", "nhead", "n_head", "nheads", "num_head"}
_SPATIAL_NAMES = {"h", "w", "height", "width_", "x_", "y_", "z", "d_", "hh", "ww"}


_QUALIFIERS = ("local_", "cur_", "curr_", "current_", "actual_", "real_")


def _plain(name: str) -> str:
    """A batch or sequence name under a qualifier (deepod's ``local_bs``,
    ``cur_len``): the name it qualifies."""
    for q in _QUALIFIERS:
        if name.startswith(q) and (name[len(q) :] in _BATCH_NAMES or name[len(q) :] in _SEQ_NAMES):
            return name[len(q) :]
    return name


def roles_of_names(names: Sequence[Optional[str]]) -> Tuple[Optional[str], ...]:
    """Roles for a list of dimension names as they stand together in one shape.

    ``n``/``N`` is the batch (torch's docs: ``(L, N, E)``) unless another name
    in the same shape is the batch, where it is the sequence (einops's
    ``b n d``), or unknown when a sequence is named too (SpeechBrain's
    ``[B, L, N]``, N the filters); after a first axis no name says anything
    of (``(G, N, D)``: G graphs of N atoms), with no sequence named, it is
    unknown too; ``h`` is height beside ``w`` and a head count otherwise.
    """
    # ``_b, n, _d = x.shape``: a name kept unused is still the axis it names
    low = [_plain(n.lower().strip().lstrip("_")) if n else None for n in names]
    has_batch = any(n in _BATCH_NAMES for n in low if n)
    has_seq = any(n in _SEQ_NAMES for n in low if n)
    has_w = "w" in low
    out: List[Optional[str]] = []
    for i, n in enumerate(low):
        if not n:
            out.append(None)
        elif n in _BATCH_NAMES:
            out.append(BATCH)
        elif n == "n" and len(low) == 2 and not has_batch:
            out.append(None)  # ``(N, D)``: N items, a batch or a sequence alike
        elif n == "n" and i and not has_batch and not has_seq:
            out.append(None)  # ``(G, N, D)``: after an axis it does not name, N may count atoms
        elif n == "n":
            out.append((None if has_seq else SEQ) if has_batch else BATCH)
        elif n in ("h", "w") and has_w:
            out.append(SPATIAL)
        elif n == "h":
            out.append(HEAD)
        elif n in _SEQ_NAMES:
            out.append(SEQ)
        elif n in _HEAD_NAMES:
            out.append(HEAD)
        elif n in _CHANNEL_NAMES:
            out.append(CHANNEL)
        elif n == "f" and any(m in _EMBED_NAMES and m != "f" for m in low if m):
            out.append(None)  # ``f (b t) d``: beside the features, f counts frames or bins
        elif n in _EMBED_NAMES:
            out.append(EMBED)
        elif re.fullmatch(r"\(?\s*[hw]\s*\*?\s*[hw]\s*\)?", n) or n in ("h*w", "(h w)", "h w"):
            out.append(SEQ)
        else:
            out.append(None)
    if out.count(BATCH) > 1:
        return tuple(None for _ in out)
    return tuple(out)


def useful(roles: Sequence[Optional[str]]) -> bool:
    return len(roles) >= 2 and (BATCH in roles or SEQ in roles) and roles.count(BATCH) <= 1


# --------------------------------------------------------------------------- comments

_TUPLE = re.compile(r"[\(\[]([^()\[\]]*(?:\([^()]*\)[^()\[\]]*)*)[\)\]]")
_X_FORM = re.compile(r"\b(\w+(?:\s*[x×]\s*\w+){1,4})\b")
# ``x: (L, N, E)``, and ``x shape [S, N, d_model]``, ``x.shape = (...)``, ``x has shape (...)``
_NAMED = re.compile(
    r"\b([A-Za-z_]\w*)(?:\s*[:=]|(?:\.shape|\s+shape|\s+has\s+shape)\s*[:=]?)\s*[\(\[]"
)
# a comment that is only axis names: ``# seq_length, batch_size, dim`` (pykeen)
_BARE = re.compile(r"^(?:shape\s*:\s*)?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*){2,3})\s*$")
_NOT_NAMES = {"shape", "shapes", "size", "sizes"}  # ``# shape: (L, N, E)`` names no tensor
# words before "shape" that name no tensor either: ``the tokens, of shape (batch, seq, dim)``
_NOT_NAMES |= {"of", "with", "the", "a", "an", "its", "in", "to", "and", "is", "are", "has"}
_NOT_NAMES |= {"have", "same", "new", "this", "that", "same", "whose", "having", "by"}


def _split_dims(text: str) -> List[str]:
    parts = [p.strip() for p in text.split(",")]
    if parts and parts[-1] == "":
        parts.pop()
    out = []
    for p in parts:
        q = re.sub(r"\s+", "", p)
        if re.fullmatch(r"\(?[HhWw]\*[HhWw]\)?", q) or q.lower() in ("hw", "(hw)"):
            out.append("hw")
        else:
            out.append(p)
    return out


def parse_shape_comment(comment: str) -> Dict[Optional[str], Tuple[Optional[str], ...]]:
    """Layouts a comment states: ``{name or None: roles}``.  ``# x: (L, N, E)`` names
    x; ``# (B, L, E)`` and ``# bs x seq_len x d_model`` state the assigned value;
    ``# (N, C, H, W) -> (H * W, N, C)`` states the value after the last arrow."""
    text = comment.lstrip("#").strip()
    out: Dict[Optional[str], Tuple[Optional[str], ...]] = {}
    for arrow in ("->", "=>", "→"):  # ESM's ``# (B, T, E) => (T, B, E)``
        if arrow in text:
            text = text.rsplit(arrow, 1)[1]
    named = _NAMED.search(text)
    found = _TUPLE.search(text)
    if found is not None:
        roles = roles_of_names(_split_dims(found.group(1)))
        if len(roles) == 2 and roles[0] is None and roles[1] == EMBED:
            roles = (SEQ, EMBED)  # ``(num_points, dim)``: two axes, no batch: unbatched
        if useful(roles):
            key = named.group(1) if named is not None and named.end() - 1 <= found.start() else None
            if key is not None and key.lower() in _NOT_NAMES:
                key = None
            out[key] = roles
            return out
    bare = _BARE.match(text)
    if bare is not None:
        roles = roles_of_names(_split_dims(bare.group(1)))
        if all(r is not None for r in roles) and useful(roles):
            out[None] = roles
            return out
    x_form = _X_FORM.search(text)
    if x_form is not None:
        dims = x_form.group(1)
        # ``bsz x max_pos``: with spaces around it, only a lone x parts the
        # axes (an x inside a name is not one); ``NxCxHxW`` has none
        spaced = re.search(r"\s[x×]\s", dims) is not None
        parts = re.split(r"\s+[x×]\s+|\s*×\s*" if spaced else r"[x×]", dims)
        roles = roles_of_names([p.strip() for p in parts])
        if useful(roles):
            out[None] = roles
    return out


def parse_einops_side(side: str) -> Optional[List[str]]:
    """``'b (h w) c'`` -> ``['b', 'h w', 'c']``; None for an ellipsis or bad text."""
    if "..." in side or "…" in side:
        return None
    items = re.findall(r"\([^()]*\)|[A-Za-z_]\w*|\d+", side)
    return [i.strip("()").strip() for i in items]


def group_role(group: str, left_roles: Dict[str, Optional[str]]) -> Optional[str]:
    names = group.split()
    if len(names) == 1:
        return left_roles.get(names[0])
    if left_roles.get(group) is not None:  # the data's own axis, moved whole
        return left_roles[group]
    roles = [left_roles.get(n) for n in names]
    if BATCH in roles:
        # the batch merged with parts of the sequence (TimeSformer's ``t (b n) d``):
        # the rows an attention keeps apart, its batch; with anything else, no axis
        if roles.count(BATCH) == 1 and all(r in (BATCH, SEQ, SPATIAL) for r in roles):
            return BATCH
        return None
    if roles and all(r in (SEQ, SPATIAL) for r in roles):
        return SEQ
    if HEAD in roles and all(r in (HEAD, EMBED, None) for r in roles):
        return EMBED
    return None


# --------------------------------------------------------------------------- torch operations

PRESERVE_MODULES = {
    "Linear",
    "LazyLinear",
    "LayerNorm",
    "RMSNorm",
    "Dropout",
    "Dropout1d",
    "AlphaDropout",
    "ReLU",
    "GELU",
    "SiLU",
    "Tanh",
    "Sigmoid",
    "LeakyReLU",
    "ELU",
    "Mish",
    "Softplus",
    "PReLU",
    "Identity",
    "Hardswish",
    "GLU",
    "Softmax",
    "SELU",
    "CELU",
    "ReLU6",
    "Hardtanh",
    "LogSoftmax",
    "Dropout2d",
    "Dropout3d",
    # normalisations over the channels (axis 1) give back their input's shape:
    # a post-norm layer's ``permute(1, 2, 0)``, ``BatchNorm1d``, ``permute(2, 0, 1)``
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "GroupNorm",
}
CONV = {"Conv1d": 1, "Conv2d": 2, "Conv3d": 3, "LazyConv1d": 1, "LazyConv2d": 2, "LazyConv3d": 3}
PRESERVE_METHODS = {
    # the same shape: ``x.scatter(dim, index, src)`` writes into a copy of x
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "masked_scatter",
    "contiguous",
    "float",
    "half",
    "double",
    "bfloat16",
    "to",
    "clone",
    "detach",
    "cuda",
    "cpu",
    "relu",
    "gelu",
    "tanh",
    "sigmoid",
    "softmax",
    "log_softmax",
    "abs",
    "exp",
    "neg",
    "mul",
    "add",
    "sub",
    "div",
    "masked_fill",
    "type_as",
    "type",  # ``x.type(torch.float32)``
    "requires_grad_",
    "add_",
    "mul_",
    "relu_",
    "float_",
}
PRESERVE_FUNCS = {
    # a learned tensor holds the data it is made from (``nn.Parameter(torch.randn(n, d))``)
    "torch.nn.Parameter",
    "torch.nn.parameter.Parameter",
    "torch.nn.functional.relu",
    "torch.nn.functional.gelu",
    "torch.nn.functional.silu",
    "torch.nn.functional.dropout",
    "torch.nn.functional.layer_norm",
    "torch.nn.functional.normalize",
    "torch.nn.functional.linear",
    "torch.nn.functional.leaky_relu",
    "torch.nn.functional.elu",
    "torch.nn.functional.softmax",
    "torch.tanh",
    "torch.sigmoid",
    "torch.relu",
    "torch.nn.functional.tanh",
    "torch.nn.functional.rms_norm",
    "torch.nn.functional.mish",
    # a new tensor of the same shape
    "torch.zeros_like",
    "torch.ones_like",
    "torch.empty_like",
    "torch.full_like",
    "torch.rand_like",
    "torch.randn_like",
}
CTORS = {
    "torch.randn",
    "torch.rand",
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.randint",
}


def int_literal(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    ):
        return -int(node.expression.value)
    return None


def size_read(value: cst.BaseExpression) -> Optional[Tuple[cst.BaseExpression, int]]:
    """``x.shape[k]``, ``x.size()[k]``, ``x.size(k)`` (``k`` a literal): (x, k)."""
    if isinstance(value, cst.Subscript) and len(value.slice) == 1:
        index, owner = value.slice[0].slice, value.value
        if not isinstance(index, cst.Index):
            return None
        if isinstance(owner, cst.Attribute) and owner.attr.value == "shape":
            tensor = owner.value
        elif (
            isinstance(owner, cst.Call)
            and not owner.args
            and isinstance(owner.func, cst.Attribute)
            and owner.func.attr.value == "size"
        ):
            tensor = owner.func.value
        else:
            return None
        k = int_literal(index.value)
    elif (
        isinstance(value, cst.Call)
        and len(value.args) == 1
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "size"
    ):
        tensor, k = value.func.value, int_literal(value.args[0].value)
    else:
        return None
    return (tensor, k) if k is not None else None


def _ints(args: Sequence[cst.Arg]) -> Optional[List[int]]:
    vals = [a.value for a in args if not a.star]
    if len(vals) == 1 and isinstance(vals[0], (cst.Tuple, cst.List)):
        vals = [e.value for e in vals[0].elements]
    out = []
    for v in vals:
        i = int_literal(v)
        if i is None:
            return None
        out.append(i)
    return out


def _norm(dim: int, rank: int) -> Optional[int]:
    d = dim + rank if dim < 0 else dim
    return d if 0 <= d < rank else None


def _kwarg(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def positional(call: cst.Call) -> List[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def _merge(roles: Sequence[Optional[str]]) -> Optional[str]:
    if BATCH in roles:
        # ``x.flatten(0, 1)`` of ``(N, S, T, E)``: the batch merged with parts
        # of the sequence, or with axes the code does not name (a series, a
        # group), is the batch: attention never mixes across its rows
        if roles.count(BATCH) == 1 and all(r in (BATCH, SEQ, SPATIAL, None) for r in roles):
            return BATCH
        return None
    if roles and all(r in (SEQ, SPATIAL) for r in roles):
        return SEQ
    if roles and all(r in (HEAD, EMBED, CHANNEL) for r in roles):
        return EMBED
    return None


def transform(layout: Layout, method: str, call: cst.Call, node) -> Optional[Layout]:
    """The layout after ``x.<method>(...)`` of a known layout, or None."""
    roles = list(layout.roles)
    rank = len(roles)
    args = positional(call)
    if method in ("transpose", "swapaxes", "swapdims"):
        dims = _ints(call.args)
        if dims is None or len(dims) != 2:
            return None
        a, b = (_norm(d, rank) for d in dims)
        if a is None or b is None:
            return None
        roles[a], roles[b] = roles[b], roles[a]
        return Layout(tuple(roles), node, method)
    if method == "permute":
        dims = _ints(call.args)
        if dims is None or len(dims) != rank:
            return None
        norm = [_norm(d, rank) for d in dims]
        if None in norm or len(set(norm)) != rank:
            return None
        return Layout(tuple(roles[d] for d in norm), node, method)
    if method in ("movedim", "moveaxis"):
        dims = [int_literal(a) for a in args]
        if len(dims) != 2 or None in dims:
            return None
        s, d = _norm(dims[0], rank), _norm(dims[1], rank)
        if s is None or d is None:
            return None
        role = roles.pop(s)
        roles.insert(d, role)
        return Layout(tuple(roles), node, method)
    if method == "flatten":
        start = _kwarg(call, "start_dim") or (args[0] if args else None)
        end = _kwarg(call, "end_dim") or (args[1] if len(args) > 1 else None)
        s = (
            _norm(int_literal(start), rank)
            if start is not None and int_literal(start) is not None
            else (0 if start is None else None)
        )
        e = (
            _norm(int_literal(end), rank)
            if end is not None and int_literal(end) is not None
            else (rank - 1 if end is None else None)
        )
        if s is None or e is None or e < s:
            return None
        merged = _merge(roles[s : e + 1]) if e > s else roles[s]
        return Layout(tuple(roles[:s] + [merged] + roles[e + 1 :]), node, method)
    if method == "unflatten":
        if len(args) != 2:
            return None
        d = int_literal(args[0])
        sizes = args[1]
        if d is None or not isinstance(sizes, (cst.Tuple, cst.List)):
            return None
        d = _norm(d, rank)
        if d is None:
            return None
        names = [e.value.value if isinstance(e.value, cst.Name) else None for e in sizes.elements]
        split = list(roles_of_names(names))
        if roles[d] == BATCH and BATCH not in split:
            return None
        return Layout(tuple(roles[:d] + split + roles[d + 1 :]), node, method)
    if method in ("unsqueeze",):
        if len(args) != 1 or int_literal(args[0]) is None:
            return None
        d = int_literal(args[0])
        d = d + rank + 1 if d < 0 else d
        if not 0 <= d <= rank:
            return None
        return Layout(tuple(roles[:d] + [None] + roles[d:]), node, method)
    if method == "squeeze":
        if len(args) != 1 or int_literal(args[0]) is None:
            return None
        d = _norm(int_literal(args[0]), rank)
        if d is None or roles[d] == SEQ:
            return None  # a sequence of size 1 only, perhaps
        # ``conv(mel.unsqueeze(0)).squeeze(0)``: the code says the batch is one
        # sample, and drops it: unbatched from here on
        return Layout(tuple(roles[:d] + roles[d + 1 :]), node, method)
    return None


# --------------------------------------------------------------------------- swaps


def is_swap(call: cst.Call, method: str) -> bool:
    """``permute(1, 0, 2)``, ``transpose(0, 1)`` (either order), ``swapaxes(0, 1)``."""
    dims = []
    for arg in positional(call):
        if not isinstance(arg, cst.Integer):
            return False
        dims.append(int(arg.value))
    if len(dims) != len(call.args):
        return False
    if method == "permute":
        return dims == [1, 0, 2]
    return sorted(dims) == [0, 1]


def is_rotation(call: cst.Call, method: str) -> bool:
    """``permute(2, 0, 1)``: a channels-first map ``(N, C, L)`` made ``(L, N, C)``
    (of the other 3-D layouts it makes no attention input: the features would
    not be last)."""
    if method != "permute" or len(call.args) != 3:
        return False
    args = positional(call)
    return len(args) == 3 and [a.value if isinstance(a, cst.Integer) else None for a in args] == [
        "2",
        "0",
        "1",
    ]


def is_swap_pattern(text: str) -> bool:
    """An einops pattern that swaps the first two axes and keeps the rest."""
    if "->" not in text:
        return False
    left_s, right_s = text.split("->", 1)
    left, right = parse_einops_side(left_s), parse_einops_side(right_s)
    if left is None or right is None or len(left) != 3 or len(right) != 3:
        return False
    return right == [left[1], left[0], left[2]] and len(set(left)) == 3
