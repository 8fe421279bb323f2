"""deplodock: a hackable ML compiler, PyTorch → torch → ten → loop → tile → kernel → CUDA.

This folder (``tools/``) is the package root: ``deplodock.cli`` and ``deplodock.opt`` are
the two commands, ``deplodock.pipeline`` says which passes lead to which level. The
dialects, passes, frontends and backends live in the top-level folders of the same names
and import as ``deplodock.dialects`` and so on (see pyproject.toml's package-dir).

The Python API (``deplodock.api``): ``deplodock.compile(module_or_fn, *example_inputs)``
returns a callable on CUDA tensors, ``deplodock.lower(..., to="loop")`` the IR of any
level; ``torch.compile(model, backend="deplodock")`` goes through
``deplodock.torch_backend``. They are imported on first use, so ``import deplodock.cli``
stays light.
"""

__all__ = ["compile", "lower"]


def __getattr__(name: str):
    if name in __all__:
        from deplodock import api

        return getattr(api, name)
    raise AttributeError(f"module 'deplodock' has no attribute {name!r}")
