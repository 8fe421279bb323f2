"""The levels a program passes through, top to bottom: what ``--ir`` and ``lower(to=...)``
name. A module of its own, importing nothing, so the CLI can build its parser (and answer
from the output cache) before xDSL and torch are loaded."""

LEVELS = ("torch", "tensor", "loop", "tile", "kernel", "cuda")
