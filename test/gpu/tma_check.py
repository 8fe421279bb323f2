"""TMA on the GPU (issue 6, sm_90): correctness against torch and time against the default.

A plain script for the machine with the H200 (pytest does not collect it: the name is not
``test_*.py``; ``pytest -m gpu test/gpu/tma_check.py`` runs its check as a gpu test)::

    .venv/bin/python test/gpu/tma_check.py [--shapes 128x64x64,1024x1024x1024] [--rounds 30]

For each shape K x M x N it compiles ``torch.matmul(a.t(), b)`` with ``a`` (K, M) and
``b`` (K, N), fp32: both operands are staged in their own order (``a[k, m]``,
``b[k, n]``), so the K loop's slabs qualify for TMA. Two programs from the same lowering,
through ``CompiledProgram``:

* ``default``: the pipeline as it is (the K loop pipelined with 16-byte ``cp.async``);
* ``tma``: the same with ``fill-k-loop{tma=true}`` (boxes copied by TMA, mbarriers);
* ``tma+swz``: and ``split-inner-for-swizzle{swizzle=true}`` (SWIZZLE_128B boxes, loads
  indexing with an xor).

Each is run on fresh random inputs with poisoned outputs and compared with torch (fp32,
TF32 off), once eagerly and once replayed from a CUDA graph (the tensor maps captured);
then the two and cuBLAS are timed with ``deplodock.backends.cuda.timing.time_graphs``
(CUDA graphs, interleaved rounds, median). It prints one line per check and a table; the
exit status is 1 if any check failed, 2 without a GPU.
"""

from __future__ import annotations

import argparse
import sys
import traceback

import torch

DEFAULT_SHAPES = "128x64x64,512x256x256,1024x1024x1024,2048x2048x2048,4096x4096x4096"
RTOL = 1e-4  # of the largest |output|: K-chunked fp32 sums against cuBLAS's order


def matmul_t(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a.t(), b)


def compile_variants(k: int, m: int, n: int, arch: str) -> dict:
    """The ``CompiledProgram`` of ``a.t() @ b`` per variant (see the module docstring)."""
    from deplodock.api import _import, capture
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.passes.tile.fill_k_loop import FillKLoop
    from deplodock.passes.tile.split_inner_for_swizzle import SplitInnerForSwizzle
    from deplodock.pipeline import lower

    a, b = torch.randn(k, m), torch.randn(k, n)
    _, exported = capture(matmul_t, a, b)
    tma = {"fill-k-loop": FillKLoop(tma=True)}
    variants = {
        "default": {},
        "tma": tma,
        "tma+swz": {**tma, "split-inner-for-swizzle": SplitInnerForSwizzle(swizzle=True)},
    }
    return {
        name: CompiledProgram(
            lower(_import(exported), to="kernel", options=options, guard=False), arch=arch
        )
        for name, options in variants.items()
    }


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    scale = want.abs().max().item() or 1.0
    return (got.double() - want.double()).abs().max().item() / scale


def check_shape(k: int, m: int, n: int, arch: str, rounds: int) -> tuple[bool, dict]:
    from deplodock.backends.cuda.timing import time_graphs

    name = f"{k}x{m}x{n}"
    programs = compile_variants(k, m, n, arch)
    ok = True
    for label, program in programs.items():
        if label == "default":
            continue
        uses_tma = "cp.async.bulk.tensor" in program.source
        swizzled = any(s.swizzle for step in program.plan.steps for s in step.tensor_maps)
        resources = program.resources.values()
        print(
            f"[{name}] {label}: uses TMA {uses_tma}, swizzled {swizzled}; registers "
            f"{sorted({r.registers for r in resources})}, spills {any(r.spills for r in resources)}"
        )
        if not uses_tma:
            print(f"[{name}] FAIL: fill-k-loop{{tma=true}} left no TMA copy in the kernels")
            ok = False
    torch.manual_seed(sum(map(ord, name)))
    a = torch.randn(k, m, device="cuda")
    b = torch.randn(k, n, device="cuda")
    want = matmul_t(a, b)
    for label, program in programs.items():
        (got,) = program(a, b, poison=True)
        torch.cuda.synchronize()
        error = relative_error(got, want)
        good = bool(torch.isfinite(got).all()) and error <= RTOL
        ok &= good
        print(f"[{name}] {label:8s} eager : {'ok  ' if good else 'FAIL'} rel. error {error:.2e}")
        graphed = program.capture(a, b)
        a2, b2 = torch.randn_like(a), torch.randn_like(b)
        (got,) = graphed(a2, b2)
        torch.cuda.synchronize()
        error = relative_error(got, matmul_t(a2, b2))
        good = bool(torch.isfinite(got).all()) and error <= RTOL
        ok &= good
        print(f"[{name}] {label:8s} graph : {'ok  ' if good else 'FAIL'} rel. error {error:.2e}")
    candidates = {
        label: (lambda p=program: p(a, b, poison=False)) for label, program in programs.items()
    }
    candidates["cuBLAS"] = lambda: matmul_t(a, b)
    timings = time_graphs(candidates, rounds=rounds)
    times = {label: t.median_us for label, t in timings.items()}
    flops = 2 * k * m * n
    for label, us in times.items():
        print(f"[{name}] {label:8s} {us:10.1f} us  {flops / us / 1e6:7.1f} TFLOP/s")
    for label in programs:
        if label != "default":
            ratio = times[label] / times["default"]
            print(f"[{name}] {label} / default time: {ratio:.3f} (< 1: faster)")
    return ok, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=DEFAULT_SHAPES, help="K x M x N, comma-separated")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)

    from deplodock.backends.cuda.driver import _no_gpu_reason, current_arch, gpu_available

    if not gpu_available():
        print(f"no GPU: {_no_gpu_reason()}")
        return 2
    arch = current_arch()
    if int(arch[3:5]) < 90:
        print(f"TMA needs sm_90; this GPU is {arch}")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    print(f"{torch.cuda.get_device_name()} ({arch}), torch {torch.__version__}, fp32, TF32 off")
    results: dict[str, dict] = {}
    failed = []
    for shape in args.shapes.split(","):
        k, m, n = (int(x) for x in shape.lower().split("x"))
        try:
            ok, times = check_shape(k, m, n, arch, args.rounds)
        except Exception:
            traceback.print_exc()
            ok, times = False, {}
        results[shape] = times
        if not ok:
            failed.append(shape)
    print()
    labels = ["default", "tma", "tma+swz", "cuBLAS"]
    print(
        "| K x M x N | " + " | ".join(f"{x} us" for x in labels) + " | tma / default "
        "| tma+swz / default |"
    )
    print("| --- " * (len(labels) + 3) + "|")
    for shape, t in results.items():
        if t:
            cells = [f"{t[x]:.1f}" for x in labels]
            cells += [f"{t['tma'] / t['default']:.3f}", f"{t['tma+swz'] / t['default']:.3f}"]
            print(f"| {shape} | " + " | ".join(cells) + " |")
        else:
            print(f"| {shape} | error |" + " |" * (len(labels) + 1))
    print("all checks passed" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


# ``pytest -m gpu test/gpu/tma_check.py``: the smallest shapes as a gpu test.
try:
    import pytest

    from deplodock.backends.cuda.driver import gpu_available

    @pytest.mark.gpu
    @pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")
    def test_tma_matches_torch_on_the_gpu() -> None:
        assert main(["--shapes", "128x64x64,512x256x256", "--rounds", "3"]) == 0

except ImportError:  # pragma: no cover (run as a script without pytest)
    pass


if __name__ == "__main__":
    sys.exit(main())
