"""Probe: what would take ``torch.matmul`` at 4096 from 0.88x to 0.9x cuBLAS.

On the GPU machine, from the repo root::

    python3 docs/bench/h200-2026-11-30-s6/probe.py OUT

The generated kernel for a[n, n] @ b[n, n] (128x128 block tile, 8x8 per thread, K chunk 8)
stores the ``a`` slab transposed ([k][m]) so each thread reads its 8 rows as two float4 at
one k. A transposed slab cannot be filled by 16-byte ``cp.async``, so that kernel is
single-buffered with plain loads. This probe times, beside cuBLAS and the generated
kernel, the same tile with ``a`` kept in source order ([m][k], rows padded by 4) and both
slabs filled by 16-byte ``cp.async`` in STAGES buffers, reading ``a``:

* ``vec``: four k at a time, one float4 per row (8 rows x 4 k in registers);
* ``scalar``: one k at a time, a float per row (what the register tile emits today; the
  question is whether NVRTC merges those loads itself).

Also the generated kernel with its K loop unrolled 4, 2 and 1 times (``u4``...), and a
``sync`` hand-written control (transposed slab, single buffer: should match the generated
kernel). Each variant swaps the generated kernel's source for its own (same name, grid,
block, arguments), is checked against PyTorch and timed with ``time_graphs`` (TF32 off).
Writes OUT/probe.txt and OUT/probe.json.
"""

import json
import sys
from pathlib import Path

SIZES = (2048, 4096)

KERNEL = (Path(__file__).parent / "hand_matmul.cu").read_text()


def hand_sources(n: int) -> dict[str, str]:
    """The hand-written variants of ``hand_matmul.cu`` (defines prepended)."""
    out = {}
    for mixed in (0, 1):
        for kc, stages in ((8, 2), (8, 3), (8, 4), (16, 2)):
            name = f"hand_{'mixed' if mixed else 'vec'}_k{kc}_s{stages}"
            defines = f"#define N {n}\n#define KC {kc}\n#define STAGES {stages}\n"
            out[name] = defines + f"#define MIXED {mixed}\n" + KERNEL
    return out


def main(out: str) -> None:
    import torch

    from deplodock.backends.cuda.emit import emit_kernel_sources
    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.dialects import make_context
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes import get_pass
    from deplodock.pipeline import PASSES_TO, lower

    torch.backends.cuda.matmul.allow_tf32 = False
    folder = Path(out)
    results = {}
    log = open(folder / "probe.txt", "w")
    for n in SIZES:
        expr = f"torch.matmul(torch.randn({n},{n}), torch.randn({n},{n}))"
        module = lower(import_program(capture_expression(expr).program).module, to="loop")
        ctx = make_context()
        for pass_name in (*PASSES_TO["tile"], *PASSES_TO["kernel"]):
            get_pass(pass_name)().apply(ctx, module)
        (source,) = emit_kernel_sources(module).values()
        (folder / f"generated_{n}.cu").write_text(source)
        variants = {"generated": source, **hand_sources(n)}
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        ref = torch.matmul(a, b)
        candidates = {"cublas": lambda a=a, b=b: torch.matmul(a, b)}
        regs = {}
        for name, src in variants.items():
            try:
                compiled = compile_kernels({"k_matmul": src}, arch="sm_90", cache=False, jobs=1)
            except Exception as error:  # a variant that does not compile is a finding
                print(n, name, "DOES NOT COMPILE", repr(error)[:2000], file=log, flush=True)
                continue
            res = compiled.resources["k_matmul"]
            regs[name] = (res.registers, res.spill_stores)
            program = CompiledProgram(module, compiled=compiled)
            got = program(a, b)[0]
            error = ((got - ref).abs().max() / ref.abs().max()).item()
            if error > 1e-4:
                print(n, name, "WRONG", error, file=log, flush=True)
                continue
            candidates[name] = lambda p=program, a=a, b=b: p(a, b, poison=False)
        calls = max(2, min(10, int(3e-3 / (2 * n**3 / 40e12))))
        timed = time_graphs(candidates, rounds=9, calls=calls)
        timings = {v: t.median_us for v, t in timed.items()}
        print(f"== square {n} cublas {timings['cublas']:.1f}", file=log)
        for name, us in sorted(timings.items(), key=lambda kv: kv[1]):
            ratio = timings["cublas"] / us
            print(f"   {name:24s} {us:9.1f} us {ratio:5.3f}x  {regs.get(name, '')}", file=log)
        log.flush()
        results[n] = {"timings": timings, "regs": regs}
    (folder / "probe.json").write_text(json.dumps(results, indent=1))
    log.close()
    print((folder / "probe.txt").read_text())


def once(n: int = 4096) -> None:
    """Run the generated kernel, one hand variant and cuBLAS once each (for ncu)."""
    import torch

    from deplodock.backends.cuda.nvrtc import compile_kernels
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.dialects import make_context
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression
    from deplodock.passes import get_pass
    from deplodock.pipeline import PASSES_TO, lower

    torch.backends.cuda.matmul.allow_tf32 = False
    expr = f"torch.matmul(torch.randn({n},{n}), torch.randn({n},{n}))"
    module = lower(import_program(capture_expression(expr).program).module, to="loop")
    ctx = make_context()
    for pass_name in (*PASSES_TO["tile"], *PASSES_TO["kernel"]):
        get_pass(pass_name)().apply(ctx, module)
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    CompiledProgram(module)(a, b)
    src = hand_sources(n)["hand_mixed_k8_s2"]
    compiled = compile_kernels({"k_matmul": src}, arch="sm_90", cache=False, jobs=1)
    CompiledProgram(module, compiled=compiled)(a, b)
    torch.matmul(a, b)
    torch.cuda.synchronize()


if __name__ == "__main__":
    once() if sys.argv[1] == "--once" else main(sys.argv[1])
