"""A summary's edges resolved and composed (``chains.py`` makes them): the
function, method, module or factory each edge calls, wherever it lives in
the project, and what the composition of the callee's summary with the
caller's gives.  ``files.ProjectFiles`` holds the tables; this mixin walks
them.  docs/reach.md says what is followed."""

from __future__ import annotations

import contextlib
import os
from typing import Optional, Tuple

from . import chains, constructors, forms, signatures
from .held_lists import ITEMS
from .fills import APART, FILL_SINKS, KV, KV_VIA, MULTIPLIED, SINK_LINE, kv_helpers
from .summaries import ATTRS, BASES, IMPORTS, MODULES, REGISTRIES, TORCH_LAYERS, TORCH_MODULES
from .summaries import VARIANT, settle
from .dict_tables import (  # noqa: F401  (decode: the package's name for it)
    registries_of,
    decode,
    function_dicts,
    keyword_dicts,
    valid_dicts,
    valid_key_lists,
)

MAX_CHAIN = 6  # calls followed from a call site down to a sink


class Composing:
    """Edges followed across the project's summary tables (mixed into
    ``files.ProjectFiles``, whose ``summaries``, ``_table``, ``_defined``,
    ``package_of``, ``relative`` and ``depend`` it uses)."""

    def made_module(self, filename, table, name, depth) -> Optional[Tuple[str, dict]]:
        """What the module a factory function of ``filename`` returns runs when
        called (``def build_attn(): return Attention()``, ``MODULES``); of the
        container it returns (``return nn.ModuleList(Layer() for _ in
        range(n))``), what each item runs: as an attribute's ``ATTRS``, which
        names the one kind a container holds."""
        ctor = table.get(MODULES, {}).get(name)
        if ctor is None or depth >= MAX_CHAIN:
            return None
        ctor = ctor.removesuffix(ITEMS)
        return self._named(filename, table, ctor, self.package_of(filename), depth + 1, False)

    def _inherited(self, filename, table, cls, depth) -> Optional[Tuple[str, dict]]:
        """The ``forward`` a class of ``filename`` inherits as it is
        (``BASES``): its first base that has one, in this file or imported."""
        for base in table.get(BASES, {}).get(cls, ()):
            found = self._named(filename, table, base, self.package_of(filename), depth + 1, False)
            if found is not None:
                return found
        return None

    # -- chains: a summary's edges resolved and composed (chains.py) --------------
    def effective(self, filename: str, key: str, depth: int = 0) -> Optional[dict]:
        """The summary ``key`` of ``filename`` with its edges followed: what its
        parameters reach directly and through the functions and modules it
        calls, wherever those live.  None when nothing is reached.  A chain
        longer than ``MAX_CHAIN`` or met again while being computed (recursion)
        adds nothing: unknown, never a guess."""
        memo = (filename, key, *self.instance)  # one instance's classes (``instance_of``)
        if memo in self._chained:
            return self._chained[memo]
        table = self._table(filename)
        s = table.get(key) if not key.startswith("@") else None
        if not isinstance(s, dict):
            return None
        s = self._helped(filename, table, s)
        if not s.get("edges") or depth >= MAX_CHAIN:
            return s if s["reach"] else None
        self._chained[memo] = s if s["reach"] else None  # a cycle sees the direct part
        reach = dict(s["reach"])
        here = (filename, s["line"], [[self.relative(filename), s["name"]]])
        ends = {sink: _at_fill(here, s, sink) for sink in reach}
        clash, callees, module_own = set(), [], set()
        either, second_has = False, None  # what the call that makes a second variant reaches
        for edge, found in self._edges(filename, table, s, depth + 1):
            callee_file, callee = found
            callees.append(callee)
            either = either or bool(callee.get(EITHER))
            end = (
                callee.get("sink_file", callee_file),
                callee["line"],
                [[self.relative(filename), s["name"]]]
                + callee.get("chain", [[self.relative(callee_file), callee["name"]]]),
            )
            composed = chains.compose(edge, callee)
            for sink, how in composed.items():
                if sink in reach and reach[sink] != how:
                    # a block's self- and cross-attention, two instances of one
                    # class fed different masks: a second variant of the sink
                    alt = None if VARIANT in sink or sink in FILL_SINKS else sink + VARIANT + "2"
                    if alt is not None and reach.setdefault(alt, how) == how:
                        ends.setdefault(alt, _at_fill(end, callee, sink, True))
                        second_has = set(composed) if second_has is None else second_has
                    else:
                        clash.add(sink)
                elif sink not in reach:
                    reach[sink], ends[sink] = how, _at_fill(end, callee, sink, True)
            # a held module's argument the callee's parameter gives, which this
            # function fills with what none of its parameters carries
            module_own.update(k for k in callee["reach"] if "." in k and k not in composed)
            module_own.update(callee.get("module_own", ()))
        for sink in clash:
            reach.pop(sink, None)
            reach.pop(sink + VARIANT + "2", None)
            if "." in sink:
                module_own.add(sink)
        settle(reach, s)
        if s.get("masks_only"):  # a construction hands its masks (``constructors.py``)
            reach = {k: v for k, v in reach.items() if constructors.mask_sink(k)}
        got = None
        if reach and any(c.get("own_mask") for c in callees):
            s = dict(s, own_mask=True)
        module_own.difference_update(s.get("module_own", ()))
        if module_own:
            s = dict(s, module_own=sorted(module_own | set(s.get("module_own", ()))))
        if reach:
            # the SDPA or module call the event will name, before a fill of scores
            # that another path reaches (transformers' eager path beside SDPA)
            named = sorted(reach, key=lambda k: (k in FILL_SINKS, k))[0]
            sink_file, line, chain = ends[named]
            got = dict(s, reach=reach, line=line, sink_file=sink_file)
            lacks = [k for k in reach if VARIANT not in k and second_has and k not in second_has]
            if lacks:  # altamt: the cross-attention's call gives no ``is_causal``
                got[SECOND_LACKS] = sorted(lacks)
            if len(chain) > 1:
                got["chain"] = chain
            if len({(e[0], e[1]) for k, e in ends.items() if k in reach}) > 1:
                # sinks reached through different callees (a block's self-attention
                # fills its scores, its cross-attention masks keys): each its own
                got["ends"] = {k: e for k, e in ends.items() if k in reach}
                if either:  # through one of several classes: each judged apart
                    got[EITHER] = True
        self._chained[memo] = got
        return got

    def _helped(self, filename, table, s) -> dict:
        """``s`` with each sink reached through a helper of another file
        (``via``: ``scores = apply_windows(scores, ok)``, ``fills.added_by_helper``)
        kept when that helper's one return adds the two (``score_helpers``),
        or, for a term named a mask, multiplies them (MHA012's sink), else left
        out."""
        vias = [k for k, how in s["reach"].items() if "via" in how]
        reach = dict(s["reach"])
        through = reach.get(KV, {})
        if KV_VIA in through:  # ``k, v = apply_cloud(k, v, clear)`` of another file
            how = self._kv_helped(filename, table, through)
            if how is None:
                del reach[KV]
            else:
                reach[KV] = how
        if not vias:
            return dict(s, reach=reach) if reach != s["reach"] else s
        for k in vias:
            how = dict(reach.pop(k))
            name, at_scores, at_term, named_mask = how.pop("via")
            loc = self._written(filename, table, name, self.package_of(filename))
            op = self.score_ops(loc[0]).get(loc[1]) if loc is not None else None
            given = op["positional"] if op is not None else []
            if op is None or max(at_scores, at_term) >= len(given):
                continue
            if {given[at_scores], given[at_term]} != {op["left"], op["right"]}:
                continue
            if op["op"] == "add":
                reach[k] = how
            elif op["op"] == "mul" and named_mask:  # ``gate_scores(scores, keep)``: MHA012's
                reach[MULTIPLIED] = how  # (probe AJ's AJ01)
        return dict(s, reach=reach)

    def _kv_helped(self, filename, table, how: dict) -> Optional[dict]:
        """A ``kv`` reach through a helper of another file
        (``fills._by_other_file``) with the helper's own steps, when its file's
        ``kv_pairs`` say it multiplies each item the function hands SDPA by
        the argument the reach names; else None."""
        name, count, position, items = how[KV_VIA]
        loc = self._written(filename, table, name, self.package_of(filename))
        reading = self.kv_pairs(loc[0]).get(loc[1]) if loc is not None else None
        if not reading or len(reading) != count:
            return None
        steps = [reading[i] if i < len(reading) else None for i in items]
        if any(s is None or s[0] != position for s in steps) or len({repr(s) for s in steps}) != 1:
            return None
        ops = how["ops"][:-1] + steps[0][1] + how["ops"][-1:]
        return {k: v for k, v in dict(how, ops=ops).items() if k != KV_VIA}

    def kv_pairs(self, filename: str) -> dict:
        """The functions of a project file whose one return is a tuple of
        items each multiplied by one of their parameters
        (``fills.kv_helpers``): name -> per item, [that parameter's
        position, its steps] or None."""

        def table(data: bytes) -> dict:
            try:
                text = decode(data)
                if "return" not in text or not any(w in text for w in _KV_WORDS):
                    return {}
                got = kv_helpers(signatures.parse(text))
                return {
                    n: [list(i) if i is not None else None for i in r["items"]]
                    for n in got
                    if (r := got[n]) is not None
                }
            except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError):
                return {}

        return self._kept(filename, ("kv-pairs", "3"), _valid_pairs, table, store=False) or {}

    def _edges(self, filename, table, s, depth):
        """(edge, (file, effective summary)) of what each edge calls; for a
        module held as one of several classes that reach differently (``make
        = Fast if fast else Slow``, a registry's), each class: one known to
        reach nothing adds nothing, one that cannot be read makes the edge
        unknown (probe V's B24: a correct sibling never hides a wrong one);
        each sink is judged apart (probe AE's AE03, ``EITHER``)."""
        for edge in s["edges"]:
            kind, name = edge["callee"]
            ctor = (
                table.get(ATTRS, {}).get(s.get("cls") or "", {}).get(name)
                if kind == "self"
                else None
            )
            chosen = self._kinds(filename, table, ctor, depth) if ctor is not None else None
            if chosen is not None:
                where, there, kinds, package, deeper = chosen
                found = [self._named(where, there, k, package, deeper, False) for k in kinds]
                if any(f is not None and _takes(f[1], edge) for f in found):
                    # a class whose ``forward`` cannot take the call's arguments never runs
                    # it (T5's ``self.attn(h, bias, causal)`` under ``if self.is_decoder``)
                    found = [f for f in found if f is None or _takes(f[1], edge)]
                if all(
                    f is not None or self._inert(where, there, k, package)
                    for f, k in zip(found, kinds)
                ):  # one of several: each sink judged apart (``fill_apart``)
                    yield from ((edge, (f[0], dict(f[1], **{EITHER: True}))) for f in found if f)
                continue
            found = self._edge(filename, table, s, edge, depth)
            if found is not None:
                yield edge, found

    def _kinds(self, filename, table, ctor: str, depth: int):
        """(file, its table, the classes, package, depth) a module built as
        one of several classes is (``"Fast|Slow"``, ``chains.KINDS``; a dict of
        classes indexed by a setting, ``"BACKENDS[]"``, of this file or
        imported); None for one class."""
        package = self.package_of(filename)
        if chains.KINDS in ctor:
            return filename, table, ctor.split(chains.KINDS), package, depth
        if not ctor.endswith(chains.REGISTERED) or depth >= MAX_CHAIN:
            return None
        loc = self._written(filename, table, ctor[: -len(chains.REGISTERED)], package)
        there = self._table(loc[0]) if loc is not None else {}
        kinds = there.get(REGISTRIES, {}).get(loc[1]) if loc is not None else None
        if kinds is None:
            return None
        return loc[0], there, kinds.split(chains.KINDS), self.package_of(loc[0]), depth + 1

    def _edge(self, filename, table, s, edge, depth) -> Optional[Tuple[str, dict]]:
        """(file, effective summary) of what one edge calls."""
        kind, name = edge["callee"]
        package = self.package_of(filename)
        if kind == "method":
            cls = s.get("cls")
            got = self.effective(filename, f"{cls}.{name}", depth) if cls else None
            return (filename, got) if got is not None else None
        if kind == "self":
            ctor = table.get(ATTRS, {}).get(s.get("cls") or "", {}).get(name)
            if ctor is None:
                return None
            if ctor.startswith(chains.INJECTED):
                return self._injected(filename, s["cls"], ctor[len(chains.INJECTED) :], depth)
            got = self._named(filename, table, ctor, package, depth, call=False)
            return got if got is not None else self._factory_module(filename, table, ctor, edge)
        if kind == "super":
            return self._super(filename, table, s, name, package, depth)
        if kind == "held":
            attr, method = name.split(".", 1)
            ctor = table.get(ATTRS, {}).get(s.get("cls") or "", {}).get(attr)
            return self.held_method(filename, table, ctor, method, package, depth)
        return self._named(filename, table, name, package, depth, call=True)

    def _factory_module(self, filename, table, ctor, edge) -> Optional[Tuple[str, dict]]:
        """(file, summary) of a held torch attention module that a factory of
        another project file builds (``self.self_attn = make_attn(dim,
        heads)``, ``make_attn`` returning ``nn.MultiheadAttention``): its
        call is the module's, at the call's line."""
        target = import_target(table, ctor)
        if target is None or not edge.get("line"):
            return None
        made = self.torch_factory(target)
        if made is None or made.own_forward or made.items or not made.startswith("torch.nn."):
            return None
        got = forms.module_summary(made.rsplit(".", 1)[1], edge["line"])
        if got is None:
            return None
        return filename, dict(got, chain=[])  # the holder's call is the module's: no step more

    def _injected(self, filename, cls, param, depth) -> Optional[Tuple[str, dict]]:
        """(file, effective summary) of the module the class ``cls`` of
        ``filename`` is handed by its constructor's ``param`` and keeps
        (``handed.injected_attrs``): the one class every construction of
        ``cls`` in the project builds right there for it (Informer's
        ``AttentionLayer(FullAttention(False), d_model, n_heads)``), or names
        for it (``Block(MaskedSelfAttention, dim)`` of ``self.attn =
        attn_cls(dim)``), as the constructing file names it; where one leaves
        ``param`` out, what the class builds then (``self.attend =
        default(attend, Attend())``, ``chains.FALLBACK``); of several, each (``_either``: probe AD's
        AD07).  None when a construction passes anything else, or the class
        is never built."""
        param, _, fallback = param.partition(chains.FALLBACK)  # ``default(attend, Attend())``
        classes = param.endswith(chains.CALLED)  # ``self.attn = attn_cls(dim)``
        if classes:
            param = param[: -len(chains.CALLED)]
        if classes and fallback:  # a class default: no construction is read for one that
            table = self._table(filename)  # reaches nothing (timm's ``norm_layer=LayerNorm``)
            if (
                self._named(filename, table, fallback, self.package_of(filename), depth, False)
                is None
            ):
                return None
        built = self.handed(filename, cls, param, classes, fallback)
        if not built and classes and fallback:  # a class default, the constructions unsettled
            built = [{param: (filename, fallback)}]
        found = {}
        for b in built or ():
            given = b.get(param)
            if not isinstance(given, tuple):
                return None  # not a class built right there
            where, ctor = given
            where = filename if os.path.abspath(where) == os.path.abspath(filename) else where
            there = self._table(where)
            got = self._named(where, there, ctor, self.package_of(where), depth, False)
            if got is None and not self._inert(where, there, ctor, self.package_of(where)):
                return None  # a class that cannot be read: what the call runs is unknown
            if got is not None:  # one of the project's that reaches nothing hides none
                found[(got[0], got[1]["name"])] = got
        if len(found) > 1:  # ``PointBlock(d, h, local_cls=Filled)`` beside ``PointBlock(d, h)``
            return self._either(list(found.values()))
        return next(iter(found.values()), None)

    instance: tuple = ()  # ((file, class, parameter), (file, class handed)) of one construction

    @contextlib.contextmanager
    def instance_of(self, handed: tuple):
        """While what one construction builds is read: the classes it hands
        its constructor (``GPT(config, attn_cls=MaskedSelfAttention)`` beside
        ``GPT(config)``), each instance its own (``handed``)."""
        before = self.instance
        self.instance = tuple(sorted(set(before) | set(handed)))
        try:
            yield
        finally:
            self.instance = before

    def instance_call(self, filename: str, cls: str, depth: int = 0) -> Optional[dict]:
        """The effective summary of calling an instance of ``cls``: its
        ``forward``, a plain class's ``__call__`` (diffusers' attention
        processors, kept on ``self.processor``), or what a factory returns;
        ``Cls.from_config``, a class method that builds ``Cls``: ``Cls``'s."""
        if "." in cls:
            built = self._table(filename).get(REGISTRIES, {}).get(cls)
            if built is not None and chains.KINDS not in built:
                cls = built
        return (
            self.effective(filename, cls + ".forward", depth)
            or self.effective(filename, cls + ".__call__", depth)
            or self.effective(filename, cls + "()", depth)
        )

    def handed(
        self, filename: str, cls: str, param: str, classes=False, fallback=""
    ) -> Optional[list]:
        """Every construction of the class ``cls`` of ``filename`` in the
        project, its ``__init__`` parameters read by
        ``signatures.built_class`` (``classes``: by ``signatures.class_named``),
        ``param`` left out read as ``(filename, fallback)`` when one is given;
        None when they cannot be read.  The project's constructions are
        read by ``callsites.Project``; here, for the gate, which must keep a
        file that may report, a fallback is what one construction that
        leaves ``param`` out holds."""
        return [{param: (filename, fallback)}] if fallback else None

    def held_method(self, filename, table, ctor, method, package, depth=0):
        """(file, effective summary) of the method ``method`` of the class
        ``ctor`` (as ``filename`` writes it) when it is a project class that
        defines it itself (``self.vit.forward_features(...)``); else None."""
        loc = self._written(filename, table, ctor, package) if ctor else None
        if loc is None or "." in loc[1]:
            return None
        got = self.effective(loc[0], f"{loc[1]}.{method}", depth)
        return (loc[0], got) if got is not None else None

    def _super(self, filename, table, s, name, package, depth) -> Optional[Tuple[str, dict]]:
        """``super().name(...)``: the method of the first base (as written,
        in this file or imported) that has a summary of it.  Not when the
        class holds modules of its own and the base's method calls modules
        on ``self``: what those are would be this class's, not the base's."""
        held = table.get(ATTRS, {}).get(s.get("cls") or "", {})
        for base in s.get("bases", ()):
            loc = self._written(filename, table, base, package)
            if loc is None or "." in loc[1]:
                continue
            raw = self._table(loc[0]).get(f"{loc[1]}.{name}")
            if raw is None:
                continue
            inherited = self._table(loc[0]).get(ATTRS, {}).get(loc[1], {})
            own_attrs = any(  # what the base holds on ``self`` too is inherited, not its own
                not c.startswith(chains.INJECTED) and inherited.get(a) != c for a, c in held.items()
            )
            if own_attrs and any(e["callee"][0] == "self" for e in raw.get("edges", ())):
                return None
            got = self.effective(loc[0], f"{loc[1]}.{name}", depth)
            return (loc[0], got) if got is not None else None
        return None

    def _written(self, filename, table, name, package) -> Optional[Tuple[str, str]]:
        """(file, name) where a name as ``filename`` writes it is defined: its
        own (a plain name), or what it imports (``attn.Attention`` too)."""
        target = import_target(table, name)
        if target is not None:
            return self._defined(target, package)
        return None if "." in name else (filename, name)

    def _named(self, filename, table, name, package, depth, call) -> Optional[Tuple[str, dict]]:
        """A function called (``call``), or a class or factory built, by the
        name a file writes: one of the file's own, or one it imports."""
        if not call and chains.KINDS in name:
            return self._one_of(filename, table, name.split(chains.KINDS), package, depth)
        if not call and name.endswith(chains.REGISTERED):  # ``BACKENDS[name](...)``, imported
            loc = self._written(filename, table, name[: -len(chains.REGISTERED)], package)
            there = self._table(loc[0]) if loc is not None else {}
            kinds = there.get(REGISTRIES, {}).get(loc[1]) if loc is not None else None
            if kinds is None or depth >= MAX_CHAIN:
                return None
            return self._one_of(loc[0], there, kinds.split(chains.KINDS), package, depth + 1)
        loc = self._written(filename, table, name, package)
        if loc is None:
            return None
        filename, name = loc
        if call:
            got = None if "." in name else self.effective(filename, name, depth)
        else:
            got = self.instance_call(filename, name, depth)
            if got is None and depth < MAX_CHAIN and "." not in name:
                table = self._table(filename)
                return self._inherited(filename, table, name, depth) or self.made_module(
                    filename, table, name, depth
                )
        return (filename, got) if got is not None else None

    def _one_of(self, filename, table, kinds, package, depth) -> Optional[Tuple[str, dict]]:
        """A module built as one of several classes (``attn_cls = A if c
        else B``, a dict of classes indexed by a setting): followed when
        every kind runs the same ``forward`` (a subclass that only inherits
        it) or reaches the same sinks the same way; otherwise, and when one
        kind reaches nothing, unknown: which one runs is the program's
        choice.  A kind of the project that reaches nothing at all (a plain
        ``SlowAttention`` beside ``FastSelfAttention``) hides nothing: the
        others are followed (a correct sibling never hides a wrong one)."""
        found = [self._named(filename, table, k, package, depth, False) for k in kinds]
        if any(
            f is None and not self._inert(filename, table, k, package) for f, k in zip(found, kinds)
        ):
            return None
        found = [f for f in found if f is not None]
        if not found:
            return None
        first = found[0]
        for other in found[1:]:
            same = (other[0], other[1]["name"]) == (first[0], first[1]["name"])
            if not same and other[1]["reach"] != first[1]["reach"]:
                return self._either(found)
        return first

    def _either(self, found) -> Optional[Tuple[str, dict]]:
        """One summary for a module built as one of several classes whose
        ``forward``s take the same parameters and reach different sinks
        (probe AE's registry of four attentions): each sink as the kind
        that reaches it, with that kind's line and chain (``ends``); a sink
        two kinds reach differently is left out.  None when the parameters
        differ."""
        first_file, first = found[0]
        params = (first["positional"], first["kwonly"])
        reach: dict = {}
        ends: dict = {}
        clash = set()
        for filename, s in found:
            if (s["positional"], s["kwonly"]) != params:
                return None
            own = (s.get("sink_file", filename), s["line"])
            chain = s.get("chain") or [[self.relative(filename), s["name"]]]
            for sink, how in s["reach"].items():
                if sink in reach and reach[sink] != how:
                    clash.add(sink)
                elif sink not in reach:
                    reach[sink] = how
                    ends[sink] = (s.get("ends") or {}).get(sink) or (*own, chain)
        for sink in clash:
            reach.pop(sink)
        if not reach:
            return None
        named = sorted(reach, key=lambda k: (k in FILL_SINKS, k))[0]
        got = dict(first, reach=reach, sink_file=ends[named][0], line=ends[named][1])
        got["chain"] = ends[named][2]
        got["ends"] = {k: ends[k] for k in reach}
        got[EITHER] = True
        return first_file, got

    def _a_kind_reaches(self, targets: list) -> bool:
        """A class of a registry dict another project file defines (its
        ``REGISTRIES``) reaches a sink when called, or one is a torch
        attention module (``registry_names``), or it is unreadable (kept)."""
        for target in targets:
            try:
                loc = self._defined(target)
                kinds = self.summaries(loc[0]).get(REGISTRIES, {}).get(loc[1]) if loc else None
                if kinds and any(self.instance_call(loc[0], k) for k in kinds.split(chains.KINDS)):
                    return True
                if any(self.registry_names(target) or ()):  # ``{"mha": nn.MultiheadAttention}``
                    return True
                got = self._kept(loc[0], ("function-dicts", "1"), valid_dicts, function_dicts)
                funcs = (got or {}).get(loc[1]) if loc else None  # ``{"sdpa": sdpa_attention}``
                if funcs and any(self.effective(loc[0], f) for f in funcs.values()):
                    return True
            except (OSError, ValueError, RecursionError):
                return True
        return False

    def registry_at(self, target: Tuple[int, str], key=None) -> Optional[str]:
        """``imported_registry`` of the import ``target`` (level, dotted)."""
        names = self.registry_names(target, key)
        return names.pop() if names and len(names) == 1 and None not in names else None

    def dict_keys_at(self, target: Tuple[int, str]) -> Optional[frozenset]:
        """The keys of the keyword dict (``keyword_dicts``) the import ``target``
        (level, dotted) names, else None."""
        try:
            loc = self._defined(target)
            if loc is None or "." in loc[1]:
                return None
            table = self._kept(loc[0], ("keyword-dicts", "2"), valid_key_lists, keyword_dicts)
        except (OSError, ValueError, RecursionError):
            return None
        found = (table or {}).get(loc[1])
        return frozenset(found) if isinstance(found, list) else None

    def registry_names(self, target: Tuple[int, str], key=None) -> Optional[set]:
        """The torch class each value of the registry ``target`` names (None
        for one that names none), only the one under ``key`` when that is a
        string; None when it is no dict of names bound once.  The file's
        registries are read once per file state (``registries_of``)."""
        try:
            loc = self._defined(target)
            if loc is None or "." in loc[1]:
                return None
            table = self._kept(
                loc[0], ("registries", "1"), lambda got: isinstance(got, dict), registries_of
            )
        except (OSError, ValueError, RecursionError):
            return None
        found = (table or {}).get(loc[1])
        if found is None:
            return None
        if isinstance(key, str):
            found = {k: v for k, v in found.items() if k == key}
        return set(found.values())

    def kinds_run(self, key: str) -> set:
        """The ``forward`` of each class of the linted file that the function
        ``key`` may run through a module held as one of several classes
        (``self.mix = (Gated if gated else Plain)()``, ``chains.KINDS``): a
        chain through that call names one, and each caller's mask is judged
        at its call for all of them (probe AD's MSG_AD01)."""
        table = self._table(self.path)
        s = table.get(key) or {}
        held = table.get(ATTRS, {}).get(s.get("cls") or "", {})
        out = set()
        for edge in s.get("edges", ()):
            kind, name = edge["callee"]
            ctor = held.get(name) if kind == "self" else None
            if isinstance(ctor, str) and chains.KINDS in ctor:
                out.update(f"{k}.forward" for k in ctor.split(chains.KINDS) if "." not in k)
        return out

    def _inert(self, filename, table, kind, package) -> bool:
        """A module class of the project (not torch's, not unknown:
        ``module_bases``) whose file's summary table has nothing for it: none
        of its methods reaches a sink, it holds no torch module and inherits
        no ``forward`` that does."""
        loc = self._written(filename, table, kind, package)
        if loc is None or "." in loc[1] or not self._module_in(loc[0], loc[1], 0):
            return False
        there = self._table(loc[0])
        return not any(k == loc[1] or k.startswith(loc[1] + ".") for k in there) and not any(
            loc[1] in there.get(key, ()) for key in (BASES, TORCH_MODULES, TORCH_LAYERS)
        )


SECOND_LACKS = "second_lacks"  # sinks the call making a second variant does not reach
EITHER = "either"  # a summary whose sinks are reached by different classes, one of which runs
_KV_WORDS = ("*", "masked_fill", "mul", "where")  # what a helper that masks keys writes


def _valid_pairs(got) -> bool:
    return isinstance(got, dict) and all(
        isinstance(k, str)
        and isinstance(v, list)
        and all(
            i is None
            or (
                isinstance(i, list) and len(i) == 2 and type(i[0]) is int and isinstance(i[1], list)
            )
            for i in v
        )
        for k, v in got.items()
    )


def import_target(table: dict, name: str) -> Optional[Tuple[int, str]]:
    """(level, dotted) of what a name as a file writes it (``attn.Attention``)
    imports, by the file's summary table's ``IMPORTS``; None when its head
    is not imported."""
    head, _, rest = name.partition(".")
    imported = table.get(IMPORTS, {}).get(head)
    if imported is None:
        return None
    return imported[0], imported[1] + ("." + rest if rest else "")


def _at_fill(end: tuple, summary: dict, sink: str, callee: bool = False) -> tuple:
    """Where a sink is reached: a fill of scores beside an SDPA call of the
    same function is made on a line of its own (``fill_line``), and so is
    each of a callee's fills of scores from different parameters
    (``SINK_LINE``: a bias added on one line, a padding mask filled on
    another; probe AJ's AJ02)."""
    line = summary["reach"].get(sink, {}).get(SINK_LINE) if callee else None
    apart = summary.get("ends", {}).get(sink) if callee else None
    if apart is not None:  # the callee's own sinks reached through callees of its own
        return (apart[0], apart[1], list(end[2][:1]) + list(apart[2]))
    if sink in FILL_SINKS and line is not None:
        return (end[0], line, end[2])
    if sink in FILL_SINKS and "fill_line" in summary:
        return (end[0], summary["fill_line"], end[2])
    return end


def narrowed(summary: dict, sinks: set) -> dict:
    """``summary`` with only ``sinks`` reached, and the sink, line and chain
    of the first of them when its sinks are reached through different
    callees (``composing``'s ``ends``)."""
    got = dict(summary, reach={k: v for k, v in summary["reach"].items() if k in sinks})
    ends = summary.get("ends")
    if ends:
        named = sorted(got["reach"], key=lambda k: (k in FILL_SINKS, k))
        end = ends.get(named[0]) if named else None
        if end is not None:
            got["sink_file"], got["line"] = end[0], end[1]
            got.pop("chain", None)
            if len(end[2]) > 1:
                got["chain"] = end[2]
            elif end[2]:  # the function itself (one of several classes': ``_either``)
                got["name"] = end[2][0][1]
    return got


def fill_apart(summary: dict):
    """The summaries of a function's fills of scores, one a fill, then of
    the rest (or None), when it reaches a fill of scores from one parameter
    beside other sinks: keys multiplied by one parameter's mask, the value
    given by another (``sdpa(q, k * keep, v)``), a bias filled by one
    parameter's mask beside SDPA's mask from another (MPT's
    ``key_padding_mask`` and ``prefix_mask``), or a padding mask filled
    beside a window added (each fill judged where it is made:
    ``SINK_LINE``).  Each fill is judged at the call as well.  None
    otherwise (one mask reaching an eager fill and SDPA on two paths is
    judged once, at the SDPA call, unless the fill runs on a path of its own,
    ``fills.APART``: litgpt's soft-capped scores beside SDPA)."""
    reach = summary["reach"]
    if len(reach) < 2:
        return None
    if KV in reach:
        return [narrowed(summary, {KV})], narrowed(summary, set(reach) - {KV})
    fills = [k for k in reach if k in FILL_SINKS]
    params = [reach[k]["param"] for k in fills]
    others = {how["param"] for k, how in reach.items() if k not in FILL_SINKS}
    if fills and summary.get(EITHER):  # one class of several reaches each (``_either``)
        params = list(range(len(fills)))
        others = set()
    shared = others & set(params)  # apart only where the fill runs on a path of its own
    if shared and any(reach[k]["param"] in shared and APART not in reach[k]["ops"] for k in fills):
        return None
    if not fills or len(set(params)) != len(params):
        return None
    if len(fills) == len(reach) and len(fills) < 2:  # no other sink: nothing to part
        return None
    apart = []
    for sink in fills:
        one = narrowed(summary, {sink})
        if sink in (summary.get("ends") or {}):
            pass  # reached through a callee of its own: where ``narrowed`` says
        elif SINK_LINE in reach[sink]:
            one["line"] = reach[sink][SINK_LINE]
        elif "fill_line" in summary:
            one["line"] = summary["fill_line"]
        apart.append(one)
    rest = set(reach) - set(fills)
    return apart, (narrowed(summary, rest) if rest else None)


def _takes(summary: dict, edge: dict) -> bool:
    """Whether a ``forward`` takes what the call of ``edge`` passes (its
    ``arity``): no more positions than it has, only keywords it names, and
    each of its parameters without a default (probe AN's AN08: T5's
    ``self.attn(h, bias)`` never runs the decoder attention that needs a
    ``causal_mask``).  A forwarding call (``**kwargs``) may pass anything."""
    if "arity" not in edge:
        return True
    count, keywords = edge["arity"]
    positional = summary.get("positional") or []
    if count > len(positional) and not summary.get("varargs"):
        return False
    names = set(positional) | set(summary.get("kwonly") or [])
    if not summary.get("varkw") and any(k not in names for k in keywords):
        return False
    given = set(positional[:count]) | set(keywords)
    return all(p in given or p in summary.get("defaults", {}) for p in names)
