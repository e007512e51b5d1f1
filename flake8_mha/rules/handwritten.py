"""Masks applied with arithmetic in hand-written attention: MHA012, and the
additive case of MHA004 (``NumericZeroOneMask.on_call`` delegates here).

Both read ``scores.analysis_for(ctx)``: a softmax over attention scores and
the terms added or multiplied on the way (see ``flake8_mha/analysis/scores.py`` for
what counts as attention scores).  A term is a mask only when the mask
analysis knows its meaning (keep or ignore) and its kind (bool, float or
integer 0/1); an additive mask (-inf or large negative filled), a float bias,
a scale, a gate or an unknown tensor is never reported.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

import libcst as cst

from ..analysis.flow import CallSite, DefKind, lookup
from ..analysis.masks import (
    ADDITIVE,
    BOOL,
    FLOAT01,
    IGNORE,
    INT,
    KEEP,
    At,
    Mask,
    Sink,
    analysis_for,
)
from ..analysis.program.wrapped import annotate
from ..analysis.scores import Scores, Term
from ..analysis.scores import analysis_for as scores_for
from .base import Example, Report, Rule

_NUMERIC = (BOOL, FLOAT01, INT)


def _covered(term: Term) -> bool:
    """A -inf fill between the term's operation and the softmax removes the
    positions it masks: a fill whose mask cannot be read, or one that reads
    a name the term reads (the same mask, its complement, a union made from
    it).  A fill of another mask (the padding filled after a band was
    multiplied in: probe AA's AA10) removes other positions."""
    mine = _names(term.expr, term.env, term.scope)
    for mask, env, scope in term.covered:
        theirs = _names(mask, env, scope) if mask is not None else set()
        if not mine or not theirs or mine & theirs:
            return True
    return False


# names that say nothing of which mask a tensor is
_ROOTS = {"self", "torch", "F", "nn", "np", "math", "float", "int", "bool", "None", "True", "False"}


def _names(node, env, scope, depth: int = 0) -> set:
    """The names and ``self.<attr>`` a mask expression reads, and through
    the locals it reads, what they were bound to (three steps)."""
    out = set()
    for n in _walk_names(node):
        if isinstance(n, cst.Attribute):
            out.add("self." + n.attr.value)
            continue
        if n.value in _ROOTS:
            continue
        out.add(n.value)
        if depth < 3:
            for d in lookup(n.value, env, scope):
                if d.kind == DefKind.ASSIGN and d.node is not None:
                    out |= _names(d.node, d.env, d.scope, depth + 1)
    return out


def _walk_names(node):
    """The ``Name`` nodes below ``node``, and ``self.<attr>`` as one."""
    stack = [node]
    while stack:
        n = stack.pop()
        if (
            isinstance(n, cst.Attribute)
            and isinstance(n.value, cst.Name)
            and n.value.value == "self"
        ):
            yield n
        elif isinstance(n, cst.Name):
            yield n
        elif isinstance(n, cst.Attribute):
            stack.append(n.value)  # ``mask.float()``: the tensor, not the method's name
        elif not isinstance(n, (cst.Lambda, cst.FunctionDef)):
            stack.extend(n.children)


def mask_terms(ctx, site: CallSite, ops: Tuple[str, ...]) -> Iterator[Tuple[Scores, Term, Mask]]:
    """Terms of the softmax at ``site`` applied with one of ``ops`` whose value
    is a 0/1 or bool keep- or ignore-mask, not covered by a later -inf fill."""
    scores = scores_for(ctx).at(site)
    if scores is None or scores.opaque_call:
        return  # by use, made by a call given a mask or bias: it may mask them itself
    analysis = analysis_for(ctx)
    if _masked_additively(analysis, scores):
        return
    done = set()
    not_bool = _not_bool_here(scores.softmax)
    for term in scores.terms:
        if term.op not in ops or _covered(term) or id(term.at) in done:
            continue
        if not_bool & _names(term.expr, term.env, term.scope):
            continue  # ``if mask.dtype == torch.bool: <SDPA> else: scores + mask``
        mask = analysis.evaluator.eval(term.expr, At(term.env, term.scope, None, 0))
        if not _zero_one(mask) and term.op == "add":
            mask = _folded(analysis, term.expr, term.env, term.scope) or mask
        if not (
            _zero_one(mask)
            or (term.op in ("add", "sub") and _cast_comparison(mask))
            or (term.op == "mul" and _cast_comparison(mask) and _apart(scores, term))
        ):
            continue
        if term.op == "sub" and mask.kind == BOOL:
            continue  # torch refuses `-` on a bool tensor: it raises, nothing silent
        done.add(id(term.at))
        term.text = analysis.evaluator.text(
            term.at.target if isinstance(term.at, cst.AugAssign) else term.at
        )
        yield scores, term, mask


def _apart(scores: Scores, term: Term) -> bool:
    """A comparison multiplied into the scores that reads nothing the
    query-key product reads (``scores * (dist < cutoff)``, a radius of
    another tensor): a mask, whatever it means; ``s * (s > 0)`` of the
    scores themselves is no mask (probe AQ's AQ09)."""
    if scores.key is None or scores.by_use:
        return False
    product = _names(scores.key[0], scores.key[1], scores.key[2])
    return bool(product) and not (product & _names(term.expr, term.env, term.scope))


def _not_bool_here(site: CallSite) -> set:
    """The names a test around ``site`` says are no bool tensor there: the
    ``else`` of ``if m.dtype == torch.bool:``, the body of ``if m.dtype !=
    torch.bool:``, of ``if m.is_floating_point():`` or ``if
    torch.is_floating_point(m):``; a bool mask a caller hands never gets
    there, whatever the callers pass."""
    out = set()
    for test, polarity, _ in site.conds:
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, polarity = test.expression, not polarity
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            op, other = test.comparisons[0].operator, test.comparisons[0].comparator
            left = test.left
            if (
                isinstance(op, (cst.Equal, cst.NotEqual))
                and isinstance(left, cst.Attribute)
                and left.attr.value == "dtype"
                and isinstance(left.value, cst.Name)
                and _is_bool_dtype(other)
                and polarity == isinstance(op, cst.NotEqual)
            ):
                out.add(left.value.value)
        elif isinstance(test, cst.Call) and polarity and len(test.args) <= 1:
            func = test.func
            if isinstance(func, cst.Attribute) and func.attr.value == "is_floating_point":
                if not test.args and isinstance(func.value, cst.Name):
                    out.add(func.value.value)
                elif test.args and isinstance(test.args[0].value, cst.Name):
                    out.add(test.args[0].value.value)  # ``torch.is_floating_point(m)``
    return out


def _is_bool_dtype(node) -> bool:
    """``torch.bool``."""
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == "bool"
        and isinstance(node.value, cst.Name)
        and node.value.value == "torch"
    )


def _folded(analysis, expr, env, scope) -> Optional[Mask]:
    """T5's fold: a local bound once to a sum (``position_bias = bias +
    mask``) whose one 0/1 summand is a keep- or ignore-mask: adding the
    local to the scores adds that mask to them."""
    if not isinstance(expr, cst.Name):
        return None
    defs = lookup(expr.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
        return None
    value = defs[0].node
    summands: List[cst.BaseExpression] = []
    stack = [value]
    while stack and len(summands) < 8:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            stack.extend((node.left, node.right))
        else:
            summands.append(node)
    if len(summands) < 2:
        return None
    at = At(defs[0].env, defs[0].scope, None, 0)
    found = [m for m in (analysis.evaluator.eval(s, at) for s in summands) if _zero_one(m)]
    return found[0] if len(found) == 1 else None


def _zero_one(mask: Mask) -> bool:
    """A bool or 0/1 keep- or ignore-mask, not one filled to be additive."""
    return mask.meaning in (KEEP, IGNORE) and mask.kind in _NUMERIC and not mask.fill


def _cast_comparison(mask: Mask) -> bool:
    """A comparison, bool or cast to numbers, whatever it means (``(eta <=
    close).float()``): added to scores it shifts what it marks by 1 and
    removes nothing."""
    return mask.zero_one and mask.meaning is None and mask.kind in _NUMERIC and not mask.fill


def _masked_additively(analysis, scores: Scores) -> bool:
    """An additive mask also reaches these scores (a -inf mask added, or an
    added tensor of unknown kind named like a mask): it may remove the very
    positions a 0/1 mask was multiplied or added at, so nothing is reported
    (``attn *= tril(...); attn += triu(-inf)`` is correct code)."""
    for term in scores.terms:
        if term.op not in ("add", "sub"):
            continue
        at = At(term.env, term.scope, None, 0)
        mask = analysis.evaluator.eval(term.expr, at)
        if ADDITIVE in (mask.kind, mask.meaning):
            return True
        if term.op == "sub" and _big_times_ignore(analysis.evaluator, term.expr, at):
            return True  # GPT-2's ``w * b - 1e4 * (1 - b)``
        if mask.meaning is None and mask.kind is None:
            text = analysis.evaluator.text(term.expr).lower()
            if "mask" in text or "inf" in text:
                return True
    return False


def _big_times_ignore(evaluator, expr, at) -> bool:
    """``1e4 * (1 - b)`` of an ignore-mask, subtracted: a large negative
    where the mask ignores, the additive mask written the other way round."""
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply)):
        return False
    for big, other in ((expr.left, expr.right), (expr.right, expr.left)):
        if evaluator.is_big_negative(cst.UnaryOperation(cst.Minus(), big), at):
            return evaluator.eval(other, at).meaning == IGNORE
    return False


def term_evidence(ctx, scores: Scores, term: Term, mask: Mask, sink: str) -> dict:
    return _evidence(ctx, scores.softmax, term.expr, term.text, term.op, mask, sink)


def _evidence(ctx, site, expr, text: str, op: str, mask: Mask, sink: str) -> dict:
    """A term's evidence: the mask at ``expr`` applied with ``op`` to the
    scores softmaxed at ``site`` (or handed to a function that does)."""
    door = IGNORE if mask.meaning == IGNORE else KEEP
    evidence = analysis_for(ctx).evidence(Sink(site, "scores", sink, door, expr, False, text), mask)
    evidence["op"] = op
    evidence["call"] = text
    evidence["mask"]["causal"] = bool(mask.causal)
    return evidence


def _meaning_words(mask: Mask) -> str:
    """``keep-mask``, or for a comparison no name explains, what it is."""
    return f"{mask.meaning}-mask" if mask.meaning else "comparison (of unknown meaning)"


def _kind_words(mask: Mask) -> str:
    if mask.kind == BOOL:
        return "a bool"
    if mask.kind == INT:
        return "an integer 0/1"
    return f"a {mask.dtype or 'float'} 0/1"


# MHA004's additive case (the rule class lives with the other mask rules)
MESSAGE_ADD = (
    "{mask} is {kind} {meaning} {verb} the attention scores before softmax: "
    "masked positions are shifted by 1, not removed (fill them with -inf: "
    "scores.masked_fill({fix}, float('-inf')))"
)


def scores_added(rule: Rule, site: CallSite) -> Iterator[Report]:
    """MHA004: a bool or 0/1 mask added to (or subtracted from) attention scores."""
    for scores, term, mask in mask_terms(rule.ctx, site, ("add", "sub")):
        evidence = term_evidence(rule.ctx, scores, term, mask, "scores-add")
        yield annotate(_added(rule, term.at, evidence, mask, term.op), term)


def added_through(rule: Rule, ev) -> Iterator[Report]:
    """MHA004 at the call of a function that adds its parameter to its
    scores (a ``FillCall`` whose door is "add"): the caller's mask, judged as
    ``scores_added`` judges a term, and reported at the call."""
    mask = analysis_for(rule.ctx).evaluator.eval(ev.mask, At(ev.site.env, ev.site.scope, None, 0))
    if _zero_one(mask) or _cast_comparison(mask):
        evidence = _evidence(rule.ctx, ev.site, ev.mask, ev.text, "add", mask, "scores-add")
        yield _added(rule, ev.site.node, evidence, mask, "add")


def multiplied_through(rule: Rule, ev) -> Iterator[Report]:
    """MHA012 at the call of a function that multiplies its mask parameter
    into its scores before softmax (a ``FillCall`` whose door is "mul"): the
    caller's mask, judged as ``mask_terms`` judges a factor, reported at the
    call."""
    if ev.door != "mul":
        return
    mask = analysis_for(rule.ctx).evaluator.eval(ev.mask, At(ev.site.env, ev.site.scope, None, 0))
    if _zero_one(mask):
        yield rule.report(
            ev.site.node,
            _evidence(rule.ctx, ev.site, ev.mask, ev.text, "mul", mask, "scores-mul"),
            mask=analysis_for(rule.ctx).evaluator.describe(mask.origin),
            kind=_kind_words(mask),
            meaning=_meaning_words(mask),
        )


def _added(rule: Rule, at, evidence: dict, mask: Mask, op: str) -> Report:
    return rule.report(
        at,
        evidence,
        MESSAGE_ADD,
        mask=analysis_for(rule.ctx).evaluator.describe(mask.origin or mask.kind_origin),
        kind=_kind_words(mask),
        meaning=_meaning_words(mask),
        verb="added to" if op == "add" else "subtracted from",
        fix=_positions_to_remove(mask),
    )


def _positions_to_remove(mask: Mask) -> str:
    """The fill's condition: ``~mask`` of a bool keep-mask; ``mask == 0`` of
    a float or integer one, where ``~`` raises or gives -1/-2 (probe AC)."""
    if not mask.meaning:
        return "<the positions to remove>"
    if mask.kind == BOOL:
        return "~mask" if mask.meaning == KEEP else "mask"
    return "mask == 0" if mask.meaning == KEEP else "mask != 0"


class MaskMultipliedBeforeSoftmax(Rule):
    CODE = "MHA012"
    NAME = "mask-multiplied-before-softmax"
    MESSAGE = (
        "{mask} is {kind} {meaning} multiplied into the attention scores before "
        "softmax: masked positions get score 0 and weight exp(0), not 0 (fill them "
        "with -inf instead)"
    )
    WHAT = """
        Flags attention scores multiplied by a bool or 0/1 mask before the
        softmax: `scores * mask`, `mask * scores`, `scores *= mask`,
        `scores.mul_(mask)`, `torch.mul(scores, mask)`, with the mask's meaning
        known from the code (a triangle of ones, a pad-id comparison, a
        tokenizer `attention_mask`, a segment comparison).

        Attention scores are a pairwise product of two projections (`q @
        k.transpose(-2, -1)`, `.mT`, a key transposed in a local,
        `torch.matmul`/`torch.bmm` of the same, a two-operand `torch.einsum`
        such as `'bhqd,bhkd->bhqk'` or einops `einsum(q, k, '... i d, ... j d
        -> ... i j')`), scaled or not, that flows into a softmax
        over the last axis (`F.softmax(x, dim=-1)`, `torch.softmax`,
        `x.softmax(-1)`, an `nn.Softmax(dim=-1)` module built there or held
        on `self`, a function of the file, or one imported from another
        project file, that only returns that softmax of its first parameter,
        OpenFold's `softmax_no_cast(a)`, `return logits.softmax(dim=-1)`: a
        file that calls it must still name a trigger word in its code, or be
        let in by the project-aware gate, to be read at all), followed
        through locals, `scores = scores * ...`
        rebindings, augmented assignments and in-place methods.

        Attention is also recognised by use, however its scores were made
        (`rotation_term * w1 - distance_term * w2`, a distance, a learned
        projection): a softmax over the last axis whose result is multiplied
        with values (`w @ v`, `torch.matmul(w, v)`, `w.bmm(v)`, a
        two-operand einsum summing the weights' last axis), also after
        dropout, a cast or through locals. The weights times themselves
        (`s @ s.transpose(1, 2)`) are not values.
        """
    WHY = """
        Multiplying by a mask sets the masked scores to 0, and softmax turns a
        score of 0 into the weight exp(0) = 1 before normalising: masked
        positions keep a share of the attention comparable to any other key.
        Padding leaks into every real token and a causal triangle lets
        queries see the future. Nothing raises.
        """
    EXAMPLE = """
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        scores = scores * causal[:T, :T]                 # tril of ones: 1 = keep
        attn = scores.softmax(dim=-1) @ v
        """
    USE_INSTEAD = """
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        scores = scores.masked_fill(causal[:T, :T] == 0, float("-inf"))
        attn = scores.softmax(dim=-1) @ v
        """
    DECISIONS = """
        - Only before the softmax: multiplying the softmax's *result* by a mask
          (then renormalising or not) is a different design, not this rule.
        - A factor whose meaning is not known as a mask is never reported: a
          float scale (`* self.scale`, `* d ** -0.5`), a learned gate
          (`torch.sigmoid(self.gate)`), a parameter named `mask` of unknown
          kind, a bias. A comparison is a mask whatever it means, bool or
          cast to numbers: `scores * (torch.cdist(pos, pos) < cutoff)` zeroes
          the far atoms' scores and leaves them weight exp(0), reported as a
          comparison of unknown meaning (probe AQ's AQ09), unless it reads
          what the query-key product reads: `s * (s > 0)` rectifies the
          scores, it masks nothing.
        - Not reported when the masked positions are filled with -inf (or
          `finfo.min`, or a constant at or below -1000) between the
          multiplication and the softmax (`masked_fill`, `torch.where`, in
          place too): the fill removes them whatever the product did. A
          `masked_fill` whose value the analysis cannot read (an imported
          `-INF` constant) counts as such a fill; one known to be small (`0`)
          does not, nor does a fill of another mask: one whose mask reads
          none of the names (and none of what the locals it reads were
          bound to) the product's mask reads removes other positions (a
          padding mask filled after a band was multiplied in: probe AA).
          Nor when an additive mask (-inf filled, or an added tensor
          of unknown kind named like a mask) also reaches the scores: it may
          remove the very positions the product zeroed (`attn *= tril(...)`
          then `attn += triu(-inf)` is correct), nor when a large value times
          the mask's complement is subtracted (GPT-2's `w * b - 1e4 * (1 -
          b)`: the masked scores are -1e4).
        - The softmax's result need not be multiplied with values: a softmax
          over the key axis of a query-key product is attention already. A
          softmax over another axis (`dim=1`) is not.
        - Scores of any other origin count only by use: a softmax whose result
          feeds a loss, `argmax` routing, sampling or a `return` stays
          unjudged. Where two tensors of unknown origin meet, the one the mask
          analysis knows as a mask is the term. Scores made by a call the
          analysis cannot read and given a mask or bias (`maybe_add_mask(attn,
          attn_bias)`) may already be masked with -inf: silent.
        - A bool or 0/1 mask *added* to the scores is MHA004's (its additive
          case), with the same notion of attention scores.
        - Across functions and files: a function that multiplies a parameter
          named a mask into its scores before softmax hands the judgement to
          its callers. The caller's mask is judged and reported at each call,
          naming the chain (`the call reaches scores * mask at attention.py:13
          through GatedAttention.forward()`), and the product is then not
          judged from the join of the callers; a cast around the factor
          (`scores * mask[:, None, :].float()`) is the mask
          (`fixtures/program_calls/cast_score_masks/`). A factor named otherwise (a
          gate, a scale) is followed in its own file only. The output
          multiplied by the same mask after the softmax (`torch.bmm(w, v) *
          x_mask`, `w` the softmax's result) is no second product of the
          scores (VITS' attention, `tests/test_program_multiplied_modules.py`).
        - The scores handed to a helper whose one return multiplies two of its
          parameters (`gated_softmax(scores, valid)`, returning `(scores *
          valid).softmax(dim=-1)`), of this file or another project file: the
          call is read as that product written in the caller, with the
          caller's scores and mask, and reported at the call, naming the
          helper (`the call reaches scores * valid at ops.py:8 through
          gated_softmax()`). MHA004 reads a helper that adds them
          (`add_bias(scores, mask)`) the same way. When that helper's caller
          takes the mask from its own callers (`scores = gate_scores(scores,
          keep[:, None, :].float())`, `keep` a parameter), the product
          reaches the caller's callers too, and a 0/1 mask they hand in is
          reported at their call, naming the chain; the factor must be named
          a mask there, or be a local made from one by `expand`, `reshape` or
          `view` (`gate = keep[:, None, None, :].expand(B, H, S, S).reshape(B *
          H, S, S)`; `fixtures/program_calls/gated_chains/`).
        - Scores a helper masks and returns, softmaxed by its caller (`def
          masked_scores(q, k, valid): return (q @ k.transpose(-2, -1)) *
          valid[:, None, None, :]`, then `masked_scores(q, k,
          valid).softmax(dim=-1)`): the product counts at each call whose
          result is softmaxed (directly, or through a local bound only to
          it), in the helper's file or another; a caller that returns the
          result hands the question to its own callers, and any other use (a
          sigmoid gate) is not judged. The helper must softmax nothing
          itself and multiply the term in its one `return`
          (`fixtures/program_calls/returned_scores/`).
        - A comparison whose meaning the code does not state (`items > 0` on a
          name not known to hold token ids) is not known as a mask, so it is
          not reported, even though any bool multiplied into scores is wrong.
          On token ids (`seq`, `input_ids`, `tokens`), which are never
          negative, `seq > 0` is `seq != 0`: a keep-mask (SASRec, BERT4Rec).
        - The attention's output zeroed by the mask after the product with
          the values (`out = out * keep[:, None, :, None]` after `out =
          einsum("bhqk,bhkd->bhqd", attn, v)`) is right and common, and no
          second product of the scores: the scores' own product is still
          judged (probe AO's AO24, `fixtures/program_calls/set_outputs/`).
        """
    VALID = [
        "import math\n"
        "def attend(q, k, v, tokens, pad_id):\n"
        "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
        "    keep = tokens != pad_id\n"
        "    scores = scores.masked_fill(~keep[:, None, None, :], float('-inf'))\n"
        "    return scores.softmax(-1) @ v\n",
        "import torch\n"
        "def attend(q, k, v, scale):\n"
        "    scores = torch.matmul(q, k.transpose(-2, -1)) * scale\n"
        "    return torch.softmax(scores, dim=-1) @ v\n",
        "import torch\n"
        "def attend(q, k, v, tokens, pad_id):\n"
        "    keep = (tokens != pad_id).float()\n"
        "    probs = torch.softmax(q @ k.transpose(-2, -1), dim=-1) * keep[:, None, None, :]\n"
        "    return probs @ v\n",
    ]
    INVALID = [
        Example(
            "import math\nimport torch\n"
            "def attend(q, k, v, T):\n"
            "    causal = torch.tril(torch.ones(T, T))\n"
            "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
            "    scores = scores * causal\n"
            "    return scores.softmax(dim=-1) @ v\n",
            6,
            14,
        ),
        Example(
            "import torch\n"
            "def attend(q, k, v, tokens, pad_id):\n"
            "    keep = tokens != pad_id\n"
            "    scores = torch.einsum('bhqd,bhkd->bhqk', q, k)\n"
            "    scores *= keep[:, None, None, :]\n"
            "    return torch.softmax(scores, dim=-1) @ v\n",
            5,
            5,
        ),
    ]

    def on_fill_call(self, ev) -> Iterator[Report]:
        """A call of a project function that multiplies its mask parameter
        into its scores before softmax: the caller's mask, judged there."""
        yield from multiplied_through(self, ev)

    def on_call(self, site: CallSite) -> Iterator[Report]:
        analysis = analysis_for(self.ctx)
        for scores, term, mask in mask_terms(self.ctx, site, ("mul",)):
            report = self.report(
                term.at,
                term_evidence(self.ctx, scores, term, mask, "scores-mul"),
                mask=analysis.evaluator.describe(mask.origin or mask.kind_origin),
                kind=_kind_words(mask),
                meaning=_meaning_words(mask),
            )
            yield annotate(report, term)  # ``gated_softmax(s, valid)``: names the helper


__all__: List[str] = ["MaskMultipliedBeforeSoftmax", "scores_added", "mask_terms"]
