"""torch_api is the one description of torch's API (issue 11): the binder,
the facts the readers take from it, and no second copy of a signature or a
list of mask arguments elsewhere in the package.  No torch needed."""
from __future__ import annotations

import ast
import pathlib

import pytest

from flake8_mha.core import torch_api
from flake8_mha.core.torch_api import MaskConvention

ROOT = pathlib.Path(__file__).resolve().parent.parent
SDPA = torch_api.SDPA_SIGNATURE


def _bind(*arguments):
    return SDPA.bind(list(arguments))


def test_binder_positional_then_keyword():
    b = _bind((None, ""), (None, ""), (None, ""), (None, ""), ("is_causal", ""))
    assert dict(b.slots) == {"query": 0, "key": 1, "value": 2, "attn_mask": 3, "is_causal": 4}
    assert (b.star, b.double_star, b.positional_count) == (False, False, 4)


def test_binder_stops_binding_positions_after_a_star():
    b = _bind((None, ""), (None, "*"), (None, ""))
    assert dict(b.slots) == {"query": 0}
    assert b.star and b.maybe_given("attn_mask") and not b.double_star


def test_binder_double_star_and_skip():
    sig = torch_api.MULTIHEAD_ATTENTION.init
    b = sig.bind([(None, ""), (None, ""), (None, "**")], skip=1)
    assert dict(b.slots) == {"num_heads": 0, "dropout": 1}
    assert b.double_star and b.maybe_given("batch_first")


def test_signature_positions_are_torch_order():
    assert SDPA.position("attn_mask") == 3 and SDPA.position("dropout_p") == 4
    assert torch_api.WHERE_SIGNATURE.position("condition") == 0


@pytest.mark.parametrize("spec", list(torch_api.MODULES.values()), ids=lambda s: s.name)
def test_mask_arguments_and_flags_are_forward_parameters(spec):
    names = spec.forward.names
    assert set(spec.mask_args) <= set(names)
    assert set(spec.padding_mask_args) <= set(spec.mask_args)
    assert spec.attn_mask_args + spec.padding_mask_args == tuple(
        a for a in spec.mask_args if a not in spec.padding_mask_args) + spec.padding_mask_args
    for pair in spec.causal_pairs:
        assert pair.flag in names and pair.mask in spec.attn_mask_args
    assert spec.mask_convention is MaskConvention.IGNORE
    assert torch_api.SDPA_MASK_CONVENTION is MaskConvention.ATTEND


def test_the_sanitizer_and_the_witnesses_read_torch_api():
    from flake8_mha import sanitizer
    from flake8_mha.confirm.witnesses import _common

    assert sanitizer.MODULE_CLASSES is torch_api.MODULE_NAMES
    assert _common.MODULE_KINDS is torch_api.MODULE_NAMES
    assert _common.SDPA == torch_api.SDPA_NAME
    for kind, options in _common.FORWARD_ARGS.items():
        spec = torch_api.BY_NAME[kind]
        assert set(spec.mask_args) <= set(options)
        assert {p.flag for p in spec.causal_pairs} <= set(options)


# -- no second copy --------------------------------------------------------------------

MASK_FACTS = set(torch_api.ATTN_MASK_ARGS) | set(torch_api.PADDING_MASK_ARGS) | {
    pair.flag for spec in torch_api.MODULES.values() for pair in spec.causal_pairs}
SIGNATURES = [sig.names for spec in torch_api.MODULES.values() for sig in (spec.init, spec.forward)]
SIGNATURES.append(SDPA.names)
NOT_YET: set = set()  # every known copy is gone: nothing is exempt


def _copy_of_a_fact(words) -> bool:
    """A list of mask arguments / causal flags, or a signature's positional order."""
    if set(words) <= MASK_FACTS:
        return True
    return any(len(words) <= len(names) and tuple(words) == names[:len(words)]
               for names in SIGNATURES)


def _spelled_signatures(path: pathlib.Path):
    """Tuples/lists/sets of three or more string literals that copy torch_api's facts."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 3:
            words = [e.value for e in node.elts
                     if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(words) == len(node.elts) and _copy_of_a_fact(words):
                yield node.lineno, words


def test_no_module_but_torch_api_spells_out_torch_signatures():
    found = []
    for path in sorted((ROOT / "flake8_mha").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "flake8_mha/core/torch_api.py" or rel in NOT_YET:
            continue
        found += [f"{rel}:{line}: {words}" for line, words in _spelled_signatures(path)]
    assert not found, "read these from flake8_mha.core.torch_api:\n" + "\n".join(found)


def test_the_copy_finder_finds_the_copies_it_is_for(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("X = ('attn_mask', 'src_mask', 'mask')\n"
                    "Y = ('query', 'key', 'value', 'attn_mask')\n"
                    "Z = ('dropout', 'batch_first', 'bias')\n")
    assert [line for line, _ in _spelled_signatures(path)] == [1, 2]
