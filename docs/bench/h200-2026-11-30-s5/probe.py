"""Probe: which changes to the generated matmul kernels pay, before building them in.

On the GPU machine, from the repo root::

    python3 docs/bench/h200-2026-11-30-s5/probe.py OUT

For the projection shapes still below 0.8x cuBLAS (session 4) and the squares, it lowers
each (block tile, K splits) variant, then compiles the emitted CUDA as it is and with two
source patches: ``lb`` (``__launch_bounds__`` asking for as many blocks per SM as 128
registers a thread allow, so ptxas caps registers there) and ``vst`` (the register
tile's epilogue stores four columns at a time, float4). Every variant is checked against
PyTorch and timed beside cuBLAS with ``time_graphs`` (TF32 off). Writes OUT/probe.json,
OUT/probe.txt.
"""

import json
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

LINEAR = {  # (M, N, K) of x[M, K] @ w[N, K].T
    "tl_gu_S128": (128, 5632, 2048),
    "tl_gu_S512": (512, 5632, 2048),
    "tl_down_S128": (128, 2048, 5632),
    "tl_q_S512": (512, 2048, 2048),
    "qw_o_S128": (128, 3584, 3584),
    "qw_o_S512": (512, 3584, 3584),
    "qw_down_S128": (128, 3584, 18944),
    "sq_lin_4096": (4096, 4096, 4096),
}
MATMUL = {"sq_mm_1024": 1024, "sq_mm_2048": 2048, "sq_mm_4096": 4096}  # a[n, n] @ b[n, n]
TILES = [(8, 8, 16, 16, 8), (8, 8, 16, 8, 8), (8, 8, 8, 16, 8), (4, 4, 16, 16, 16)]
MAX_BLOCKS = 16 * 132
PATCHES = ("base", "lb", "vst", "lb+vst")


def variants():
    jobs = []
    for name, (m, n, k) in LINEAR.items():
        for tile in TILES:
            bm, bn = tile[0] * tile[2], tile[1] * tile[3]
            if m % bm or n % bn:
                continue
            tiles = (m // bm) * (n // bn)
            for s in (1, 2, 4, 8, 16):
                if k % (s * tile[4]) or (s > 1 and k // s < 128) or tiles * s > MAX_BLOCKS:
                    continue
                if s > 1 and tiles >= 2 * 132:
                    continue
                jobs.append((name, tile, s, False))
    for name in MATMUL:
        for double in (False, True):
            jobs.append((name, (8, 8, 16, 16, 8), 1, double))
    return jobs


STORE = re.compile(r"^(\s*)(\w+)\[(.*?)(\w+_c)(\d+)\] = (\w+);$")


def vectorize_stores(src: str) -> str:
    """Four consecutive scalar stores to columns c(4j)..c(4j+3) of one row -> one float4."""
    lines, out, i = src.split("\n"), [], 0
    while i < len(lines):
        group = [STORE.match(line) for line in lines[i : i + 4]]
        if all(group) and len({(g[2], g[3], g[4]) for g in group}) == 1:
            cols = [int(g[5]) for g in group]
            if cols[0] % 4 == 0 and cols == list(range(cols[0], cols[0] + 4)):
                g = group[0]
                values = ", ".join(x[6] for x in group)
                out.append(
                    f"{g[1]}*reinterpret_cast<float4*>(&{g[2]}[{g[3]}{g[4]}{g[5]}]) = "
                    f"make_float4({values});"
                )
                i += 4
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def more_blocks(src: str) -> str:
    def repl(match):
        threads = int(match[1])
        return f"__launch_bounds__({threads}, {max(1, 65536 // (threads * 128))})"

    return re.sub(r"__launch_bounds__\((\d+), 1\)", repl, src)


def patch(src: str, which: str) -> str:
    if "lb" in which:
        src = more_blocks(src)
    if "vst" in which:
        src = vectorize_stores(src)
    return src


def build(job):
    name, tile, splits, double = job
    from deplodock.backends.cuda.emit import emit_kernel_sources
    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.dialects import make_context
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes import get_pass
    from deplodock.passes.tile import matmul_tile as mt
    from deplodock.pipeline import PASSES_TO, lower

    mt.CANDIDATES = (mt.MatmulTile(*tile),)
    if name in LINEAR:
        m, n, k = LINEAR[name]
        expr = f"torch.nn.functional.linear(torch.randn(1,{m},{k}), torch.randn({n},{k}))"
    else:
        n = MATMUL[name]
        expr = f"torch.matmul(torch.randn({n},{n}), torch.randn({n},{n}))"
    module = lower(import_program(capture_expression(expr).program).module, to="loop")
    ctx = make_context()
    options = {"split-matmul-k": {"splits": splits}}
    if double:
        options["double-buffer"] = {"always": True}
    for pass_name in (*PASSES_TO["tile"], *PASSES_TO["kernel"]):
        get_pass(pass_name)(**options.get(pass_name, {})).apply(ctx, module)
    sources = emit_kernel_sources(module)
    out = {}
    for which in PATCHES:
        patched = {kname: patch(src, which) for kname, src in sources.items()}
        if which != "base" and patched == sources:
            continue
        try:
            out[which] = compile_kernels(patched, arch="sm_90", cache=False, jobs=1)
        except Exception as error:  # a patch that does not compile is a finding, not a crash
            out[which] = repr(error)[:300]
    return job, str(module), out


def label(job, which):
    name, tile, splits, double = job
    bm, bn = tile[0] * tile[2], tile[1] * tile[3]
    return f"{bm}x{bn}t{tile[2] * tile[3]}_S{splits}{'_db' if double else ''}_{which}"


def time_shape(name, built, log):
    import torch
    from xdsl.parser import Parser

    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.dialects import make_context

    if name in LINEAR:
        m, n, k = LINEAR[name]
        x, w = torch.randn(1, m, k, device="cuda"), torch.randn(n, k, device="cuda")
        args, ref_fn = (x, w), lambda: torch.nn.functional.linear(x, w)
    else:
        m = n = k = MATMUL[name]
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        args, ref_fn = (a, b), lambda: torch.matmul(a, b)
    ref = ref_fn()
    candidates = {"cublas": ref_fn}
    regs = {}
    for job, text, compiled_by_patch in built:
        if job[0] != name:
            continue
        module = Parser(make_context(), text).parse_module()
        for which, compiled in compiled_by_patch.items():
            variant = label(job, which)
            if isinstance(compiled, str):
                print(name, variant, "DOES NOT COMPILE", compiled, file=log)
                continue
            regs[variant] = {
                r.name: (r.registers, r.spill_stores) for r in compiled.resources.values()
            }
            program = CompiledProgram(module, compiled=compiled)
            got = program(*args)[0]
            error = ((got - ref).abs().max() / ref.abs().max()).item()
            if error > 1e-4:
                print(name, variant, "WRONG", error, file=log)
                continue
            candidates[variant] = lambda program=program: program(*args, poison=False)
    calls = max(2, min(10, int(3e-3 / (2 * m * n * k / 40e12))))
    timings = {v: t.median_us for v, t in time_graphs(candidates, rounds=7, calls=calls).items()}
    ranked = sorted(timings.items(), key=lambda kv: kv[1])
    print(f"== {name} cublas {timings['cublas']:.1f}", file=log)
    for variant, us in ranked:
        ratio = timings["cublas"] / us
        print(f"   {variant:32s} {us:9.1f} us {ratio:5.2f}x  {regs.get(variant, '')}", file=log)
    log.flush()
    return {"timings": timings, "regs": regs}


def main(out: str) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    jobs = variants()
    started = time.time()
    with ProcessPoolExecutor(15) as pool:
        built = list(pool.map(build, jobs))
    print(f"{len(jobs)} variants built in {time.time() - started:.0f} s", flush=True)
    folder = Path(out)
    with open(folder / "probe.txt", "w") as log:
        results = {name: time_shape(name, built, log) for name in (*LINEAR, *MATMUL)}
    (folder / "probe.json").write_text(json.dumps(results, indent=1))
    print((folder / "probe.txt").read_text())


if __name__ == "__main__":
    main(sys.argv[1])
