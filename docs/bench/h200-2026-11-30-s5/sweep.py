"""Time the generated matmul kernels over (block tile, K chunk, K splits) per shape.

On the GPU machine, from the repo root::

    python3 docs/bench/h200-2026-11-30-s5/sweep.py OUT

Session 5's sweep: the block tiles of the cost model's candidates
(``passes/tile/matmul_tile.py``), the 8 x 8 ones with K chunks of 8 and 16, the 128-thread
ones capped at 128 registers (4 blocks an SM) when the grid has more blocks than 3 an SM
(``capped``), on the projection shapes of TinyLlama and
Qwen2.5-7B, ``x @ w.T`` at 4096 and the squares ``a @ b`` (``torch.matmul``, whose ``b``
slab is stored in the source's order). Every variant is built on a process pool
(``split-matmul-k{splits=S}``), checked against PyTorch and timed beside cuBLAS with
``time_graphs`` (TF32 off). Writes OUT/sweep.json and OUT/sweep.txt;
``check_cost_model.py`` fits and checks the cost model against it.
"""

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SHAPES = {  # (M, N, K) of x[M, K] @ w[N, K].T; tl = TinyLlama, qw = Qwen2.5-7B, S = tokens
    "tl_down_S32": (32, 2048, 5632),
    "tl_gu_S32": (32, 5632, 2048),
    "tl_q_S128": (128, 2048, 2048),
    "tl_gu_S128": (128, 5632, 2048),
    "tl_down_S128": (128, 2048, 5632),
    "tl_q_S512": (512, 2048, 2048),
    "tl_kv_S512": (512, 256, 2048),
    "tl_gu_S512": (512, 5632, 2048),
    "tl_down_S512": (512, 2048, 5632),
    "qw_gu_S32": (32, 18944, 3584),
    "qw_down_S32": (32, 3584, 18944),
    "qw_o_S128": (128, 3584, 3584),
    "qw_down_S128": (128, 3584, 18944),
    "qw_gu_S128": (128, 18944, 3584),
    "qw_o_S512": (512, 3584, 3584),
    "qw_down_S512": (512, 3584, 18944),
    "sq_lin_4096": (4096, 4096, 4096),
}
SQUARES = {"sq_mm_1024": 1024, "sq_mm_2048": 2048, "sq_mm_4096": 4096}  # a[n, n] @ b[n, n]
MAX_BLOCKS = 32 * 132


def tiles():
    """The candidates, and each 8 x 8 one again with a K chunk of 16."""
    from deplodock.passes.tile import matmul_tile as mt

    found = [c.tile for c in mt.CANDIDATES]
    eights = [c for c in found if c.tm == 8]
    found += [mt.MatmulTile(c.tm, c.tn, c.threads_m, c.threads_n, 16) for c in eights]
    return list(dict.fromkeys(found))


def capped(tile, m: int, n: int, splits: int) -> bool:
    """Whether the variant's ``__launch_bounds__`` asks for 4 blocks an SM: as the sweep
    ran (at 8a462e8), a 128-thread 8 x 8 tile exactly when its grid has more blocks than 3
    an SM."""
    blocks = splits * (m // tile.block_m) * (n // tile.block_n)
    return tile.threads == 128 and tile.tm == 8 and blocks > 3 * 132


def candidate(tile, m: int, n: int, splits: int):
    """The cost model's record for one variant (only ``capped`` matters to the build)."""
    from deplodock.passes.tile import matmul_tile as mt

    return mt.Candidate(tile, 4, capped(tile, m, n, splits), (1.0,))


def shape_of(name: str) -> tuple[int, int, int]:
    return SHAPES[name] if name in SHAPES else (SQUARES[name],) * 3


def variants() -> list[tuple[str, tuple, int]]:
    jobs = []
    for name in (*SHAPES, *SQUARES):
        m, n, k = shape_of(name)
        for c in tiles():
            if m % c.block_m or n % c.block_n:
                continue
            count = (m // c.block_m) * (n // c.block_n)
            for s in (1, 2, 4, 8, 16, 32):
                too_short = s > 1 and (k // s < 128 or count >= 4 * 132)
                if k % (s * c.bk) or too_short or count * s > MAX_BLOCKS:
                    continue
                jobs.append((name, (c.tm, c.tn, c.threads_m, c.threads_n, c.bk), s))
    return jobs


def label(tile: tuple, splits: int) -> str:
    tm, tn, threads_m, threads_n, bk = tile
    return f"{tm * threads_m}x{tn * threads_n}t{threads_m * threads_n}k{bk}_S{splits}"


def build(job):
    """One variant lowered to the kernel level and compiled (in a worker process)."""
    name, tile, splits = job
    from deplodock.backends.cuda.emit import emit_kernel_sources
    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.dialects import make_context
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes import get_pass
    from deplodock.passes.tile import matmul_tile as mt
    from deplodock.pipeline import PASSES_TO, lower

    m, n, k = shape_of(name)
    mt.CANDIDATES = (candidate(mt.MatmulTile(*tile), m, n, splits),)
    if name in SHAPES:
        expr = f"torch.nn.functional.linear(torch.randn(1,{m},{k}), torch.randn({n},{k}))"
    else:
        expr = f"torch.matmul(torch.randn({m},{k}), torch.randn({k},{n}))"
    module = lower(import_program(capture_expression(expr).program).module, to="loop")
    ctx = make_context()
    options = {"split-matmul-k": {"splits": splits}}
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

    m, n, k = shape_of(name)
    if name in SHAPES:
        args = (torch.randn(1, m, k, device="cuda"), torch.randn(n, k, device="cuda"))
        reference = lambda: torch.nn.functional.linear(*args)  # noqa: E731
    else:
        args = (torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda"))
        reference = lambda: torch.matmul(*args)  # noqa: E731
    ref = reference()
    candidates = {"cublas": reference}
    notes = {}
    for (job_name, tile, splits), text, compiled in built:
        if job_name != name:
            continue
        variant = label(tile, splits)
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
    calls = max(2, min(10, int(3e-3 / (2 * m * n * k / 40e12))))
    timings = {v: t.median_us for v, t in time_graphs(candidates, rounds=7, calls=calls).items()}
    ranked = sorted(timings.items(), key=lambda kv: kv[1])
    print(f"== {name} cublas {timings['cublas']:.1f}", file=log)
    for variant, us in ranked[:12]:
        ratio = timings["cublas"] / us
        print(f"   {variant:24s} {us:9.1f} us {ratio:5.2f}x  {notes.get(variant, '')}", file=log)
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
        results = {name: time_shape(name, built, log) for name in (*SHAPES, *SQUARES)}
    (folder / "sweep.json").write_text(json.dumps(results, indent=1))
    print((folder / "sweep.txt").read_text())


if __name__ == "__main__":
    main(sys.argv[1])
