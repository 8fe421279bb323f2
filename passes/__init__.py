"""Every pass of the project, by the name `deplo-opt -p` and `deplodock -v` use.

One module per pass, grouped by the level it rewrites; this table is the only place that
lists them, so the CLI, deplo-opt and the pipeline agree on names.
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# pass name -> "module:ClassName", imported on first use so start-up stays fast.
_PASSES: dict[str, str] = {
    "decompose": "deplodock.passes.torch.decompose:Decompose",
    "lift-to-loop": "deplodock.passes.tensor.lift_to_loop:LiftToLoop",
    "fuse": "deplodock.passes.loop.fuse:Fuse",
    "tileify": "deplodock.passes.tile.tileify:Tileify",
    "split-matmul-k": "deplodock.passes.tile.split_matmul_k:SplitMatmulK",
    "register-tile": "deplodock.passes.tile.register_tile:RegisterTile",
    "chunk-matmul-k": "deplodock.passes.tile.chunk_matmul_k:ChunkMatmulK",
    "chunk-reduce": "deplodock.passes.tile.chunk_reduce:ChunkReduce",
    "cooperative-reduce": "deplodock.passes.tile.cooperative_reduce:CooperativeReduce",
    "blockify-launch": "deplodock.passes.tile.blockify_launch:BlockifyLaunch",
    "stage-inputs": "deplodock.passes.tile.stage_inputs:StageInputs",
    "permute-register-tile": "deplodock.passes.tile.permute_register_tile:PermuteRegisterTile",
    "pad-smem": "deplodock.passes.tile.pad_smem:PadSmem",
    "double-buffer": "deplodock.passes.tile.double_buffer:DoubleBuffer",
    "async-copy": "deplodock.passes.tile.async_copy:AsyncCopy",
    "tma-copy": "deplodock.passes.tile.tma_copy:TmaCopy",
    "split-inner-for-swizzle": "deplodock.passes.tile.split_inner_for_swizzle:SplitInnerForSwizzle",
    "pipeline-k-outer": "deplodock.passes.tile.pipeline_k_outer:PipelineKOuter",
    "vectorize": "deplodock.passes.tile.vectorize:Vectorize",
    "mark-unroll": "deplodock.passes.tile.mark_unroll:MarkUnroll",
    "materialize": "deplodock.passes.kernel.materialize:Materialize",
}


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
