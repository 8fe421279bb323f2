"""Session 18: attention's walk with its keys merged a batch at a time (``batch-walk-steps``)
against one key a step (``batch=1``, session 15's kernel), and the batched walk with its
head dim over other lane counts, other threads a row and other block sizes, beside eager
and torch.compile in one run (``deplodock.bench.variants``: each variant checked against
eager at 1e-5 of the largest output, then timed).

    python3 docs/bench/h200-2026-12-03-s18/attention.py [CASE ...]      # default: all
"""

import importlib.util
import os
import sys
import warnings

warnings.filterwarnings("ignore")
_S15 = os.path.join(os.path.dirname(__file__), "..", "h200-2026-12-03-s15", "attention.py")
_spec = importlib.util.spec_from_file_location("attention_s15", _S15)
_s15 = importlib.util.module_from_spec(_spec)
sys.modules["attention_s15"] = _s15  # torch.compile imports the cases' module by name
_spec.loader.exec_module(_s15)
CASES = _s15.CASES  # session 15's cases

BLOCKS = [int(b) for b in os.environ.get("BLOCKS", "64,128").split(",") if b]


def variants(name: str):
    """Call 4 (the defaults: batched, lanes by ``walk_column_lanes``, the batch loop
    rolled): against one key a step, other block sizes and four lanes. (Calls 2 and 3
    forced lanes, ``cooperative-reduce{threads=1}`` and blocks on the earlier defaults:
    ``u{lanes}t1b{block}``, and ``rolled`` = ``mark-unroll{max_trips=1}``.)"""
    from deplodock.passes.tile.batch_walk_steps import BatchWalkSteps
    from deplodock.passes.tile.blockify_launch import BlockifyLaunch
    from deplodock.passes.tile.split_walk_columns import SplitWalkColumns

    out = {"default": {}, "batch1": {"batch-walk-steps": BatchWalkSteps(batch=1)}}
    if name.startswith("decode"):
        return out
    for block in BLOCKS:
        out[f"b{block}"] = {"blockify-launch": BlockifyLaunch(block_threads=block)}
    out["u4"] = {"split-walk-columns": SplitWalkColumns(lanes=4)}
    return out


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
