"""What the code means: the flow pass and values (``flow``, ``values``, ``resolve``,
``events``), the focused parse (``focus``), calls across the program (``program/``),
module identity through containers (``reach``), and the domains read through them
(``masks/``, ``layout/``, ``heads``, ``gqa``, ``scores``).  Imports the core only."""
