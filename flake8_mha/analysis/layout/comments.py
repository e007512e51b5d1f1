"""What the author wrote about shapes: comments, jaxtyping annotations and
shape-unpacking names, indexed once per file."""

from __future__ import annotations

import re
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst

from ..flow import lookup
from ..masks.names import says_ids
from ..tree import walk, walk_in_order
from .domain import BATCH, Layout, parse_shape_comment, roles_of_names, size_read, useful

_Entry = Tuple[cst.Comment, Dict[Optional[str], tuple]]
_DIM = re.compile(r"[A-Za-z_]\w*")
# ``name (type): text`` (Google style; the type may hold ``of shape `(B, L)```)
# and ``name : type`` (numpy style), each maybe followed by indented lines
_GOOGLE_ARG = re.compile(r"^(\s*)(\w+)\s*\((.*)\)\s*:(.*)$")
_NUMPY_ARG = re.compile(r"^(\s*)(\w+)\s+:\s*(.*)$")
# ``name: text`` (Google style without a type) and Sphinx's ``:param name: text``
_PLAIN_ARG = re.compile(r"^(\s*)(\w+):\s+(.*)$")
_SPHINX_ARG = re.compile(r"^(\s*):param\s+(?:[\w.\[\], ]+\s+)?(\w+):\s*(.*)$")


class DocLine:
    """Evidence on one line of a docstring: the docstring's node, the line's
    offset in it and its text (what a finding quotes: the entry, not the
    docstring's first line)."""

    __slots__ = ("doc", "offset", "value")

    def __init__(self, doc: cst.CSTNode, offset: int, value: str):
        self.doc, self.offset, self.value = doc, offset, value


_RETURNS_SECTIONS = {
    "returns",
    "return",
    "yields",
    "yield",
    "raises",
    "outputs",
    "output",
    "examples",
    "example",
}
_ARGS_SECTIONS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "inputs",
    "input",
    "keyword args",
    "shape",
}


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _docstring_shapes(doc: str) -> List[Tuple[int, str, Dict[Optional[str], tuple]]]:
    """What a docstring states of its function's parameters: a line
    ``x: (B, L, E)``, or an argument entry whose type or description says
    ``shape (...)``; the description may run on over the lines indented below
    the entry (``hidden_states (`torch.Tensor`):`` then ``Input of shape
    `(seq_len, batch, embed_dim)`.``), as transformers writes them."""
    out: List[Tuple[int, str, Dict[Optional[str], tuple]]] = []
    lines = doc.splitlines()
    returns = False
    for i, text in enumerate(lines):
        header = text.strip().rstrip(":").lower()
        if header in _RETURNS_SECTIONS or header in _ARGS_SECTIONS:
            returns = header in _RETURNS_SECTIONS  # what a function gives back is not its input
            continue
        if returns:
            continue
        entry = (
            _GOOGLE_ARG.match(text)
            or _NUMPY_ARG.match(text)
            or _SPHINX_ARG.match(text)
            or _PLAIN_ARG.match(text)
        )
        found = parse_shape_comment(text)
        if entry is None or any(k is not None for k in found):  # ``x: (B, L, E)``
            if any(k is not None for k in found):
                out.append((i, text.strip(), found))
            continue
        said = [text.strip()]
        for more in lines[i + 1 :]:
            if more.strip() and _indent(more) <= len(entry.group(1)):
                break
            said.append(more.strip())
        # the entry's first mention of a shape speaks of this parameter
        whole = " ".join(part for part in said if part)
        at = whole.lower().find("shape", len(entry.group(2)))
        told = entry.groups()[-1].strip().lstrip("`")
        if at < 0 and told[:1] in ("(", "["):  # ``x (Tensor): (L, N, E)``: the text is a shape
            at = whole.find(told)
        elif at < 0 and entry.re is _SPHINX_ARG:
            # ``:param torch.Tensor x: a sequence of feature vectors [S, feature_dim]``
            at = whole.find(told)
        stated = parse_shape_comment(whole[at:]).get(None) if at >= 0 else None
        if stated:
            out.append((i, whole, {entry.group(2): stated}))
    return out


def _parsed(comment: Optional[cst.Comment]) -> List[_Entry]:
    if comment is None:
        return []
    found = parse_shape_comment(comment.value)
    return [(comment, found)] if found else []


# a comment that says what something reads, not what a statement makes (release
# review 35's darts: ``# PyTorch's nn.Transformer needs (seq_len, batch_size,
# features)`` above the line that loads the data, the swap two lines below)
_NEEDS = re.compile(r"\b(?:needs?|expects?|requires?|wants?|accepts?)\b", re.IGNORECASE)


def _line_comments(line: cst.SimpleStatementLine, below=None) -> List[_Entry]:
    """The statement's own trailing comment first, then the one on the line just
    above, then ``below``: the one on the line just below it.

    ``# x: (B, L, E)`` above ``x = x.transpose(0, 1)`` may speak of x before or
    after the statement: a comment above a statement that rebinds a name it
    reads counts only when an arrow says which side it means.  A comment
    above that says what something needs or expects speaks of what a module
    reads, not of the statement's value, unless the statement changes the
    axes (then it is the layout it converts to).  A comment just
    below counts for a statement that changes the axes (``permute``,
    ``view``, ``rearrange``, ...), whose result authors describe on the next
    line, and for any assignment when it names what the line binds (``#
    x shape [S, N, d_model]`` below ``x = ...``); never with an arrow (that
    heads the next statement)."""
    out = _parsed(line.trailing_whitespace.comment)
    if line.leading_lines:
        above = line.leading_lines[-1].comment
        if above is not None and _NEEDS.search(above.value) and not _reshapes(line):
            above = None  # ``# nn.Transformer needs (seq, batch, feat)``: what a module reads
        if above is not None and ("->" in above.value or not _rebinds_what_it_reads(line)):
            out += _parsed(above)
    if below is not None and "->" not in below.value:
        if _reshapes(line):
            out += _parsed(below)
        else:  # ``x = self.aa_encoder(seq)`` then ``# x shape [S, N, d_model]``: named
            bound = _bound_names(line)
            out += [(c, found) for c, found in _parsed(below) if bound & set(found)]
    return out


def _bound_names(line: cst.SimpleStatementLine) -> set:
    """The plain names the line's assignments bind (an augmented one rebinds)."""
    out: set = set()
    for small in line.body:
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            out |= _bound(small)
    return out


def _bound(small) -> set:
    """The plain names an assignment (``=``, ``+=``, annotated) binds."""
    targets = small.targets if isinstance(small, cst.Assign) else [small]
    return {t.target.value for t in targets if isinstance(t.target, cst.Name)}


RESHAPES = {
    "permute",
    "transpose",
    "swapaxes",
    "swapdims",
    "movedim",
    "moveaxis",
    "view",
    "reshape",
    "flatten",
    "unflatten",
    "rearrange",
}


def _reshapes(line: cst.SimpleStatementLine) -> bool:
    """The line assigns the result of a call that changes the axes."""
    for small in line.body:
        value = getattr(small, "value", None)
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(value, cst.Call):
            func = value.func
            name = (
                func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
            )
            if name in RESHAPES:
                return True
    return False


def _below(body, i: int) -> Optional[cst.Comment]:
    """The comment on the line just below statement ``i`` of ``body``."""
    if i + 1 >= len(body):
        return None
    leading = getattr(body[i + 1], "leading_lines", ())
    return leading[0].comment if leading else None


def _rebinds_what_it_reads(line: cst.SimpleStatementLine) -> bool:
    for small in line.body:
        if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            if small.value is not None and _bound(small) & _names_in(small.value):
                return True
    return False


def _names_in(node: cst.CSTNode) -> set:
    return {n.value for n in walk(node) if type(n) is cst.Name}


# The nodes that hold statements: a statement line (the comments it carries)
# lies only below them, so the index walks these and nothing else (LibCST's
# visitor went through every expression too, a fifth of a dense file's
# analysis).
_HOLDERS = (
    cst.Module,
    cst.BaseCompoundStatement,
    cst.BaseSuite,
    cst.Else,
    cst.Finally,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.MatchCase,
)


_HOLDS: Dict[type, bool] = {}


def _holds_no_statement(node: cst.CSTNode) -> bool:
    t = type(node)
    inside = _HOLDS.get(t)
    if inside is None:
        inside = _HOLDS[t] = issubclass(t, _HOLDERS)
    return not inside


def _statement_lines(module: cst.Module) -> Iterator[cst.SimpleStatementLine]:
    """Every statement line of the module."""
    for line, _ in _lines_and_below(module):
        yield line


def _lines_and_below(
    module: cst.Module,
) -> Iterator[Tuple[cst.SimpleStatementLine, Optional[cst.Comment]]]:
    """Every statement line, with the comment on the line just below it."""
    for node in walk(module, _holds_no_statement):
        t = type(node)
        if t is cst.Module or t is cst.IndentedBlock:
            body = node.body  # type: ignore[attr-defined]
            for i, line in enumerate(body):
                if type(line) is cst.SimpleStatementLine:
                    yield line, _below(body, i)


def _index(
    index: "CommentIndex", line: cst.SimpleStatementLine, below: Optional[cst.Comment] = None
) -> None:
    entries = _line_comments(line, below)
    comment = line.leading_lines[-1].comment if line.leading_lines else None
    if (
        comment is not None
        and len(line.body) == 1
        and isinstance(line.body[0], cst.Assign)
        and _rebinds_what_it_reads(line)
    ):
        # ``x = self.transformer(src=x)`` under its comment: before or after?
        # for a call that keeps the layout (``of_call``), both
        above = _parsed(comment)
        if above:
            index.rebound[id(line.body[0].value)] = above
    if not entries:
        return
    for small in line.body:
        index.by_stmt[id(small)] = entries
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
            targets = small.targets if isinstance(small, cst.Assign) else [small]
            names = {t.target.value for t in targets if isinstance(t.target, cst.Name)}
            names |= {t.target.attr.value for t in targets if isinstance(t.target, cst.Attribute)}
            index.by_value[id(small.value)] = (names, entries)


_GUARDS = 4  # the statements at a function's top read for a shape check
# ``x must have shape (n_seq, n_batch, n_feats)``, ``x should be of shape [B, L, D]``
_MUST_HAVE = re.compile(
    r"\b(\w+)\s+(?:must|should)\s+(?:have|be)\s+(?:of\s+)?shape\s*([(\[][^)\]]*[)\]])"
)


def _guards(statements) -> List[_Entry]:
    """A shape check opening a function, ``if len(x.shape) != 3: raise
    ValueError(f"x must have shape (n_seq, n_batch, n_feats) ...")`` or
    ``assert x.dim() == 3, "x must have shape (B, L, D)"``: the layout its
    message states for the name it names (grappa's ``GrappaTransformer``,
    release review 46)."""
    out: List[_Entry] = []
    for stmt in statements:
        message = None
        if isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock):
            inner = stmt.body.body
            if len(inner) == 1 and isinstance(inner[0], cst.SimpleStatementLine):
                small = inner[0].body[0]
                if isinstance(small, cst.Raise) and isinstance(small.exc, cst.Call):
                    args = small.exc.args
                    message = args[0].value if args else None
        elif isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assert):
            message = stmt.body[0].msg
        text = _literal_text(message)
        found = _MUST_HAVE.search(text) if text else None
        if found is None:
            continue
        roles = roles_of_names(_DIM.findall(found.group(2)))
        if useful(roles):
            out.append((message, {found.group(1): roles}))
    return out


def _literal_text(node) -> Optional[str]:
    """The text of a string literal, an f-string's literal parts."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.FormattedString):
        return "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
    if isinstance(node, cst.ConcatenatedString):
        left, right = _literal_text(node.left), _literal_text(node.right)
        return None if left is None or right is None else left + right
    return None


class CommentIndex:
    def __init__(self, module: cst.Module):
        self.module = module
        self.by_stmt: Dict[int, List[_Entry]] = {}
        self.by_value: Dict[int, Tuple[set, List[_Entry]]] = {}
        self.rebound: Dict[int, List[_Entry]] = {}  # the comment above ``x = f(x)``
        self._built = False
        self._functions: Dict[int, List[_Entry]] = {}
        self._unpacks: Dict[int, list] = {}

    def _build(self) -> None:
        if not self._built:
            self._built = True
            for line, below in _lines_and_below(self.module):
                _index(self, line, below)

    def of_value(self, value: cst.CSTNode, first: bool = False) -> Optional[Layout]:
        """``x = f(y)  # (B, L, E)`` (or the comment on the line above).
        ``first``: the first target of an unpacking (``x, lengths = f(y)  # T x
        B x C``), which only a comment naming no target describes."""
        self._build()
        found = self.by_value.get(id(value))
        if found is None:
            return None
        names, entries = found
        for comment, layouts in entries:
            for key, roles in layouts.items():
                if key is None or (key in names and not first):
                    return Layout(roles, comment, "shape comment")
        return None

    def of_call(self, value: cst.CSTNode) -> Optional[Layout]:
        """``x = f(y)  # (B, L, E)``, or the comment above it, also when the
        statement rebinds a name it reads (``x = self.transformer(src=x)``):
        for a call whose output keeps its input's layout, the comment speaks
        of both."""
        got = self.of_value(value)
        if got is not None:
            return got
        for comment, layouts in self.rebound.get(id(value), ()):
            if None in layouts:
                return Layout(layouts[None], comment, "shape comment")
        return None

    def named(self, stmt: Optional[cst.CSTNode], name: str) -> Optional[Layout]:
        """``out = attn(x, x, x)  # x: (L, N, E)``."""
        if stmt is None:
            return None
        self._build()
        for comment, layouts in self.by_stmt.get(id(stmt), ()):
            if name in layouts:
                return Layout(layouts[name], comment, "shape comment")
        return None

    def function_named(self, func: cst.FunctionDef, name: str) -> Optional[Layout]:
        """``def forward(self, x):  # x: (B, L, E)``, a comment opening the body, or a
        docstring line ``x: (B, L, E)``."""
        key = id(func)
        if key not in self._functions:
            self._functions[key] = self._function_entries(func)
        for comment, layouts in self._functions[key]:
            if name in layouts:
                return Layout(layouts[name], comment, "shape comment")
        return None

    @staticmethod
    def _function_entries(func: cst.FunctionDef) -> List[_Entry]:
        out: List[_Entry] = []
        body = func.body
        if isinstance(body, cst.IndentedBlock):
            out += _parsed(body.header.comment)
            if body.body:
                first = body.body[0]
                for line in getattr(first, "leading_lines", ()):
                    out += _parsed(line.comment)
                doc = func.get_docstring(clean=False)
                if doc and isinstance(first, cst.SimpleStatementLine):
                    node = first.body[0]
                    out += [
                        (DocLine(node, i, text), found) for i, text, found in _docstring_shapes(doc)
                    ]
            out += _guards(body.body[:_GUARDS])
        return out

    @staticmethod
    def param_comment(param: cst.Param) -> Optional[Layout]:
        """``tgt: Tensor,  # nq, bs, d_model`` in a signature written one
        parameter a line: the comment after the parameter's comma, also as a
        bare list of dimension names."""
        comma = param.comma
        ws = getattr(comma, "whitespace_after", None)
        comment = getattr(getattr(ws, "first_line", None), "comment", None)
        if comment is None:
            return None
        found = parse_shape_comment(comment.value)
        roles = found.get(None) or found.get(param.name.value)
        if roles is None:
            names = [n.strip() for n in comment.value.lstrip("#").split(",")]
            if len(names) < 2 or not all(_DIM.fullmatch(n) for n in names):
                return None
            roles = roles_of_names(names)
            if not useful(roles):
                return None
        return Layout(roles, comment, "shape comment")

    @staticmethod
    def annotation(param: cst.Param) -> Optional[Layout]:
        """jaxtyping ``Float[Tensor, "batch seq dim"]`` / torchtyping ``TensorType["b", "l", "e"]``."""
        ann = param.annotation
        if ann is None or not isinstance(ann.annotation, cst.Subscript):
            return None
        strings = [
            e.slice.value
            for e in ann.annotation.slice
            if isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.SimpleString)
        ]
        if not strings:
            return None
        if len(strings) == 1:
            names = re.split(r"\s+", str(strings[0].evaluated_value).strip())
        else:
            names = [str(s.evaluated_value) for s in strings]
        names = [n.lstrip("*#_").split("=")[0] for n in names]
        roles = roles_of_names(names)
        if not useful(roles):
            return None
        return Layout(roles, ann.annotation, "jaxtyping annotation")

    def unpackings(self, scope, name: str, flow) -> Iterator[Tuple[tuple, cst.CSTNode, object]]:
        """``B, L, D = name.shape`` / ``= name.size()`` in the function around
        ``scope``: (roles, the statement's value, the environment there)."""
        while scope is not None and scope.kind == "class":
            scope = scope.parent
        if scope is None:
            return
        key = id(scope)
        if key not in self._unpacks:
            self._unpacks[key] = _collect_unpacks(scope)
        for tensor, roles, value, env in self._unpacks[key]:
            if tensor == name:
                yield roles, value, env


def _collect_unpacks(scope) -> list:
    """``B, L, D = x.shape`` statements of the function ``scope`` (not of the
    functions and classes inside it), in the order of the source."""
    found: list = []
    root = scope.node

    def inner(node) -> bool:
        t = type(node)
        return (t is cst.FunctionDef and node is not root) or t is cst.ClassDef

    for node in walk_in_order(root, inner):
        if type(node) is not cst.Assign or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if isinstance(target, cst.Name):  # bs = x.shape[1]
            tensor, roles = _one_size(target.value, node.value)
            names = [target.value]
            if tensor is None:
                continue
        elif isinstance(target, (cst.Tuple, cst.List)):
            tensor, skipped = _shape_of(node.value), 0
            if tensor is None:  # ``batch, emb = tgt.shape[1:]``: the axes after the first
                skipped = _first_axis(node.value)
                tensor = _shape_of(node.value.value) if skipped else None
            if tensor is None:
                continue
            elements = target.elements
            if any(
                isinstance(e, cst.StarredElement) or not isinstance(e.value, cst.Name)
                for e in elements
            ):
                continue
            names = [e.value.value for e in elements]
            roles = roles_of_names([None] * skipped + [None if n == "_" else n for n in names])
            if sum(r is not None for r in roles) == 1 and "n" in (n.lower() for n in names):
                continue  # ``_, n, _ = x.shape``: ``n`` alone is torch's batch or einops' tokens
        else:
            continue
        if not useful(roles):
            continue
        env = _env_at(scope, names, node.value)
        if env is not None:
            found.append((tensor, roles, node, env))
    return found


def _env_at(scope, names, value):
    """The environment of the assignment of ``value`` to ``names``: found from
    the definitions in force at the end of the function, and back through
    the environments of those (``bsz, n, _ = x.size()`` twice in a function:
    the first is rebound by the second)."""
    for n in names:
        todo = list(scope.final_env.get(n, ()) or ())
        seen = set()
        while todo:
            d = todo.pop()
            if id(d) in seen or len(seen) > 64:
                continue
            seen.add(id(d))
            if d.node is value:
                return d.env
            if d.env is not None:
                todo.extend(d.env.get(n, ()) or ())
    return None


# the axis one size is read from, for the 3-D input of an attention module
_AXIS = {0: 0, 1: 1, -3: 0, -2: 1}


def _one_size(name: str, value: cst.BaseExpression) -> Tuple[Optional[str], tuple]:
    """``bs = x.shape[1]``, ``batch_size = x.size(0)``: (x, its roles) when
    the name is a batch size read from axis 0 or 1 (or -3, -2) of ``x``,
    whose other axes stay unknown: ``(?, N, ?)`` is sequence-first data, as
    the module's 3-D input.  ``n`` alone says nothing (the batch in torch's
    docs, the sequence in einops); a sequence length alone does not place
    the batch."""
    read = size_read(value)
    if read is None or not isinstance(read[0], cst.Name):
        return None, ()
    tensor, axis = read[0].value, _AXIS.get(read[1])
    role = roles_of_names([name])[0] if name.lower() != "n" else None
    if axis is None or role != BATCH:
        return None, ()
    if says_ids(read[0].value):
        # ``batch_size = text.size(0)`` of token ids: a 2-D ``(N, T)`` batch of
        # ids, whose later ``text.transpose(0, 1)`` is ``(T, N)`` (deep-phonemizer)
        if read[1] not in (0, 1):
            return None, ()
        roles = [None, None]
    else:
        roles = [None, None, None]
    roles[axis] = role
    return tensor, tuple(roles)


def _first_axis(value: cst.BaseExpression) -> int:
    """``k`` for ``x.shape[k:]`` (``x.size()[k:]``), ``k`` a small literal; 0
    for anything else."""
    if not (isinstance(value, cst.Subscript) and len(value.slice) == 1):
        return 0
    sl = value.slice[0].slice
    if not (isinstance(sl, cst.Slice) and sl.upper is None and sl.step is None):
        return 0
    lower = sl.lower
    if isinstance(lower, cst.Integer) and lower.value in ("1", "2"):
        return int(lower.value)
    return 0


def _shape_of(value: cst.BaseExpression) -> Optional[str]:
    if (
        isinstance(value, cst.Attribute)
        and value.attr.value == "shape"
        and isinstance(value.value, cst.Name)
    ):
        return value.value.value
    if (
        isinstance(value, cst.Call)
        and not value.args
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "size"
        and isinstance(value.func.value, cst.Name)
    ):
        return value.func.value.value
    return None


__all__ = ["CommentIndex", "lookup"]
