"""What torch is: qualified names, signatures (positional orders), defaults
and the mask convention of every argument.

The one description of torch 2.13's public attention API in this project:
the analyzer, the fixes, the confirmer's witnesses and the runtime sanitizer
all read it from here.  This module never imports torch (nor LibCST); it is
checked against the installed torch by ``tests/test_torch_api.py`` when
torch is available."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence, Tuple

_NO_DEFAULT = object()


class MaskConvention(enum.Enum):
    """What a bool ``True`` means in a mask argument."""

    IGNORE = "ignore"  # True = do not attend (nn.MultiheadAttention, the Transformer modules)
    ATTEND = "attend"  # True = attend (scaled_dot_product_attention)


# One argument of a call, as the binder sees it: its keyword (None when
# positional) and its star ("" for a plain argument, "*" or "**").
Argument = Tuple[Optional[str], str]


@dataclass(frozen=True)
class Binding:
    """Which argument of a call each parameter received.

    ``slots`` maps a parameter name to the index of its argument in the
    call.  Positional arguments after a ``*args`` splat are not bound (their
    positions are unknown); ``star``/``double_star`` say whether a splat
    could be carrying any parameter not bound."""

    slots: Mapping[str, int]
    star: bool
    double_star: bool
    positional_count: int

    def maybe_given(self, name: str) -> bool:
        return name in self.slots or self.star or self.double_star


@dataclass(frozen=True)
class Signature:
    """Parameters in positional order with their defaults."""

    params: Tuple[Tuple[str, object], ...]

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(name for name, _ in self.params)

    def position(self, name: str) -> int:
        """The 0-based positional index of parameter ``name``."""
        return self.names.index(name)

    def default(self, name: str) -> object:
        for pname, default in self.params:
            if pname == name:
                return default
        raise KeyError(name)

    def has_default(self, name: str) -> bool:
        return self.default(name) is not _NO_DEFAULT

    def defaults(self) -> Dict[str, object]:
        """Every parameter that has a default, with it."""
        return {name: d for name, d in self.params if d is not _NO_DEFAULT}

    def bind(self, arguments: Sequence[Argument], skip: int = 0) -> Binding:
        """The one argument binder: bind a call's arguments (keyword, star) to
        this signature, leaving out its first ``skip`` parameters (``self``)."""
        names = self.names[skip:]
        slots: Dict[str, int] = {}
        star = double_star = False
        positional = 0
        for index, (keyword, splat) in enumerate(arguments):
            if splat == "*":
                star = True
            elif splat == "**":
                double_star = True
            elif keyword is not None:
                slots[keyword] = index
            else:
                if not star and positional < len(names):
                    slots.setdefault(names[positional], index)
                positional += 1
        return Binding(slots, star, double_star, positional)


def _sig(*params: object) -> Signature:
    out = []
    for p in params:
        if isinstance(p, tuple):
            out.append(p)
        else:
            out.append((p, _NO_DEFAULT))
    return Signature(tuple(out))


@dataclass(frozen=True)
class CausalPair:
    """An ``*_is_causal`` flag and the mask argument it must come with."""

    flag: str
    mask: str


@dataclass(frozen=True)
class ModuleSpec:
    name: str  # short class name, e.g. "MultiheadAttention"
    init: Signature
    forward: Signature
    embed_param: Optional[str]  # "embed_dim" / "d_model"
    heads_param: Optional[str]  # "num_heads" / "nhead"
    has_batch_first: bool
    # forward mask arguments, in signature order, all read in ``mask_convention``
    mask_args: Tuple[str, ...] = ()
    padding_mask_args: Tuple[str, ...] = ()  # the (N, S) key padding masks among mask_args
    causal_pairs: Tuple[CausalPair, ...] = ()
    mask_convention: MaskConvention = MaskConvention.IGNORE

    @property
    def qualname(self) -> str:
        return "torch.nn." + self.name

    @property
    def attn_mask_args(self) -> Tuple[str, ...]:
        """The mask arguments that are not key padding masks, in signature order."""
        return tuple(a for a in self.mask_args if a not in self.padding_mask_args)


# the settings of ``nn.MultiheadAttention`` that keep its inference fastpath off,
# with the value that does (TORCH_FACTS, "fastpath"; ``kdim``/``vdim`` keep it off
# when they differ from ``embed_dim``, and ``batch_first=False`` too)
FASTPATH_BLOCKERS = {"bias": False, "add_bias_kv": True, "add_zero_attn": True}

MULTIHEAD_ATTENTION = ModuleSpec(
    name="MultiheadAttention",
    init=_sig(
        "embed_dim",
        "num_heads",
        ("dropout", 0.0),
        ("bias", True),
        ("add_bias_kv", False),
        ("add_zero_attn", False),
        ("kdim", None),
        ("vdim", None),
        ("batch_first", False),
        ("device", None),
        ("dtype", None),
    ),
    forward=_sig(
        "query",
        "key",
        "value",
        ("key_padding_mask", None),
        ("need_weights", True),
        ("attn_mask", None),
        ("average_attn_weights", True),
        ("is_causal", False),
    ),
    embed_param="embed_dim",
    heads_param="num_heads",
    has_batch_first=True,
    mask_args=("key_padding_mask", "attn_mask"),
    padding_mask_args=("key_padding_mask",),
    causal_pairs=(CausalPair("is_causal", "attn_mask"),),
)

_LAYER_INIT_TAIL = (
    ("dim_feedforward", 2048),
    ("dropout", 0.1),
    ("activation", "relu"),
    ("layer_norm_eps", 1e-5),
    ("batch_first", False),
    ("norm_first", False),
    ("bias", True),
    ("device", None),
    ("dtype", None),
)

TRANSFORMER_ENCODER_LAYER = ModuleSpec(
    name="TransformerEncoderLayer",
    init=_sig("d_model", "nhead", *_LAYER_INIT_TAIL),
    forward=_sig("src", ("src_mask", None), ("src_key_padding_mask", None), ("is_causal", False)),
    embed_param="d_model",
    heads_param="nhead",
    has_batch_first=True,
    mask_args=("src_mask", "src_key_padding_mask"),
    padding_mask_args=("src_key_padding_mask",),
    causal_pairs=(CausalPair("is_causal", "src_mask"),),
)

_DECODER_FORWARD = _sig(
    "tgt",
    "memory",
    ("tgt_mask", None),
    ("memory_mask", None),
    ("tgt_key_padding_mask", None),
    ("memory_key_padding_mask", None),
    ("tgt_is_causal", False),
    ("memory_is_causal", False),
)
_DECODER_MASKS = ("tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask")
_DECODER_PADDING = ("tgt_key_padding_mask", "memory_key_padding_mask")
_DECODER_CAUSAL = (
    CausalPair("tgt_is_causal", "tgt_mask"),
    CausalPair("memory_is_causal", "memory_mask"),
)

TRANSFORMER_DECODER_LAYER = ModuleSpec(
    name="TransformerDecoderLayer",
    init=_sig("d_model", "nhead", *_LAYER_INIT_TAIL),
    forward=_DECODER_FORWARD,
    embed_param="d_model",
    heads_param="nhead",
    has_batch_first=True,
    mask_args=_DECODER_MASKS,
    padding_mask_args=_DECODER_PADDING,
    causal_pairs=_DECODER_CAUSAL,
)

TRANSFORMER_ENCODER = ModuleSpec(
    name="TransformerEncoder",
    init=_sig(
        "encoder_layer",
        "num_layers",
        ("norm", None),
        ("enable_nested_tensor", True),
        ("mask_check", True),
    ),
    forward=_sig("src", ("mask", None), ("src_key_padding_mask", None), ("is_causal", None)),
    embed_param=None,
    heads_param=None,
    has_batch_first=False,
    mask_args=("mask", "src_key_padding_mask"),
    padding_mask_args=("src_key_padding_mask",),
    causal_pairs=(CausalPair("is_causal", "mask"),),
)

TRANSFORMER_DECODER = ModuleSpec(
    name="TransformerDecoder",
    init=_sig("decoder_layer", "num_layers", ("norm", None)),
    forward=_sig(
        "tgt",
        "memory",
        ("tgt_mask", None),
        ("memory_mask", None),
        ("tgt_key_padding_mask", None),
        ("memory_key_padding_mask", None),
        ("tgt_is_causal", None),
        ("memory_is_causal", False),
    ),
    embed_param=None,
    heads_param=None,
    has_batch_first=False,
    mask_args=_DECODER_MASKS,
    padding_mask_args=_DECODER_PADDING,
    causal_pairs=_DECODER_CAUSAL,
)

TRANSFORMER = ModuleSpec(
    name="Transformer",
    init=_sig(
        ("d_model", 512),
        ("nhead", 8),
        ("num_encoder_layers", 6),
        ("num_decoder_layers", 6),
        ("dim_feedforward", 2048),
        ("dropout", 0.1),
        ("activation", "relu"),
        ("custom_encoder", None),
        ("custom_decoder", None),
        ("layer_norm_eps", 1e-5),
        ("batch_first", False),
        ("norm_first", False),
        ("bias", True),
        ("device", None),
        ("dtype", None),
    ),
    forward=_sig(
        "src",
        "tgt",
        ("src_mask", None),
        ("tgt_mask", None),
        ("memory_mask", None),
        ("src_key_padding_mask", None),
        ("tgt_key_padding_mask", None),
        ("memory_key_padding_mask", None),
        ("src_is_causal", None),
        ("tgt_is_causal", None),
        ("memory_is_causal", False),
    ),
    embed_param="d_model",
    heads_param="nhead",
    has_batch_first=True,
    mask_args=(
        "src_mask",
        "tgt_mask",
        "memory_mask",
        "src_key_padding_mask",
        "tgt_key_padding_mask",
        "memory_key_padding_mask",
    ),
    padding_mask_args=("src_key_padding_mask", "tgt_key_padding_mask", "memory_key_padding_mask"),
    causal_pairs=(CausalPair("src_is_causal", "src_mask"),) + _DECODER_CAUSAL,
)

MODULES: Dict[str, ModuleSpec] = {
    spec.qualname: spec
    for spec in (
        MULTIHEAD_ATTENTION,
        TRANSFORMER_ENCODER_LAYER,
        TRANSFORMER_DECODER_LAYER,
        TRANSFORMER_ENCODER,
        TRANSFORMER_DECODER,
        TRANSFORMER,
    )
}

SDPA_QUALNAME = "torch.nn.functional.scaled_dot_product_attention"
SDPA_SIGNATURE = _sig(
    "query",
    "key",
    "value",
    ("attn_mask", None),
    ("dropout_p", 0.0),
    ("is_causal", False),
    ("scale", None),
    ("enable_gqa", False),
)
SDPA_NAME = "scaled_dot_product_attention"
# torch.where(condition, input, other): keeps ``input`` where condition is True
WHERE_QUALNAME = "torch.where"
WHERE_SIGNATURE = _sig("condition", "input", "other")
SDPA_MASK_CONVENTION = MaskConvention.ATTEND  # a bool attn_mask keeps where True

GENERATE_SQUARE_SUBSEQUENT_MASK = "torch.nn.Transformer.generate_square_subsequent_mask"
MODULE_LIST = "torch.nn.ModuleList"
MODULE = "torch.nn.Module"
DROPOUT = "torch.nn.Dropout"

# Other public paths that name the same objects.
_ALIASES = {
    "torch.nn.modules.activation.MultiheadAttention": "torch.nn.MultiheadAttention",
    "torch.nn.modules.MultiheadAttention": "torch.nn.MultiheadAttention",
    "torch.nn.modules.container.ModuleList": MODULE_LIST,
    "torch.nn.modules.ModuleList": MODULE_LIST,
    "torch.nn.modules.module.Module": MODULE,
    "torch.nn.modules.Module": MODULE,
    "torch.nn.modules.dropout.Dropout": DROPOUT,
    "torch.nn.modules.Dropout": DROPOUT,
    "torch._C._nn.scaled_dot_product_attention": SDPA_QUALNAME,
}
# OpenMMLab's containers (mmdet, mmseg, mmaction, mmocr, mmpretrain build their
# layers in them): subclasses of torch's that only add ``init_cfg``, and hold,
# run and iterate their modules as torch's do
for _where in ("mmengine.model", "mmengine.model.base_module"):
    _ALIASES[_where + ".ModuleList"] = MODULE_LIST
    _ALIASES[_where + ".Sequential"] = "torch.nn.Sequential"
    _ALIASES[_where + ".ModuleDict"] = "torch.nn.ModuleDict"
for _spec in list(MODULES.values()):
    _ALIASES["torch.nn.modules.transformer." + _spec.name] = _spec.qualname
    _ALIASES["torch.nn.modules." + _spec.name] = _spec.qualname
    _ALIASES["torch.nn.modules.transformer.Transformer.generate_square_subsequent_mask"] = (
        GENERATE_SQUARE_SUBSEQUENT_MASK
    )


def canonical(qualname: Optional[str]) -> Optional[str]:
    """Map any public spelling of a torch object to its canonical name."""
    if qualname is None:
        return None
    return _ALIASES.get(qualname, qualname)


def module_spec(qualname: Optional[str]) -> Optional[ModuleSpec]:
    return MODULES.get(canonical(qualname) or "")


# Short class names (``"MultiheadAttention"``) -> spec, for the runtime side
# (the witnesses and the sanitizer know classes, not qualified names).
BY_NAME: Dict[str, ModuleSpec] = {spec.name: spec for spec in MODULES.values()}


# the attention modules torch's ``__init__`` of a layer builds on ``self``
INNER_ATTENTION = {
    "TransformerEncoderLayer": ("self_attn",),
    "TransformerDecoderLayer": ("self_attn", "multihead_attn"),
}


_ENCODER_PARTS = {
    "linear1": "Linear",
    "linear2": "Linear",
    "norm1": "LayerNorm",
    "norm2": "LayerNorm",
    "dropout": "Dropout",
    "dropout1": "Dropout",
    "dropout2": "Dropout",
    "activation": "ReLU",
}
# the other modules it builds there, by the torch class each is (all keep
# the layout of what they are fed)
LAYER_PARTS = {
    "TransformerEncoderLayer": _ENCODER_PARTS,
    "TransformerDecoderLayer": {**_ENCODER_PARTS, "norm3": "LayerNorm", "dropout3": "Dropout"},
}
MODULE_NAMES: Tuple[str, ...] = tuple(BY_NAME)


def _union(parts) -> Tuple[str, ...]:
    out: Dict[str, None] = {}
    for part in parts:
        out.update(dict.fromkeys(part))
    return tuple(out)


# Every (L, S)-style mask argument name, and every key padding mask name, of the modules.
ATTN_MASK_ARGS: Tuple[str, ...] = _union(spec.attn_mask_args for spec in MODULES.values())
PADDING_MASK_ARGS: Tuple[str, ...] = _union(spec.padding_mask_args for spec in MODULES.values())


def forward_options(spec: ModuleSpec) -> Tuple[str, ...]:
    """A module's forward parameters beyond its input tensors (those with a default)."""
    return tuple(name for name in spec.forward.names if spec.forward.has_default(name))


# Words that must occur in a file for any rule to have something to say.
# The pre-filter in engine.py skips a file that has none of them.
TRIGGER_WORDS = (
    "MultiheadAttention",
    "Transformer",  # TransformerEncoderLayer, ... and nn.Transformer
    "scaled_dot_product_attention",
    "masked_fill",  # hand-written attention: a mask applied with -inf (MHA003)
    "softmax",  # hand-written attention: masks applied with arithmetic (MHA004, MHA012)
    "Softmax",  # the same through BERT's nn.Softmax(dim=-1)(scores)
    # grouped-query attention written by hand (MHA013, MHA904): KV head counts and repeat
    # factors (n_kv_heads, repeat_kv(x, n_rep)); enable_gqa comes with SDPA's name.  Each word
    # costs about 0.7 ms per MB of every file flake8 reads: keep the list short.
    "kv_heads",
    "n_rep",
)
