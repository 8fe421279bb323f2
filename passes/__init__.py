"""Every pass of the project, by the name `deplo-opt -p` and `deplodock -v` use.

One module per pass, grouped by the level it rewrites. ``PIPELINE`` is the only place
that lists them, in the order ``deplodock.pipeline.lower`` runs them, each with its number
within its level (``pass_tag``: ``t:007_stage-inputs``), so the CLI, the API, deplo-opt,
the torch.compile backend and the pipeline agree on names, numbers and order.
"""

import dataclasses
from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# The pipeline, in order: (the level a pass helps produce, the pass's number within that
# level, its name, "module:ClassName"). Passes are imported on first use, so start-up stays
# fast. The numbers name a pass in the per-pass markers of ``deplodock -vv`` (``>>> t:007_
# stage-inputs``, ``pass_tag``) and are stable: the tile passes keep the numbers the seed's
# write-up gave them (tileify 1, chunk-matmul-k 2, split-matmul-k 3, cooperative-reduce 4,
# blockify-launch 5, chunk-reduce 6, stage-inputs 7, register-tile 8, permute-register-tile 9,
# split-inner-for-swizzle 12, pad-smem 14, mark-unroll 16), though they run in another order
# (the README's architecture section says why); fill-k-loop, which replaced double-buffer (10),
# tma-copy (11), async-copy (13) and pipeline-k-outer (15), has the first of their numbers, the
# other three are retired; a pass the write-up does not have is numbered after 16. A new pass
# takes the next free number of its level; a number is never reused.
PIPELINE: tuple[tuple[str, int, str, str], ...] = (
    ("tensor", 1, "decompose", "deplodock.passes.torch.decompose:Decompose"),
    ("tensor", 2, "softmax-sum", "deplodock.passes.tensor.softmax_sum:SoftmaxSum"),
    ("loop", 1, "lift-to-loop", "deplodock.passes.tensor.lift_to_loop:LiftToLoop"),
    ("loop", 2, "fuse", "deplodock.passes.loop.fuse:Fuse"),
    ("loop", 5, "fold-integers", "deplodock.passes.loop.fold_integers:FoldIntegers"),
    ("loop", 3, "online-softmax", "deplodock.passes.loop.online_softmax:OnlineSoftmax"),
    ("loop", 4, "unroll-dots", "deplodock.passes.loop.unroll_dots:UnrollDots"),
    ("tile", 1, "tileify", "deplodock.passes.tile.tileify:Tileify"),
    ("tile", 24, "tile-walk", "deplodock.passes.tile.tile_walk:TileWalk"),
    ("tile", 17, "collapse-reduce", "deplodock.passes.tile.collapse_reduce:CollapseReduce"),
    ("tile", 3, "split-matmul-k", "deplodock.passes.tile.split_matmul_k:SplitMatmulK"),
    ("tile", 8, "register-tile", "deplodock.passes.tile.register_tile:RegisterTile"),
    ("tile", 2, "chunk-matmul-k", "deplodock.passes.tile.chunk_matmul_k:ChunkMatmulK"),
    ("tile", 6, "chunk-reduce", "deplodock.passes.tile.chunk_reduce:ChunkReduce"),
    (
        "tile",
        21,
        "split-walk-columns",
        "deplodock.passes.tile.split_walk_columns:SplitWalkColumns",
    ),
    (
        "tile",
        4,
        "cooperative-reduce",
        "deplodock.passes.tile.cooperative_reduce:CooperativeReduce",
    ),
    ("tile", 18, "vectorize", "deplodock.passes.tile.vectorize:Vectorize"),
    ("tile", 5, "blockify-launch", "deplodock.passes.tile.blockify_launch:BlockifyLaunch"),
    ("tile", 25, "mma-contract", "deplodock.passes.tile.mma_contract:MmaContract"),
    (
        "tile",
        9,
        "permute-register-tile",
        "deplodock.passes.tile.permute_register_tile:PermuteRegisterTile",
    ),
    ("tile", 19, "chunk-walk", "deplodock.passes.tile.chunk_walk:ChunkWalk"),
    (
        "tile",
        20,
        "skip-masked-chunks",
        "deplodock.passes.tile.skip_masked_chunks:SkipMaskedChunks",
    ),
    ("tile", 7, "stage-inputs", "deplodock.passes.tile.stage_inputs:StageInputs"),
    ("tile", 14, "pad-smem", "deplodock.passes.tile.pad_smem:PadSmem"),
    ("tile", 10, "fill-k-loop", "deplodock.passes.tile.fill_k_loop:FillKLoop"),
    (
        "tile",
        12,
        "split-inner-for-swizzle",
        "deplodock.passes.tile.split_inner_for_swizzle:SplitInnerForSwizzle",
    ),
    ("tile", 22, "batch-walk-steps", "deplodock.passes.tile.batch_walk_steps:BatchWalkSteps"),
    ("tile", 23, "jam-walk-rows", "deplodock.passes.tile.jam_walk_rows:JamWalkRows"),
    ("tile", 16, "mark-unroll", "deplodock.passes.tile.mark_unroll:MarkUnroll"),
    ("kernel", 1, "materialize", "deplodock.passes.kernel.materialize:Materialize"),
)

# Each level's mark in a pass's tag: the first letter of its dialect (loop, tile, kernel),
# as the write-up prints the tile level's; the tensor level's is its dialect's name, ``ten``
# (``t`` is the tile level's).
LEVEL_MARKS: dict[str, str] = {"tensor": "ten", "loop": "l", "tile": "t", "kernel": "k"}

_TAGS: dict[str, str] = {
    name: f"{LEVEL_MARKS[level]}:{number:03d}_{name}" for level, number, name, _ in PIPELINE
}


def pass_tag(name: str) -> str:
    """The pass's name in ``-v``'s list and ``-vv``'s markers: its level's mark, its number
    within the level and its name, ``t:007_stage-inputs``."""
    return _TAGS[name]


_PASSES: dict[str, str] = {name: spec for _, _, name, spec in PIPELINE}


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


def decides_from_hardware(pass_: ModulePass | type[ModulePass]) -> bool:
    """Whether a pass (or pass class) plans for a target: it has an ``arch`` field
    (``deplodock.target``)."""
    return dataclasses.is_dataclass(pass_) and any(
        f.name == "arch" for f in dataclasses.fields(pass_)
    )
