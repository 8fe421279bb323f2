"""Every pass of the project, by the name `deplo-opt -p` and `deplodock -v` use.

One module per pass, grouped by the level it rewrites. ``PIPELINE`` is the only place
that lists them, in the order ``deplodock.pipeline.lower`` runs them, so the CLI, the API,
deplo-opt, the torch.compile backend and the pipeline agree on names and order.
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# The pipeline, in order: (the level a pass helps produce, its name, "module:ClassName").
# Passes are imported on first use, so start-up stays fast.
PIPELINE: tuple[tuple[str, str, str], ...] = (
    ("tensor", "decompose", "deplodock.passes.torch.decompose:Decompose"),
    ("loop", "lift-to-loop", "deplodock.passes.tensor.lift_to_loop:LiftToLoop"),
    ("loop", "fuse", "deplodock.passes.loop.fuse:Fuse"),
    ("loop", "online-softmax", "deplodock.passes.loop.online_softmax:OnlineSoftmax"),
    ("tile", "tileify", "deplodock.passes.tile.tileify:Tileify"),
    ("tile", "collapse-reduce", "deplodock.passes.tile.collapse_reduce:CollapseReduce"),
    ("tile", "split-matmul-k", "deplodock.passes.tile.split_matmul_k:SplitMatmulK"),
    ("tile", "register-tile", "deplodock.passes.tile.register_tile:RegisterTile"),
    ("tile", "chunk-matmul-k", "deplodock.passes.tile.chunk_matmul_k:ChunkMatmulK"),
    ("tile", "chunk-reduce", "deplodock.passes.tile.chunk_reduce:ChunkReduce"),
    ("tile", "cooperative-reduce", "deplodock.passes.tile.cooperative_reduce:CooperativeReduce"),
    ("tile", "vectorize", "deplodock.passes.tile.vectorize:Vectorize"),
    ("tile", "blockify-launch", "deplodock.passes.tile.blockify_launch:BlockifyLaunch"),
    (
        "tile",
        "permute-register-tile",
        "deplodock.passes.tile.permute_register_tile:PermuteRegisterTile",
    ),
    ("tile", "stage-inputs", "deplodock.passes.tile.stage_inputs:StageInputs"),
    ("tile", "pad-smem", "deplodock.passes.tile.pad_smem:PadSmem"),
    ("tile", "fill-k-loop", "deplodock.passes.tile.fill_k_loop:FillKLoop"),
    (
        "tile",
        "split-inner-for-swizzle",
        "deplodock.passes.tile.split_inner_for_swizzle:SplitInnerForSwizzle",
    ),
    ("tile", "mark-unroll", "deplodock.passes.tile.mark_unroll:MarkUnroll"),
    ("kernel", "materialize", "deplodock.passes.kernel.materialize:Materialize"),
)

_PASSES: dict[str, str] = {name: spec for _, name, spec in PIPELINE}


def _loader(spec: str) -> Callable[[], type[ModulePass]]:
    module, _, cls = spec.partition(":")
    return lambda: getattr(import_module(module), cls)


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """name -> a function returning the pass class (the form xDSL's opt main expects)."""
    return {name: _loader(spec) for name, spec in _PASSES.items()}


def get_pass(name: str) -> type[ModulePass]:
    if name not in _PASSES:
        raise KeyError(f"unknown pass '{name}' (known: {', '.join(_PASSES)})")
    return _loader(_PASSES[name])()
