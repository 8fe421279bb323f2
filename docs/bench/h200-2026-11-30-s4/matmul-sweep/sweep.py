"""Time the generated ``x @ w.T`` kernels over (block tile, K splits) per projection shape.

On the GPU machine, from the repo root::

    python3 docs/bench/h200-2026-11-30-s4/matmul-sweep/sweep.py OUT

builds every variant on a process pool (the cost model's candidates restricted to one
tile, ``split-matmul-k{splits=S}``), checks it against PyTorch, times it beside cuBLAS
with ``time_graphs`` (TF32 off) and writes OUT/sweep.json and OUT/sweep.txt. The cost
model in ``passes/tile/matmul_tile.py`` was fitted to its output (``check_cost_model.py``).
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
    "qw_q_S512": (512, 3584, 3584),
    "qw_down_S512": (512, 3584, 18944),
    "sq_lin_4096": (4096, 4096, 4096),
}
MAX_BLOCKS = 8 * 132
_ALL = None  # the cost model's candidates, before a worker narrows them


def variants(m: int, n: int, k: int) -> list[tuple[int, int]]:
    """(candidate index, splits) worth timing for one shape."""
    from deplodock.passes.tile import matmul_tile as mt

    out = []
    for index, c in enumerate(mt.CANDIDATES):
        if m % c.block_m or n % c.block_n:
            continue
        tiles = (m // c.block_m) * (n // c.block_n)
        for s in (1, 2, 4, 8, 16, 32):
            too_short = s > 1 and (k // s < 128 or tiles >= 2 * 132)
            if k % (s * c.bk) or too_short or tiles * s > MAX_BLOCKS:
                continue
            out.append((index, s))
    return out


def build(job):
    """One variant lowered to the kernel level and compiled (in a worker process)."""
    global _ALL
    _, (m, n, k), index, splits = job
    from deplodock.backends.cuda.emit import emit_kernel_sources
    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.dialects import make_context
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes import get_pass
    from deplodock.passes.tile import matmul_tile as mt
    from deplodock.pipeline import PASSES_TO, lower

    _ALL = _ALL or mt.CANDIDATES
    mt.CANDIDATES = (_ALL[index],)
    expr = f"torch.nn.functional.linear(torch.randn(1,{m},{k}), torch.randn({n},{k}))"
    module = lower(import_program(capture_expression(expr).program).module, to="loop")
    ctx = make_context()
    options = {"split-matmul-k": {"splits": splits}}
    for name in (*PASSES_TO["tile"], *PASSES_TO["kernel"]):
        get_pass(name)(**options.get(name, {})).apply(ctx, module)
    compiled = compile_kernels(emit_kernel_sources(module), arch="sm_90", cache=False, jobs=1)
    return job, str(module), compiled


def time_shape(name, shape, built, log) -> dict[str, float]:
    import torch
    from xdsl.parser import Parser

    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.dialects import make_context
    from deplodock.passes.tile import matmul_tile as mt

    m, n, k = shape
    x = torch.randn(1, m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    ref = torch.nn.functional.linear(x, w)
    candidates = {"cublas": lambda: torch.nn.functional.linear(x, w)}
    for (job_name, _, index, splits), text, compiled in built:
        if job_name != name:
            continue
        c = mt.CANDIDATES[index]
        variant = f"{c.block_m}x{c.block_n}k{c.bk}_S{splits}"
        module = Parser(make_context(), text).parse_module()
        program = CompiledProgram(module, compiled=compiled)
        got = program(x, w)[0]
        error = ((got - ref).abs().max() / ref.abs().max()).item()
        if error > 1e-4:
            print(name, variant, "WRONG", error, file=log)
            continue
        candidates[variant] = lambda program=program: program(x, w, poison=False)
    calls = max(2, min(10, int(3e-3 / (2 * m * n * k / 40e12))))
    timings = {v: t.median_us for v, t in time_graphs(candidates, rounds=7, calls=calls).items()}
    fastest = sorted(timings.items(), key=lambda kv: kv[1])[:6]
    summary = ", ".join(f"{v} {us:.1f}" for v, us in fastest)
    print(f"== {name} cublas {timings['cublas']:.1f}: {summary}", file=log, flush=True)
    return timings


def main(out: str) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    jobs = [(name, s, i, sp) for name, s in SHAPES.items() for i, sp in variants(*s)]
    started = time.time()
    with ProcessPoolExecutor(14) as pool:
        built = list(pool.map(build, jobs))
    print(f"{len(jobs)} variants built in {time.time() - started:.0f} s", flush=True)
    folder = Path(out)
    with open(folder / "sweep.txt", "w") as log:
        results = {name: time_shape(name, s, built, log) for name, s in SHAPES.items()}
    (folder / "sweep.json").write_text(json.dumps(results, indent=1))
    print((folder / "sweep.txt").read_text())


if __name__ == "__main__":
    main(sys.argv[1])
