"""A runtime sanitizer for attention, in the spirit of the address sanitizer.

    with flake8_mha.sanitize():          # collect reports
        model(batch)
    with flake8_mha.sanitize(mode="raise"):  # raise on the first report (CI)
        model(batch)
    pytest -p flake8_mha.sanitizer       # or: pytest --mha-sanitize

While active it wraps ``nn.MultiheadAttention.forward``, the Transformer
modules' ``forward`` and ``F.scaled_dot_product_attention`` (restored on
exit; nothing is wrapped while no session is active) and reports what it
observes in real values, with the codes of the static rules, at the user's
call that decided the value (``_decider``: past the helpers and layers that
only pass the mask or flag on), and where it reached torch:

- MHA011 a query whose keys are all masked (NaN out of MHA, zeros out of SDPA)
- MHA005 ``is_causal=True`` without a mask on a call that ran: only the
  inference fastpath accepts that, and it ignores the hint
- MHA004 a float mask holding only 0 and 1 (added, not applied); an integer mask
- MHA007 SDPA with ``dropout_p > 0`` under no_grad or inside a module in eval
- MHA002 / MHA003 (heuristic, with its evidence) a bool padding mask in the
  other module's convention
- MHA001 a sequence-first module fed batch-first input, seen from the shape
  of its key padding mask

torch is imported only when a session starts.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .core import torch_api
from .core.torch_api import MaskConvention

__all__ = ["sanitize", "SanitizerReport", "SanitizerError"]

_LOCK = threading.RLock()
_SESSIONS: List["sanitize"] = []
_ORIGINALS: Dict[Tuple[Any, str], Callable] = {}
_LOCAL = threading.local()
_HERE = os.path.dirname(os.path.abspath(__file__))

# What is wrapped, each forward's mask arguments, their conventions and the
# causal flags: all from torch_api, the project's one description of torch.
MODULE_CLASSES = torch_api.MODULE_NAMES
SDPA = torch_api.SDPA_NAME


@dataclass(frozen=True)
class SanitizerReport:
    """``filename:lineno`` is the user's call that decided the value (the mask,
    the flag); ``via``, when it differs, is where a shared helper or a layer
    handed it to torch."""

    code: str
    message: str
    filename: str
    lineno: int
    api: str
    details: Dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    via: Optional[Tuple[str, int]] = None

    def text(self) -> str:
        out = f"{self.filename}:{self.lineno}: {self.code} {self.api}: {self.message}"
        if self.via is not None:
            out += f"; the call reaches {self.api} at {self.via[0]}:{self.via[1]}"
        return out


class SanitizerError(AssertionError):
    def __init__(self, report: SanitizerReport):
        super().__init__(report.text())
        self.report = report


class sanitize:
    """Context manager (and decorator) that activates the sanitizer.

    ``mode="collect"`` gathers reports in ``.reports``; ``mode="raise"``
    raises ``SanitizerError`` at the first one. ``codes`` limits the checks.
    """

    def __init__(self, mode: str = "collect", codes: Optional[Sequence[str]] = None):
        if mode not in ("collect", "raise"):
            raise ValueError("mode must be 'collect' or 'raise'")
        self.mode = mode
        self.codes = set(codes) if codes else None
        self.reports: List[SanitizerReport] = []
        self._seen: set = set()

    def __enter__(self) -> "sanitize":
        with _LOCK:
            if not _SESSIONS:
                try:
                    _install()
                except BaseException:  # all or nothing: no half-installed wrappers
                    _uninstall()
                    raise
            _SESSIONS.append(self)
        return self

    def __exit__(self, *exc) -> None:
        with _LOCK:
            if self in _SESSIONS:
                _SESSIONS.remove(self)
            if not _SESSIONS:
                _uninstall()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with sanitize(self.mode, self.codes) as session:
                result = fn(*args, **kwargs)
            self.reports.extend(session.reports)
            return result

        return wrapper

    def _add(self, report: SanitizerReport) -> None:
        if self.codes is not None and report.code not in self.codes:
            return
        key = (report.code, report.filename, report.lineno, report.message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.reports.append(report)
        if self.mode == "raise":
            raise SanitizerError(report)

    def summary(self) -> str:
        if not self.reports:
            return "flake8-mha sanitizer: no attention problem observed"
        lines = [f"flake8-mha sanitizer: {len(self.reports)} attention problem(s) observed"]
        lines += ["  " + r.text() for r in self.reports]
        return "\n".join(lines)


def active() -> bool:
    return bool(_SESSIONS)


# --- installing the wrappers ---------------------------------------------------


def _install() -> None:
    import torch
    import torch.nn.functional as F

    for name in MODULE_CLASSES:
        cls = getattr(torch.nn, name)
        original = cls.forward
        _ORIGINALS[(cls, "forward")] = original
        cls.forward = _module_wrapper(name, original)
    original = getattr(F, SDPA)
    _ORIGINALS[(F, SDPA)] = original
    setattr(F, SDPA, _sdpa_wrapper(original))


def _uninstall() -> None:
    for (owner, attr), original in list(_ORIGINALS.items()):
        setattr(owner, attr, original)
    _ORIGINALS.clear()


def _emit(code: str, api: str, message: str, *, decided_by: Any = None, **details: Any) -> None:
    """``decided_by``: the value the report is about (the mask tensor, the flag),
    traced up the stack to the call that chose it (``_decider``)."""
    site = _site(sys._getframe(1))
    frame = _decider(site, decided_by) if site is not None and decided_by is not None else site
    if frame is None:
        filename, lineno, via = "<unknown>", 0, None
    else:
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        via = None if frame is site else (site.f_code.co_filename, site.f_lineno)
    report = SanitizerReport(code, message, filename, lineno, api, details, via)
    for session in list(_SESSIONS):
        session._add(report)


def _skipped_dirs() -> Tuple[str, ...]:
    import torch

    return (os.path.dirname(os.path.abspath(torch.__file__)), _HERE)


def _library_dirs() -> Tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(
        os.path.join(os.path.abspath(paths[k]), "")
        for k in ("stdlib", "platstdlib", "purelib", "platlib")
        if paths.get(k)
    )


def _site(frame):
    """The first frame outside torch and this package: where the user's code called torch."""
    skipped = _skipped_dirs()
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(skipped):
            return frame
        frame = frame.f_back
    return None


def _decider(site, value):
    """The first frame, from ``site`` up, that did not receive ``value`` as an
    argument: a helper ``attend(q, k, v, mask)`` or a layer's ``forward(x,
    mask)`` that only passes the mask (or the flag) on is walked past, up to
    the caller that built it or wrote it.  torch's own frames in between
    (``Module.__call__``) are skipped; the walk stops at library code (the
    standard library, site-packages: pytest calling a test)."""
    skipped, libraries = _skipped_dirs(), _library_dirs()
    frame = site
    while _forwards(frame, value):
        up = frame.f_back
        while up is not None and os.path.abspath(up.f_code.co_filename).startswith(skipped):
            up = up.f_back
        if up is None or os.path.abspath(up.f_code.co_filename).startswith(libraries):
            break
        frame = up
    return frame


def _forwards(frame, value) -> bool:
    """Whether ``value`` came into ``frame`` as an argument its caller passed
    (a parameter's default was decided here, not by the caller)."""
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:n])
    local = frame.f_locals
    for name in names:
        if name in local and local[name] is value:
            return not _is_default(frame, name, value)
    flags = code.co_flags
    extra = code.co_varnames[
        n : n + bool(flags & inspect.CO_VARARGS) + bool(flags & inspect.CO_VARKEYWORDS)
    ]
    for name in extra:
        packed = local.get(name)
        items = packed.values() if isinstance(packed, dict) else packed or ()
        if any(item is value for item in items):
            return True
    return False


def _is_default(frame, name: str, value) -> bool:
    code = frame.f_code
    function = frame.f_globals.get(code.co_name)
    owner = frame.f_locals.get("self")
    if getattr(function, "__code__", None) is not code and owner is not None:
        function = getattr(type(owner), code.co_name, None)
    function = getattr(function, "__func__", function)
    if getattr(function, "__code__", None) is not code:
        return False
    try:
        parameter = inspect.signature(function).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.default is value


class _Depth:
    """Only the outermost wrapped call is checked: a layer's inner attention
    sees masks the layer itself converted."""

    def __enter__(self):
        _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1
        return _LOCAL.depth == 1

    def __exit__(self, *exc):
        _LOCAL.depth -= 1


def _module_wrapper(name: str, original: Callable) -> Callable:
    sig = inspect.signature(original)

    @functools.wraps(original)
    def forward(self, *args, **kwargs):
        with _Depth() as outermost:
            if not outermost or not _SESSIONS:
                return original(self, *args, **kwargs)
            try:
                bound = sig.bind(self, *args, **kwargs)
                bound.apply_defaults()
                values = dict(bound.arguments)
            except TypeError:
                return original(self, *args, **kwargs)
            _check_module_before(name, self, values)
            result = original(self, *args, **kwargs)
            _check_module_after(name, self, values)
            return result

    forward.__flake8_mha_wrapped__ = True
    return forward


def _sdpa_wrapper(original: Callable) -> Callable:
    signature = torch_api.SDPA_SIGNATURE

    @functools.wraps(original)
    def sdpa(*args, **kwargs):
        with _Depth() as outermost:
            if outermost and _SESSIONS:
                given = list(args) + list(kwargs.values())
                binding = signature.bind([(None, "")] * len(args) + [(k, "") for k in kwargs])
                _check_sdpa({name: given[i] for name, i in binding.slots.items()})
            return original(*args, **kwargs)

    sdpa.__flake8_mha_wrapped__ = True
    return sdpa


# --- the checks -------------------------------------------------------------------


def _is_tensor(x) -> bool:
    import torch

    return isinstance(x, torch.Tensor)


def _numeric_mask(api: str, arg: str, mask) -> None:
    import torch

    if not _is_tensor(mask) or mask.dtype == torch.bool or mask.numel() == 0:
        return
    if mask.is_floating_point():
        ones = mask == 1
        if bool(((mask == 0) | ones).all()) and bool(ones.any()):
            _emit(
                "MHA004",
                api,
                f"{arg} is a {str(mask.dtype).replace('torch.', '')} mask holding only 0 "
                "and 1: it is added to the scores, so nothing is masked (use .bool())",
                arg=arg,
                dtype=str(mask.dtype),
                decided_by=mask,
            )
    elif not mask.is_complex():
        _emit(
            "MHA004",
            api,
            f"{arg} is an integer ({str(mask.dtype).replace('torch.', '')}) mask: "
            "attention masks must be bool (or additive float)",
            arg=arg,
            dtype=str(mask.dtype),
            decided_by=mask,
        )


def _rows(mask):
    """A bool mask as (rows, S)."""
    return mask.reshape(-1, mask.shape[-1])


def _polarity(api: str, arg: str, mask, convention: MaskConvention) -> None:
    """MHA002/MHA003 heuristic on a bool padding-like mask."""
    import torch

    if not _is_tensor(mask) or mask.dtype != torch.bool or mask.dim() < 2 or mask.shape[-1] < 2:
        return
    rows = _rows(mask).to(torch.int8)
    if rows.shape[0] > 4096:
        rows = rows[:4096]
    diff = rows[:, 1:] - rows[:, :-1]
    if convention is MaskConvention.ATTEND:
        # every row F..F T..T, one row without True (the unpadded sample) and some True
        if bool((diff >= 0).all()) and bool((rows.sum(-1) == 0).any()) and bool(rows.any()):
            idx = int((rows.sum(-1) > 0).nonzero()[0])
            k = int(rows[idx].sum())
            _emit(
                "MHA002",
                api,
                f"{arg}: in row {idx} the last {k} of {rows.shape[1]} keys are True and "
                "another row has none (padding at the end, True = ignore), but "
                "scaled_dot_product_attention attends where True: invert it with ~",
                arg=arg,
                row=idx,
                true_suffix=k,
                decided_by=mask,
            )
    else:
        # every row T..T F..F, one row all True (the unpadded sample) and some False
        if (
            bool((diff <= 0).all())
            and bool((rows.sum(-1) == rows.shape[1]).any())
            and bool((rows == 0).any())
        ):
            idx = int((rows.sum(-1) < rows.shape[1]).nonzero()[0])
            k = int((rows[idx] == 0).sum())
            _emit(
                "MHA003",
                api,
                f"{arg}: in row {idx} the last {k} of {rows.shape[1]} keys are False and "
                "another row is all True (True = keep, as a tokenizer's attention_mask), but this "
                "argument ignores where True: pass ~mask",
                arg=arg,
                row=idx,
                false_suffix=k,
                decided_by=mask,
            )


def _masked_positions(mask, convention: MaskConvention):
    """A bool tensor True where a key is masked out, or None."""
    import torch

    if not _is_tensor(mask):
        return None
    if mask.dtype == torch.bool:
        return ~mask if convention is MaskConvention.ATTEND else mask
    if mask.is_floating_point():
        return torch.isneginf(mask)
    return None


def _fully_masked(api: str, masked, what: str, batch_dim: bool, decided_by=None) -> None:
    """Report the first query row whose keys are all masked."""
    if masked is None or masked.dim() < 1 or masked.shape[-1] == 0:
        return
    full = masked.all(dim=-1)
    if not bool(full.any()):
        return
    where = [int(i) for i in full.nonzero()[0]]
    S = masked.shape[-1]
    if batch_dim and len(where) >= 2:
        place = f"row {where[-1]} of batch item {where[0]}"
    elif len(where) >= 1:
        place = f"row {where[-1]}"
    else:
        place = "a row"
    _emit(
        "MHA011",
        api,
        f"{place}: all {S} keys masked ({what})",
        index=where,
        keys=S,
        decided_by=decided_by,
    )


def _check_sdpa(values: Dict[str, Any]) -> None:
    import torch

    api = SDPA
    convention = torch_api.SDPA_MASK_CONVENTION
    mask = values.get("attn_mask")
    _numeric_mask(api, "attn_mask", mask)
    _polarity(api, "attn_mask", mask, convention)
    masked = _masked_positions(mask, convention)
    if masked is not None:
        _fully_masked(
            api,
            masked,
            "scaled_dot_product_attention returns zeros for that query",
            batch_dim=masked.dim() >= 3,
            decided_by=mask,
        )
    p = values.get("dropout_p", 0.0)
    if isinstance(p, (int, float)) and p > 0:
        module = _calling_module()
        if not torch.is_grad_enabled():
            _emit(
                "MHA007",
                api,
                f"dropout_p={p} while gradients are disabled (inference): the output "
                "is random; gate it with `p if self.training else 0.0`",
                dropout_p=p,
                decided_by=p,
            )
        elif module is not None and not module.training:
            _emit(
                "MHA007",
                api,
                f"dropout_p={p} inside {type(module).__name__} in eval mode: the "
                "output is random; gate it with `p if self.training else 0.0`",
                dropout_p=p,
                decided_by=p,
            )


def _calling_module():
    import torch

    frame = sys._getframe(3)
    depth = 0
    while frame is not None and depth < 12:
        obj = frame.f_locals.get("self")
        if isinstance(obj, torch.nn.Module):
            return obj
        frame = frame.f_back
        depth += 1
    return None


def _batch_first(module) -> bool:
    if hasattr(module, "batch_first"):
        return bool(module.batch_first)
    for attr in ("self_attn", "layers", "encoder"):
        inner = getattr(module, attr, None)
        if inner is None:
            continue
        if hasattr(inner, "__getitem__") and len(inner):
            inner = inner[0]
        if hasattr(inner, "batch_first"):
            return bool(inner.batch_first)
        if hasattr(inner, "self_attn"):
            return bool(inner.self_attn.batch_first)
    return False


def _check_module_before(name: str, module, values: Dict[str, Any]) -> None:
    api = f"nn.{name}"
    spec = torch_api.BY_NAME[name]
    first = values.get(spec.forward.names[0])  # query, src or tgt: the input sequence
    for arg in spec.padding_mask_args + spec.attn_mask_args:
        mask = values.get(arg)
        if mask is None or not _is_tensor(mask):
            continue
        _numeric_mask(api, arg, mask)
        if arg in spec.padding_mask_args or mask.dim() == 2:
            _polarity(api, arg, mask, spec.mask_convention)
    _fully_masked_module(name, api, module, values, first)
    # MHA001: a sequence-first module whose padding mask matches the first dimension
    kpm = values.get("key_padding_mask", values.get("src_key_padding_mask"))
    if (
        _is_tensor(first)
        and _is_tensor(kpm)
        and first.dim() == 3
        and kpm.dim() == 2
        and not _batch_first(module)
    ):
        A, B = first.shape[0], first.shape[1]
        if kpm.shape[0] == A and A != B:
            _emit(
                "MHA001",
                api,
                f"batch_first=False reads the input {tuple(first.shape)} as (L={A}, "
                f"N={B}, E), but its padding mask has {A} rows: the input looks batch-first",
                input_shape=list(first.shape),
                mask_shape=list(kpm.shape),
                decided_by=first,
            )


def _fully_masked_module(name: str, api: str, module, values, first) -> None:
    if not _is_tensor(first) or first.dim() != 3:
        return
    spec = torch_api.BY_NAME[name]
    bf = _batch_first(module)
    N = first.shape[0] if bf else first.shape[1]
    # the self-attention masks: the memory's belong to cross-attention
    kpm_name = next(
        (k for k in spec.padding_mask_args if k in values and k != "memory_key_padding_mask"), None
    )
    att_name = next((k for k in spec.attn_mask_args if k in values and k != "memory_mask"), None)
    kpm = _masked_positions(values.get(kpm_name), spec.mask_convention) if kpm_name else None
    att = _masked_positions(values.get(att_name), spec.mask_convention) if att_name else None
    if kpm is None and att is None:
        return
    try:
        combined = None
        if kpm is not None and kpm.dim() == 2:
            combined = kpm[:, None, :]  # (N, 1, S)
        if att is not None:
            if att.dim() == 3 and att.shape[0] % max(N, 1) == 0:
                heads = att.shape[0] // N
                a = att.view(N, heads, att.shape[1], att.shape[2]).any(dim=1)
            else:
                a = att.unsqueeze(0) if att.dim() == 2 else att
            combined = a if combined is None else (combined | a)
        what = "nn.MultiheadAttention returns NaN for that query"
        given = values.get(kpm_name) if kpm is not None else values.get(att_name)
        _fully_masked(api, combined, what, batch_dim=True, decided_by=given)
    except RuntimeError:
        return  # shapes torch itself will reject


def _check_module_after(name: str, module, values: Dict[str, Any]) -> None:
    # the call returned: on every path but the inference fastpath, a causal
    # hint without its mask raises; so here the hint was silently ignored
    for pair in torch_api.BY_NAME[name].causal_pairs:
        flag, mask_arg = pair.flag, pair.mask
        if values.get(flag) is True and values.get(mask_arg) is None:
            _emit(
                "MHA005",
                f"nn.{name}",
                f"{flag}=True without {mask_arg} ran on the inference "
                "fastpath, which ignores the hint: the output is not causal",
                flag=flag,
                decided_by=values.get(flag),
            )


# --- pytest ----------------------------------------------------------------------
# ``pytest -p flake8_mha.sanitizer`` loads this module as a plugin; the
# ``--mha-sanitize`` option comes from flake8_mha.frontends.pytest_plugin (an entry point).


def pytest_configure(config) -> None:
    config.pluginmanager.register(_PytestSanitizer(config), "flake8_mha_sanitizer_active")


class _PytestSanitizer:
    def __init__(self, config):
        mode = config.getoption("mha_sanitize_mode", default="collect") or "collect"
        self.session = sanitize(mode=mode)
        self.config = config

    def pytest_sessionstart(self, session):
        self.session.__enter__()

    def pytest_sessionfinish(self, session, exitstatus):
        self.session.__exit__(None, None, None)

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.section("flake8-mha sanitizer")
        terminalreporter.write_line(self.session.summary())
