"""deplodock: a hackable ML compiler, PyTorch → torch → ten → loop → tile → kernel → CUDA.

This folder (``tools/``) is the package root: ``deplodock.cli`` and ``deplodock.opt`` are
the two commands, ``deplodock.pipeline`` says which passes lead to which level. The
dialects, passes, frontends and backends live in the top-level folders of the same names
and import as ``deplodock.dialects`` and so on (see pyproject.toml's package-dir).
"""
