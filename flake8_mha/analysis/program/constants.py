"""Constants of the project's files, as the linted file's analysis asks for
them: a module-level constant another project file defines and this one
imports (``from .config import WIDTH``, ``config.WIDTH``), and an
``__init__`` default that names one (``dim=WIDTH``).  RULES.md: "known
statically" counts the same module-level constants imported from another
file of the project.
"""

from __future__ import annotations

import os
from typing import List, Optional, Tuple

import libcst as cst

from ...core.atomic import read_regular
from ..flow import DefKind, ScopeKind, import_path
from ..registries import registry_values
from . import callers, chains, signatures
from . import handed as handed_forms
from .files import decode, module_constants, module_file
from .module_numbers import SEQUENCE
from .forms import IMPORTED
from .binding import bind
from .built import MISSING
from .held_lists import torch_class
from .local_names import enclosing_class, own_definition
from .returns import ReturnsFiles, imported_target
from .summaries import ATTRS


MAX_MIXIN_FILES = 64  # importers of a mixin's file read for the classes that mix it in


class ConstantFiles(ReturnsFiles):
    """The project's files, with their module-level constants."""

    # -- the sizes a call hands a module its callee builds (MHA008) ------------------
    def sized(self, func, env, scope) -> Optional[Tuple[str, str, List[dict]]]:
        """(file, name, entries) of ``sizes.sizes_table`` for the function or
        class a call names: one of the linted file's own, or one a project file
        defines and this one imports (``Block(100, 8)``,
        ``build_attention(AUDIO_DIM, AUDIO_HEADS)``); else None."""
        if (  # ``super().__init__(200, 16)`` in a subclass: a construction of its base
            isinstance(func, cst.Attribute)
            and func.attr.value == "__init__"
            and isinstance(func.value, cst.Call)
            and isinstance(func.value.func, cst.Name)
            and func.value.func.value == "super"
        ):
            cls = scope.cls if scope is not None else None
            if cls is None or not cls.base_exprs or cls.scope is None:
                return None
            base = cls.base_exprs[0]
            return self._named_entry(base, cls.env, cls.scope, self.sizes, (DefKind.CLASS,))
        # ``cls(200, 6)`` in a ``@classmethod`` of the file's class (probe AF's AF04)
        key = _classmethod_owner(scope, func.value) if isinstance(func, cst.Name) else None
        if key is not None:
            got = self.sizes(self.path).get(key)
            return (self.path, key, got) if got else None
        if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name):
            # ``ENCODERS[name](52, N_HEADS)``: the one class every value of the registry names
            got = registry_values(func, env, scope)
            names = {v.value if isinstance(v, cst.Name) else None for v in got[0]} if got else ()
            if len(names) != 1 or None in names:
                return None
            return self.sized(got[0][0], got[1], got[2])
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            # ``Attn.from_dims(100)``: a class method of the file's own class
            cls = own_definition(func.value, env, scope, DefKind.CLASS)
            if cls is not None:
                key = f"{cls}.{func.attr.value}"
                got = self.sizes(self.path).get(key)
                return (self.path, key, got) if got else None
        return self._named_entry(
            func, env, scope, self.sizes, (DefKind.DEF, DefKind.CLASS), methods=True
        )

    def score_call(self, call: cst.Call, env, scope) -> Optional[dict]:
        """A call of a helper of score arithmetic (``score_helpers.py``) as that
        arithmetic with the caller's arguments: ``{"left", "right"}`` (the
        caller's expressions), ``"op"``, ``"softmax"`` and ``"through"`` (the
        helper, for the message); None for any other call."""
        got = self._score_op(call.func, env, scope)
        if got is None:
            return None
        filename, name, op = got
        args = bind(op, call)
        if args is None or op["left"] not in args or op["right"] not in args:
            return None
        sign = {"add": "+", "sub": "-", "mul": "*"}[op["op"]]
        return {
            "left": args[op["left"]],
            "right": args[op["right"]],
            "op": op["op"],
            "softmax": op["softmax"],
            "through": {
                "function": name,
                "file": self.relative(filename),
                "line": op["line"],
                "fill": f"{op['left']} {sign} {op['right']}",
                "params": {"scores": op["left"], "mask": op["right"]},
            },
        }

    def _score_op(self, func, env, scope) -> Optional[Tuple[str, str, dict]]:
        """(file, name, entry) of ``score_helpers.table`` for the helper a
        call names: a function of the linted file or one a project file
        defines and this one imports (``add_bias(scores, mask)``), or a
        method of the class around the call (``self.mask_scores(s, m)``)."""
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            cls = enclosing_class(scope)
            if cls is None or cls.scope is None or cls.scope.kind != ScopeKind.MODULE:
                return None
            key = f"{cls.name}.{func.attr.value}"
            got = self.score_ops(self.path).get(key)
            return (self.path, key, got) if got else None
        return self._named_entry(func, env, scope, self.score_ops, (DefKind.DEF,))

    def _named_entry(self, func, env, scope, table, kinds, methods=False):
        """(file, name, entry) of ``table(file)`` for the top-level function or
        class a call names, of the linted file or imported from a project
        file (``methods``: also a class's method called through the class,
        ``Attn.from_dims``); else None."""
        try:
            own = own_definition(func, env, scope, *kinds)
            if own is not None:
                got = table(self.path).get(own)
                return (self.path, own, got) if got else None
            target = imported_target(func, env, scope)
            if target is None or not self.files:
                return None
            memo = self.__dict__.setdefault("_entries", {})
            key = (table.__name__, target)
            if key not in memo:
                loc = self._defined(target)
                ok = loc is not None and (methods or "." not in loc[1])
                got = table(loc[0]).get(loc[1]) if ok else None
                memo[key] = (loc[0], loc[1], got) if got else None
            return memo[key]
        except (OSError, ValueError, RecursionError):
            return None

    def built_alike(self, filename: str, cls: str, params: List[str], defaults: dict) -> bool:
        """Whether every construction of the class ``cls`` of ``filename`` in
        the project passes each of ``params`` the same literal (its
        construction is then judged where it stands, with those values)."""
        if not self.files:
            return False  # the project is not read: no construction is settled (``constructed``)
        got = self.constructions_of(filename, cls)
        if got is None:
            return False
        built, (_, init_defaults) = got
        defaults = {**init_defaults, **defaults}
        return bool(built) and all(
            callers.one_value(built, p, defaults, self.depend) is not None for p in params
        )

    def sizes_handed(self, filename: str, cls: str, params: List[str]) -> bool:
        """Whether some construction of the class ``cls`` of ``filename`` in
        the project passes one of ``params`` (sizes of a module its
        ``__init__`` builds) itself, not leaving it to its default: the
        calls that hand sizes then judge them (MHA008, MHA101), not the
        construction inside the class."""
        if not self.files:
            return False
        got = self.constructions_of(filename, cls)
        if got is None or not got[0]:
            return False
        return any(c.get(p, MISSING) != MISSING for c in got[0] for p in params)

    def classes_passed(self, cls: str, param: str) -> Optional[set]:
        """What every construction of this file's class ``cls`` in the project
        hands its ``__init__`` parameter ``param``, as written (``"Attn"``,
        ``"nn.MultiheadAttention"``; ``MISSING``: left to the default); None
        when the project is not read or a construction hands anything else
        (a call, a local: then ``"?"`` is in the set)."""
        if not self.files:
            return None
        got = self.constructions_of(self.path, cls, signatures.class_named, needs=param)
        if got is None or got[0] is None:  # not settled: subclassed, passed around
            return None
        named = (c.get(param, MISSING) for c in got[0])  # (file, class) as written
        return {v if v == MISSING else v[1] if isinstance(v, tuple) else "?" for v in named}

    def handed_torch(self, cls: str, param: str) -> Optional[List[str]]:
        """Per construction in the project (one at least) of this file's class
        ``cls``, the torch class it builds right there for its ``__init__``
        parameter ``param`` (``self_attention=nn.MultiheadAttention(...)``:
        ``"torch.nn.MultiheadAttention"``, read through the constructing
        file's imports), or ``MISSING`` where it leaves it out; None when one
        passes anything else, or the project does not say."""
        if not self.files:
            return None
        got = self.constructions_of(self.path, cls, signatures.built_class, needs=param)
        if got is None or not got[0]:
            return None
        out: List[str] = []
        for c in got[0]:
            value = c.get(param, MISSING)
            if value == MISSING:
                out.append(MISSING)
                continue
            if not isinstance(value, tuple):
                return None
            head = value[1].partition(".")[0]
            bound = self._import_of(value[0], head)  # ``nn`` of ``import torch.nn as nn``
            qn = torch_class(value[1], {head: bound[1]} if bound and bound[0] == 0 else {})
            if qn is None:
                return None  # the project's own class, or a name it does not import
            out.append(qn)
        return out

    def constructions_of(self, filename: str, cls: str, reader=None, needs: Optional[str] = None):
        """(every construction of the class ``cls`` of ``filename`` in the
        project, as ``callers.constructions`` reads them with ``reader``, the
        signature of its ``__init__``: ``signatures.init_signature``); None
        when the file cannot be read, the class has no ``__init__`` of its
        own, or that takes no parameter ``needs``.  The linted file is read as linted; the files read become
        dependencies of the cached findings."""
        own = self._own_source if filename == self.path else None
        text = self.class_source(filename)
        if text is None:
            return None
        try:
            signature = signatures.init_signature(text, cls)
            if signature is None or (needs is not None and needs not in signature[0]):
                return None
            built, read = callers.constructions(filename, cls, signature[0], own, None, reader)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError, ValueError, RecursionError):
            return None
        for f in read:
            self.depend(f)
        return built, signature

    def handed(self, filename, cls, param, classes=False, fallback="") -> Optional[list]:
        mine = dict(self.instance).get((os.path.abspath(filename), cls, param))
        if mine is not None and (mine[1] or fallback):  # the instance being read names it
            return [{param: mine if mine[1] else (filename, fallback)}]
        reader = signatures.class_named if classes else signatures.built_class
        got = self.constructions_of(filename, cls, reader, needs=param)
        if got is None or got[0] is None:
            return None
        out = []
        for b in got[0]:
            value = b.get(param)
            if isinstance(value, callers.Forwarded) and classes:  # ``Block(d, attn_cls)``
                value = self._class_forwarded(value, 0)
            elif value == callers.MISSING and fallback:
                value = (filename, fallback)
            out.append({**b, param: value})
        return out

    def _class_forwarded(self, value, depth: int) -> object:
        """The class every construction in the project of the class that
        forwards its constructor's parameter (GPT's ``Block(d, attn_cls)``)
        names for it (left out: its class default), followed up
        ``callers.MAX_FORWARDS`` classes; else ``signatures.UNKNOWN``."""
        mine = dict(self.instance).get((os.path.abspath(value.path), value.cls, value.param))
        if mine is not None:
            return mine
        got = None
        if depth < callers.MAX_FORWARDS:
            got = self.constructions_of(
                value.path, value.cls, signatures.class_named, needs=value.param
            )
        text = self.class_source(value.path)
        if got is None or got[0] is None or text is None:
            return signatures.UNKNOWN
        default = signatures.init_default_names(text, value.cls).get(value.param)
        found = set()
        for b in got[0]:
            given = b.get(value.param)
            if isinstance(given, callers.Forwarded):
                given = self._class_forwarded(given, depth + 1)
            elif given == callers.MISSING and default and default[:1].isupper():
                given = (value.path, default)
            if not isinstance(given, tuple):
                return signatures.UNKNOWN
            found.add(given)
        return found.pop() if len(found) == 1 else signatures.UNKNOWN

    def class_source(self, filename: str) -> Optional[str]:
        """The text a class of ``filename`` is read from: the linted file as
        linted (an editor's buffer), another read once per linted file;
        None when it cannot be read."""
        if filename == self.path and self._own_source is not None:
            return self._own_source
        texts = self.__dict__.setdefault("_class_sources", {})
        if filename not in texts:
            try:
                texts[filename] = decode(read_regular(filename, callers.MAX_BYTES))
            except (OSError, UnicodeDecodeError, LookupError):
                texts[filename] = None
        return texts[filename]

    def classes_handed(self, call, made, func, env, scope) -> tuple:
        """((the class's file, the class, its parameter), (the file, the class
        as it writes it)) for each class the construction ``call`` hands its
        constructor (``handed.classes_handed``), and each class default it
        leaves to its ``__init__``."""
        if made is None and own_definition(func, env, scope, DefKind.CLASS) is None:
            return ()
        loc = self._defined(made) if made is not None else (self.path, func.value)
        if loc is None or "." in loc[1]:
            return ()
        text = self.class_source(loc[0])
        signature = signatures.init_signature(text, loc[1]) if text else None
        if signature is None:
            return ()
        passed = handed_forms.classes_handed(call, signature[0])
        if passed is None:
            return ()
        given = {p: (self.path, c) for p, c in passed.items()}
        for param, default in signatures.init_default_names(text, loc[1]).items():
            if param not in given and default.rpartition(".")[2][:1].isupper():
                given[param] = (loc[0], default)  # left out: its class default, in its file
        given.update(self._instances_handed(call, loc, signature[0], given))
        where = os.path.abspath(loc[0])
        return tuple(((where, loc[1], p), c) for p, c in sorted(given.items()))

    def _instances_handed(self, call, loc, params, given) -> dict:
        """For each module the class keeps as handed, with one of its own when
        none is (``self.processor = processor if processor is not None else
        AttnProcessor2_0()``, ``chains.FALLBACK``): what this construction
        hands it, a class built right there, or ``(file, "")`` when it
        leaves it out (the class's own, ``handed``): each instance its own
        processor (probe AO's pkg03, a block with the default processor
        beside one built with the math processor)."""
        kept = self._table(loc[0]).get(ATTRS, {}).get(loc[1], {})
        wanted = {
            v[len(chains.INJECTED) :].partition(chains.FALLBACK)[0]
            for v in kept.values()
            if v.startswith(chains.INJECTED) and chains.FALLBACK in v and chains.CALLED not in v
        } - set(given)
        built = handed_forms.instances_handed(call, params) if wanted else None
        if built is None:
            return {}
        out = {}
        for param in wanted:
            if param not in built:
                out[param] = (loc[0], "")
            elif built[param] is not None:
                out[param] = (self.path, built[param])
        return out

    # -- constants from other files ------------------------------------------------
    def default_text(self, text: Optional[str], filename: str) -> Optional[str]:
        """A summary's default as source text; an imported name a ``partial``
        bound (``forms.IMPORTED``) as the literal value of the project
        constant it names, read from the file of the summary (else None)."""
        if text is None or not text.startswith(IMPORTED):
            return text
        level, _, dotted = text[len(IMPORTED) :].partition(":")
        loc = self._defined((int(level), dotted), self.package_of(filename))
        if loc is None or "." in loc[1]:
            return None
        table = self.constants(loc[0])
        return repr(table[loc[1]]) if loc[1] in table else None

    def imported_constant(self, stmt, name: str, attr: Optional[str] = None):
        """``(value,)`` of the module-level constant ``name`` that the import
        statement ``stmt`` brings from a project file (``from .config import
        WIDTH``), or, with ``attr``, of the constant ``attr`` of the project
        module that ``stmt`` binds to ``name`` (``from . import config`` or
        ``import pkg.config as config``, then ``config.WIDTH``); else None.
        Asked by ``values.py`` only for a value a rule needs, so a file's
        other imports cost nothing."""
        target = _import_at(stmt, name, attr)
        if target is None:
            return None
        try:
            return self.constant_at(*target)
        except (OSError, ValueError, RecursionError):
            return None

    def imported_sequence(self, stmt, name: str, attr: Optional[str] = None) -> Optional[tuple]:
        """The numbers of the module-level tuple or list ``name`` (with
        ``attr``: of the module ``stmt`` binds to ``name``) that the import
        ``stmt`` brings from a project file (``from .config import
        EMBED_DIMS``); else None (``sequences.sequence_of``)."""
        target = _import_at(stmt, name, attr)
        if target is None:
            return None
        try:
            loc = self._defined(target)
            if loc is None or "." in loc[1]:
                return None
            got = self.constants(loc[0]).get(loc[1] + SEQUENCE)
        except (OSError, ValueError, RecursionError):
            return None
        return got if type(got) is tuple else None

    def mixed_elsewhere(self, name: str) -> Optional[bool]:
        """For a class ``name`` of the linted file: whether the project files
        that import it use it as a base only of module classes (probe AN's
        AN21: ``class SDPAMixin:`` in ops.py, mixed into ``class
        MaskedCrossAttention(SDPAMixin, nn.Module)`` in xattn.py); None when
        no such class is found, or the importers cannot be listed."""
        if not self.files or not self.path:
            return None
        found = callers.importers_of(self.path)
        if not found:
            return None
        heirs = 0
        for filename in found[:MAX_MIXIN_FILES]:
            table = self.bases_of(filename)
            package = self.package_of(filename)
            for cls, bases in table.items():
                mixes = any(
                    b[0] == "import" and self._names_here(b[1], b[2], package, name) for b in bases
                )
                if not mixes:
                    continue
                if not self._module_in(filename, cls, 0):
                    return False
                heirs += 1
        return True if heirs else None

    def _names_here(self, level: int, dotted: str, package, name: str) -> bool:
        """Whether an import of ``(level, dotted)`` read in ``package`` names the
        class ``name`` of the linted file (``locate`` never answers the linted
        file itself)."""
        rest = dotted.split(".")
        if rest[-1] != name or (level and level - 1 > len(package)):
            return False
        base = list(package[: len(package) - (level - 1)]) if level else []
        found = module_file(self.root, base + rest[:-1])
        return found is not None and os.path.abspath(found) == os.path.abspath(self.path)

    def imported_dict_keys(self, stmt, name: str) -> Optional[frozenset]:
        """The keys of the module-level keyword dict ``name`` that ``stmt``
        imports from a project file (``from .config import LAYER_KW``, then
        ``nn.TransformerEncoderLayer(d, h, **LAYER_KW)``: probe AN's AN27)."""
        target = _import_at(stmt, name, None)
        return self.dict_keys_at(target) if target is not None else None

    def imported_registry(self, stmt, name: str, key=None) -> Optional[str]:
        """The qualified torch class every value of the module-level dict
        ``name`` that ``stmt`` imports from a project file names, or the one
        under ``key`` when that is a string (``ATTN_TYPES = {"mha":
        nn.MultiheadAttention, "linear": LinearMixer}`` in ``registry.py``,
        then ``ATTN_TYPES[kind](dim, heads)`` with ``kind`` "mha": probe AF's
        AF19); else None."""
        target = _import_at(stmt, name, None)
        return self.registry_at(target, key) if target is not None else None

    def named_defaults(self, cls: str, defaults: dict) -> dict:
        """``defaults`` with the ``__init__`` defaults that name a constant
        (``dim=WIDTH``, ``heads=config.HEADS``) replaced by its value, when it
        is a module-level constant of this file or of the project file it is
        imported from (RULES.md: known statically)."""
        names = signatures.init_default_names(self._own_source, cls)
        if not names:
            return defaults
        try:
            tree = signatures.parse(self._own_source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return defaults
        own = module_constants(tree)
        imported = chains.imports(tree)
        out = dict(defaults)
        for param, dotted in names.items():
            head, _, rest = dotted.partition(".")
            if not rest and head in own:
                out[param] = own[head]
            elif head in imported:
                level, path = imported[head]
                try:
                    loc = self._defined((level, path + ("." + rest if rest else "")))
                    table = self.constants(loc[0]) if loc else {}
                except (OSError, ValueError, RecursionError):
                    continue
                if loc and loc[1] in table:
                    out[param] = table[loc[1]]
        return out


def _import_at(stmt, name: str, attr: Optional[str]) -> Optional[Tuple[int, str]]:
    """(relative level, dotted) of what the import ``stmt`` binds to
    ``name`` (with ``attr``, of that attribute of the module it binds)."""
    if isinstance(stmt, cst.Import):
        target = _imported_module(stmt, name)
        if target is None or attr is None:
            return None
        return 0, f"{target}.{attr}"
    if not isinstance(stmt, cst.ImportFrom) or isinstance(stmt.names, cst.ImportStar):
        return None
    for alias in stmt.names:
        bound = alias.asname.name if alias.asname is not None else alias.name
        if isinstance(bound, cst.Name) and bound.value == name:
            break
    else:
        return None
    dotted = import_path(alias.name)
    if "." in dotted:
        return None
    base = import_path(stmt.module) if stmt.module is not None else ""
    return len(stmt.relative), f"{base}.{dotted}".lstrip(".") + (f".{attr}" if attr else "")


def _imported_module(stmt: cst.Import, name: str) -> Optional[str]:
    """The dotted module that ``import a.b as name`` binds to ``name``
    (``import config`` binds ``config``; ``import a.b`` binds only ``a``)."""
    if isinstance(stmt.names, cst.ImportStar):
        return None
    for alias in stmt.names:
        dotted = import_path(alias.name)
        if alias.asname is not None:
            if isinstance(alias.asname.name, cst.Name) and alias.asname.name.value == name:
                return dotted
        elif dotted == name:
            return dotted
    return None


def _classmethod_owner(scope, name: str) -> Optional[str]:
    """The module-level class whose ``@classmethod`` ``scope`` is, when
    ``name`` is that method's first parameter (``cls``); else None."""
    func = getattr(scope, "node", None)
    cls = getattr(scope, "cls", None)
    if cls is None or not isinstance(func, cst.FunctionDef) or cls.scope is None:
        return None
    if cls.scope.kind != ScopeKind.MODULE or not func.params.params:
        return None
    if func.params.params[0].name.value != name:
        return None
    decorated = any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod"
        for d in func.decorators
    )
    return cls.name if decorated else None
