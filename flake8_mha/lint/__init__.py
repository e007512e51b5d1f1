"""One file's findings: the engine that runs the rules over the analysis, ``# noqa``
(``noqa``) and which codes a run reports (``selection``)."""
