"""Time the generated matmul kernels: products stored both ways, and unrolled K chunks.

On the GPU machine, from the repo root::

    python3 docs/bench/h200-2026-11-30-s6/sweep.py OUT

Session 6 added the mixed rotation (cp.async for the slab in the source's order, register
prefetch for the transposed one, in one double-buffered loop) and unrolled K chunks of 16
whole (``mark-unroll``'s ``max_chunk_trips``). This sweep times, per shape, every block
tile x K chunk x K splits variant

* of the products stored both ways (``torch.matmul``: the squares, and batched ones shaped
  like attention's P.V), single-buffered as before (``sb``) and with the mixed rotation
  (``mx``);
* of the projections (``x @ w.T``, both slabs transposed) with a K chunk of 16, rolled as
  before (``u8``: NVRTC unrolls 4) and unrolled whole (``u16``);

each 8 x 8 tile capped at 128 registers (``__launch_bounds__``) or not as the cost model
would (``capped``). Every variant is built on a process pool, checked against PyTorch and
timed beside cuBLAS with ``time_graphs`` (TF32 off). Writes OUT/sweep.json, OUT/sweep.txt.
"""

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

LINEAR = {  # (M, N, K) of x[M, K] @ w[N, K].T; tl = TinyLlama, qw = Qwen2.5-7B, S = tokens
    "tl_down_S32": (32, 2048, 5632),
    "tl_q_S128": (128, 2048, 2048),
    "tl_gu_S128": (128, 5632, 2048),
    "tl_down_S128": (128, 2048, 5632),
    "tl_q_S512": (512, 2048, 2048),
    "tl_gu_S512": (512, 5632, 2048),
    "qw_gu_S32": (32, 18944, 3584),
    "qw_o_S128": (128, 3584, 3584),
    "qw_down_S128": (128, 3584, 18944),
    "qw_o_S512": (512, 3584, 3584),
    "qw_down_S512": (512, 3584, 18944),
}
MIXED = {  # (batch, M, N, K) of a[batch, M, K] @ b[batch, K, N]
    "sq_mm_1024": (1, 1024, 1024, 1024),
    "sq_mm_2048": (1, 2048, 2048, 2048),
    "sq_mm_4096": (1, 4096, 4096, 4096),
    "tl_pv_S128": (32, 128, 64, 128),
    "tl_pv_S512": (32, 512, 64, 512),
    "qw_pv_S128": (28, 128, 128, 128),
    "qw_pv_S512": (28, 512, 128, 512),
}
MAX_BLOCKS = 32 * 132


def tiles(k16_only: bool):
    """The cost model's block tiles, each 8 x 8 one with K chunks of 8 and 16."""
    from deplodock.passes.tile import matmul_tile as mt

    found = []
    for c in mt.CANDIDATES:
        t = c.tile
        chunks = (8, 16) if t.tm == 8 else (t.bk,)
        found += [mt.MatmulTile(t.tm, t.tn, t.threads_m, t.threads_n, bk) for bk in chunks]
    found = list(dict.fromkeys(found))
    return [t for t in found if t.bk == 16] if k16_only else found


def shape_of(name: str) -> tuple[int, int, int, int]:
    return (1, *LINEAR[name]) if name in LINEAR else MIXED[name]


def capped(tile, blocks: int) -> bool:
    """As the cost model caps: the 128-thread 8 x 8 tiles with a K chunk of 8 when more
    than 3 blocks an SM, the 256-thread one with a chunk of 16 (stored both ways) when
    more than 1."""
    if tile.tm != 8:
        return False
    if tile.threads == 128:
        return tile.bk == 8 and blocks > 3 * 132
    return tile.bk == 16 and blocks > 132


def variants() -> list[tuple]:
    jobs = []
    for name in (*LINEAR, *MIXED):
        batch, m, n, k = shape_of(name)
        mixed = name in MIXED
        for t in tiles(k16_only=not mixed):
            if m % t.block_m or n % t.block_n:
                continue
            count = batch * (m // t.block_m) * (n // t.block_n)
            for s in (1, 2, 4, 8, 16):
                too_short = s > 1 and (k // s < 128 or count >= 4 * 132)
                if k % (s * t.bk) or k // s < 2 * t.bk or too_short or count * s > MAX_BLOCKS:
                    continue
                unrolls = (8, 16) if t.bk == 16 else (8,)
                for unroll in unrolls:
                    for double in (False, True) if mixed else (True,):
                        tile = (t.tm, t.tn, t.threads_m, t.threads_n, t.bk)
                        jobs.append((name, tile, s, unroll, double, capped(t, count * s)))
    return jobs


def label(job) -> str:
    _, (tm, tn, threads_m, threads_n, bk), splits, unroll, double, cap = job
    block = f"{tm * threads_m}x{tn * threads_n}t{threads_m * threads_n}k{bk}"
    return f"{block}_S{splits}_u{unroll}{'_mx' if double else '_sb'}{'_cap' if cap else ''}"


def build(job):
    """One variant lowered to the kernel level and compiled (in a worker process)."""
    name, tile, splits, unroll, double, cap = job
    from deplodock.backends.cuda.emit import emit_kernel_sources
    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.dialects import make_context
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes import get_pass
    from deplodock.passes.tile import matmul_tile as mt
    from deplodock.pipeline import PASSES_TO, lower

    batch, m, n, k = shape_of(name)
    mt.CANDIDATES = (mt.Candidate(mt.MatmulTile(*tile), 2 if tile[2] == 16 else 4, cap, (1.0,)),)
    if name in LINEAR:
        expr = f"torch.nn.functional.linear(torch.randn(1,{m},{k}), torch.randn({n},{k}))"
    else:
        expr = f"torch.matmul(torch.randn({batch},{m},{k}), torch.randn({batch},{k},{n}))"
    module = lower(import_program(capture_expression(expr).program).module, to="loop")
    ctx = make_context()
    options = {
        "split-matmul-k": {"splits": splits},
        "mark-unroll": {"max_chunk_trips": unroll},
        "double-buffer": {} if double else {"max_bytes": 0},
    }
    for pass_name in (*PASSES_TO["tile"], *PASSES_TO["kernel"]):
        get_pass(pass_name)(**options.get(pass_name, {})).apply(ctx, module)
    compiled = compile_kernels(emit_kernel_sources(module), arch="sm_90", cache=False, jobs=1)
    return job, str(module), compiled


def time_shape(name, built, log) -> dict[str, float]:
    import torch
    from xdsl.parser import Parser

    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.dialects import make_context

    batch, m, n, k = shape_of(name)
    if name in LINEAR:
        args = (torch.randn(1, m, k, device="cuda"), torch.randn(n, k, device="cuda"))
        reference = lambda: torch.nn.functional.linear(*args)  # noqa: E731
    else:
        args = (torch.randn(batch, m, k, device="cuda"), torch.randn(batch, k, n, device="cuda"))
        reference = lambda: torch.matmul(*args)  # noqa: E731
    ref = reference()
    candidates = {"cublas": reference}
    notes = {}
    for job, text, compiled in built:
        if job[0] != name:
            continue
        variant = label(job)
        module = Parser(make_context(), text).parse_module()
        program = CompiledProgram(module, compiled=compiled)
        got = program(*args)[0]
        error = ((got - ref).abs().max() / ref.abs().max()).item()
        if error > 1e-4:
            print(name, variant, "WRONG", error, file=log)
            continue
        regs = {r.name: (r.registers, r.spill_stores) for r in compiled.resources.values()}
        notes[variant] = regs
        candidates[variant] = lambda program=program: program(*args, poison=False)
    calls = max(2, min(10, int(3e-3 / (2 * batch * m * n * k / 40e12))))
    timings = {v: t.median_us for v, t in time_graphs(candidates, rounds=7, calls=calls).items()}
    ranked = sorted(timings.items(), key=lambda kv: kv[1])
    print(f"== {name} cublas {timings['cublas']:.1f}", file=log)
    for variant, us in ranked[:16]:
        ratio = timings["cublas"] / us
        print(f"   {variant:34s} {us:9.1f} us {ratio:5.2f}x  {notes.get(variant, '')}", file=log)
    log.flush()
    return timings


def main(out: str) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    jobs = variants()
    started = time.time()
    with ProcessPoolExecutor(15) as pool:
        built = list(pool.map(build, jobs))
    print(f"{len(jobs)} variants built in {time.time() - started:.0f} s", flush=True)
    folder = Path(out)
    with open(folder / "sweep.txt", "w") as log:
        results = {name: time_shape(name, built, log) for name in (*LINEAR, *MIXED)}
    (folder / "sweep.json").write_text(json.dumps(results, indent=1))
    print((folder / "sweep.txt").read_text())


if __name__ == "__main__":
    main(sys.argv[1])
