"""The bottom layer: what torch and einx are (``torch_api``, ``einx_api``), a finding
(``findings``), atomic writes (``atomic``), lines and positions.  Imports nothing above it."""
