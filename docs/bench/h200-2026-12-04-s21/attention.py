"""Session 21: attention-shapes' misses as variants of the passes' options, beside eager
and torch.compile in one run (``deplodock.bench.variants``: each variant checked against
eager at 1e-5 of the largest output, then timed).

- head dim 1024 (S=512, causal): one walk of 32 lanes, 32 columns a lane, blocks of 4
  rows (the default since call 1), against blocks of 2 rows (``b64``), the keys not
  staged (``k1``: read through L1), 4 keys a staged chunk (``k4``) and the keys split in
  two across blocks (``c2``). Call 1 also had 8 rows (``b256``) and 16 lanes (``u16``).
- S=1000, not causal: 8000 rows of 8 lanes on 250 blocks (default), against the keys
  split across blocks (``c{N}``: chunk-reduce, flash-decoding's combine after; call 1
  had the chunk kernel's keys shared by 32 threads, since call 2 its head dim dealt to
  lanes), with 4 lanes (``u4``) or blocks of 64 (``b64``), and 2 lanes unsplit (``u2``).
- TinyLlama's and Qwen2.5-7B's causal S=512: the keys split in two (``c2``).
- Call 3 (``CALL=3``; calls 1-2: ``CALL=2``): the new defaults against other blocks and
  chunks around them. Call 4 (``CALL=4``, the default): S=1000 with its parts merged on
  lanes (split-walk-columns on chunk-reduce's merge), and a decode step of head dim 64
  (its walk fused with its scores, split by keys since ``analysis.prelude``) against
  the walk whole (``whole``: ``chunk-reduce{chunks=1}``); causal walks with their blocks
  launched longest rows first (``rev``: ``blockify-launch{heavy_first}``).
- Call 7 (``CALL=7``): TinyLlama's and Qwen's causal S=512, whose blocks are all resident
  at once (ncu, call 6: SMs active 67% of the kernel's time), split by keys (``c2``), in
  blocks of 32 threads (``b32``), 16 keys a chunk (``k16``), 4 or 8 lanes (``u4``, ``u8``).
- Call 9 (``CALL=9``, the default): ``jam-walk-rows{rows=2}`` (two query rows a thread,
  each staged key and value element read once for both), alone (``j2``: its blocks half
  as many threads), with blocks packed twice the rows (``b``: 64 threads after the jam),
  and with twice the lanes (``u8`` at head dim 128, ``u4`` at 64: a thread's registers as
  before).

    python3 docs/bench/h200-2026-12-04-s21/attention.py [CASE ...]      # default: all
"""

import importlib.util
import os
import sys
import warnings

warnings.filterwarnings("ignore")
CALL = int(os.environ.get("CALL", "9"))  # which call's variants (calls 1-2: before 500a9ad)
_S15 = os.path.join(os.path.dirname(__file__), "..", "h200-2026-12-03-s15", "attention.py")
_spec = importlib.util.spec_from_file_location("attention_s15", _S15)
_s15 = importlib.util.module_from_spec(_spec)
sys.modules["attention_s15"] = _s15  # torch.compile imports the cases' module by name
_spec.loader.exec_module(_s15)
_sdpa = _s15._sdpa  # (q heads, kv heads, queries, keys, head dim, causal) -> a case


CASES = {
    "d1024_S512": _sdpa(4, 4, 512, 512, 1024, True),
    "d64_S1000": _sdpa(8, 8, 1000, 1000, 64, False),
    "tinyllama_S512": _sdpa(32, 4, 512, 512, 64, True),
    "qwen_S512": _sdpa(28, 4, 512, 512, 128, True),
    "decode_d64_kv4096": _sdpa(32, 4, 1, 4096, 64, False),
    "d128_S2048": _sdpa(16, 16, 2048, 2048, 128, True),
    "d64_S4096": _sdpa(32, 8, 4096, 4096, 64, True),
}


def variants(name: str):
    from deplodock.passes.tile.blockify_launch import BlockifyLaunch
    from deplodock.passes.tile.chunk_reduce import ChunkReduce
    from deplodock.passes.tile.chunk_walk import ChunkWalk
    from deplodock.passes.tile.split_walk_columns import SplitWalkColumns

    def chunked(chunks, **more):
        return {"chunk-reduce": ChunkReduce(chunks=chunks), **more}

    out = {"default": {}}
    if name.startswith("decode"):  # a fused walk: split by chunks_for since 500a9ad
        out["whole"] = {"chunk-reduce": ChunkReduce(chunks=1)}
        return out
    if CALL >= 9:  # jam-walk-rows: two query rows a thread, each staged element read once
        from deplodock.passes.tile.jam_walk_rows import JamWalkRows

        jam = {"jam-walk-rows": JamWalkRows(rows=2)}
        wide = {"blockify-launch": BlockifyLaunch(block_threads=128)}  # 64 after the jam
        out["j2"] = jam
        out["j2b"] = {**jam, **wide}
        if name in ("qwen_S512", "d128_S2048"):
            lanes = {"split-walk-columns": SplitWalkColumns(lanes=8)}
            out = {"default": {}, "j2u8": {**jam, **lanes}, "j2u8b": {**jam, **lanes, **wide}}
        elif name.startswith(("tinyllama", "d64_S4096")):
            lanes = {"split-walk-columns": SplitWalkColumns(lanes=4)}
            out["j2u4"] = {**jam, **lanes}
            out["j2u4b"] = {**jam, **lanes, **wide}
        return out
    if CALL >= 7:  # causal S=512: every block resident at once, the longest on its own
        out["c2"] = chunked(2)
        out["b32"] = {"blockify-launch": BlockifyLaunch(block_threads=32)}
        out["k16"] = {"chunk-walk": ChunkWalk(chunk=16)}
        out["b32k16"] = {**out["b32"], **out["k16"]}
        out["u4"] = {"split-walk-columns": SplitWalkColumns(lanes=4)}
        out["u8"] = {"split-walk-columns": SplitWalkColumns(lanes=8)}
        return out
    if CALL >= 4:  # S=1000's merge of the parts on lanes; causal blocks longest first
        if name.startswith("d64_S1000"):
            out["c4"] = chunked(4)
            out["b128"] = {"blockify-launch": BlockifyLaunch(block_threads=128)}
        else:
            out["rev"] = {"blockify-launch": BlockifyLaunch(heavy_first=True)}
        return out
    if CALL >= 3:  # the defaults of commit 500a9ad: d1024 k4 b128, S=1000 c8 b64
        if name.startswith("d1024"):
            out["b256"] = {"blockify-launch": BlockifyLaunch(block_threads=256)}
            out["b64"] = {"blockify-launch": BlockifyLaunch(block_threads=64)}
            out["k2"] = {"chunk-walk": ChunkWalk(chunk=2)}
        elif name.startswith("d64_S1000"):
            out["c4"] = chunked(4)
            out["c16"] = chunked(16)
            out["b128"] = {"blockify-launch": BlockifyLaunch(block_threads=128)}
        return out
    if name.startswith("d1024"):
        out["b64"] = {"blockify-launch": BlockifyLaunch(block_threads=64)}
        out["k1"] = {"chunk-walk": ChunkWalk(chunk=1)}  # keys read from L1/L2, not staged
        out["k4"] = {"chunk-walk": ChunkWalk(chunk=4)}
        out["c2"] = chunked(2)
        return out
    if name.endswith("S512"):  # causal: the keys split across blocks, early chunks empty
        out["c2"] = chunked(2)
        return out
    for chunks in (2, 4, 8):
        out[f"c{chunks}"] = chunked(chunks)
    out["c4u4"] = chunked(4, **{"split-walk-columns": SplitWalkColumns(lanes=4)})
    out["c4b64"] = chunked(4, **{"blockify-launch": BlockifyLaunch(block_threads=64)})
    out["c8b64"] = chunked(8, **{"blockify-launch": BlockifyLaunch(block_threads=64)})
    out["u2"] = {"split-walk-columns": SplitWalkColumns(lanes=2)}
    return out


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
