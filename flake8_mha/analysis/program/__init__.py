"""The program analysis: calls across functions, module instances, factories
and files, with one mechanism (docs/reach.md).

- ``summaries``: per function, method and factory, read with ``ast``: which
  parameter reaches which SDPA argument (or a held torch module's mask
  argument), through which transformations;
- ``forms``: the forms a wrapper takes beyond a plain function (a factory's
  closure, a module-level ``partial``, a held torch module, an inherited
  ``forward``);
- ``chains``: each summary's calls of other functions and modules (edges),
  and how a callee's summary composes into its caller's;
- ``files``: the project around a linted file (its root, which file an import
  names, the summaries kept per process and in the cache), the project-aware
  gate, module-level constants;
- ``callsites``: a call in the LibCST tree seen as the SDPA (or module) call
  its callee's composed summary describes, wherever the callee lives;
- ``callers``: the files that import a changed file, what every construction
  of a class in the project passes, and what every call of a function does;
- ``callgraph``: in one file's LibCST tree, which ``def`` a call runs and
  which argument reaches which parameter; the mask and layout evaluators
  step into same-file helpers through it.
"""
