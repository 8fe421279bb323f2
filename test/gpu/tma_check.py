"""TMA on the GPU (issue 6, sm_90): correctness against torch and time against the default.

A plain script for the machine with the H200 (pytest does not collect it: the name is not
``test_*.py``; ``pytest -m gpu test/gpu/tma_check.py`` runs its check as a gpu test)::

    .venv/bin/python test/gpu/tma_check.py [--shapes 128x64x64,1024x1024x1024] [--rounds 30]

For each shape K x M x N it compiles ``torch.matmul(a.t(), b)`` with ``a`` (K, M) and
``b`` (K, N), fp32: both operands are staged in their own order (``a[k, m]``,
``b[k, n]``), so the K loop's slabs qualify for TMA. Two programs from the same lowering,
through ``CompiledProgram``:

* ``default``: the pipeline as it is (the K loop pipelined with 16-byte ``cp.async``);
* ``tma``: the same with ``tma-copy{enable=true}`` (boxes copied by TMA, mbarriers).

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


def compile_both(k: int, m: int, n: int, arch: str):
    """(default program, tma program), both ``CompiledProgram``s of ``a.t() @ b``."""
    from deplodock.api import _import, capture
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.passes.tile.tma_copy import TmaCopy
    from deplodock.pipeline import lower

    a, b = torch.randn(k, m), torch.randn(k, n)
    _, exported = capture(matmul_t, a, b)
    default = lower(_import(exported), to="kernel")
    tma = lower(_import(exported), to="kernel", options={"tma-copy": TmaCopy(enable=True)})
    return CompiledProgram(default, arch=arch), CompiledProgram(tma, arch=arch)


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    scale = want.abs().max().item() or 1.0
    return (got.double() - want.double()).abs().max().item() / scale


def check_shape(k: int, m: int, n: int, arch: str, rounds: int) -> tuple[bool, dict]:
    from deplodock.backends.cuda.timing import time_graphs

    name = f"{k}x{m}x{n}"
    default, tma = compile_both(k, m, n, arch)
    uses_tma = "cp.async.bulk.tensor" in tma.source
    maps = sum(len(step.tensor_maps) for step in tma.plan.steps)
    print(
        f"[{name}] compiled: tma kernels use TMA: {uses_tma} ({maps} tensor maps); "
        f"registers {sorted({r.registers for r in tma.resources.values()})}, "
        f"spills {any(r.spills for r in tma.resources.values())}"
    )
    ok = uses_tma
    if not uses_tma:
        print(f"[{name}] FAIL: tma-copy{{enable=true}} left no TMA copy in the kernels")
    torch.manual_seed(sum(map(ord, name)))
    a = torch.randn(k, m, device="cuda")
    b = torch.randn(k, n, device="cuda")
    want = matmul_t(a, b)
    for label, program in (("default", default), ("tma", tma)):
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
    timings = time_graphs(
        {
            "default": lambda: default(a, b, poison=False),
            "tma": lambda: tma(a, b, poison=False),
            "cuBLAS": lambda: matmul_t(a, b),
        },
        rounds=rounds,
    )
    times = {label: t.median_us for label, t in timings.items()}
    flops = 2 * k * m * n
    for label, us in times.items():
        print(f"[{name}] {label:8s} {us:10.1f} us  {flops / us / 1e6:7.1f} TFLOP/s")
    print(f"[{name}] tma / default time: {times['tma'] / times['default']:.3f} (< 1: TMA faster)")
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
    print("| K x M x N | default us | tma us | cuBLAS us | tma / default |")
    print("| --- | --- | --- | --- | --- |")
    for shape, t in results.items():
        if t:
            print(
                f"| {shape} | {t['default']:.1f} | {t['tma']:.1f} | {t['cuBLAS']:.1f} | "
                f"{t['tma'] / t['default']:.3f} |"
            )
        else:
            print(f"| {shape} | error | | | |")
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
