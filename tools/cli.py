"""``deplodock``: compile a PyTorch program to any level, or run it on the GPU.

    deplodock compile -c "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))" --ir loop
    deplodock compile prog.mlir --ir cuda          # continue from a printed level
    deplodock run -c "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))"

``-v`` lists the passes as they run (on stderr); ``-vv`` prints each pass's diff of the
IR between ``>>> NNN_pass`` and ``<<< NNN_pass`` lines (on stdout, so
``awk '/^>>> 007/,/^<<< 007/'`` extracts one). Bad input ends with a message and exit 1,
never a traceback (set DEPLODOCK_TRACEBACK=1 to see one); ``run`` exits 1 on a mismatch
with PyTorch and 2 when there is no GPU to run on.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from deplodock.frontends.errors import UserInputError
from deplodock.pipeline import LEVELS, PassStep, lower

EXIT_MISMATCH = 1
EXIT_NO_GPU = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deplodock", description="A hackable ML compiler: PyTorch to fused CUDA kernels."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def add_common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("file", nargs="?", help="an .mlir file of any level (instead of -c)")
        sub.add_argument("-c", "--code", help="a PyTorch expression, e.g. 'torch.relu(...)'")
        sub.add_argument("--arch", default="sm_90", help="CUDA architecture (default sm_90)")
        sub.add_argument("-v", "--verbose", action="count", default=0)

    compile_ = commands.add_parser("compile", help="lower a program and print one level")
    add_common(compile_)
    compile_.add_argument("--ir", choices=LEVELS, default="cuda", help="the level to print")
    compile_.add_argument("-o", "--output", help="write the result here instead of stdout")

    run = commands.add_parser("run", help="compile, run on the GPU, compare with PyTorch")
    add_common(run)
    run.add_argument("--rtol", type=float, default=1e-5, help="max |got-want| / max |want|")
    run.add_argument("--seed", type=int, default=None, help="seed of the random inputs")
    run.add_argument(
        "--bench",
        action="store_true",
        help="also time deplodock, PyTorch eager and torch.compile (CUDA graphs, median)",
    )
    run.add_argument(
        "--no-gpu-ok",
        action="store_true",
        help="exit 0 rather than 2 when there is no GPU (compile-only machines, CI)",
    )
    return parser


def _load(args: argparse.Namespace):
    """(module, captured expression or None) from -c or a file."""
    if (args.code is None) == (args.file is None):
        raise UserInputError("give exactly one program: -c 'EXPRESSION' or an .mlir file")
    if args.code is not None:
        from deplodock.frontends.export import import_program
        from deplodock.frontends.expression import capture_expression

        captured = capture_expression(args.code)
        return import_program(captured.program).module, captured
    return _parse_file(Path(args.file)), None


def _parse_file(path: Path):
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    from deplodock.dialects import make_context
    from deplodock.opt import format_parse_error

    try:
        text = path.read_text()
    except OSError as error:
        raise UserInputError(f"cannot read {path}: {error.strerror}") from None
    try:
        module = Parser(make_context(), text, str(path)).parse_module()
        module.verify()
    except ParseError as error:
        raise UserInputError(format_parse_error(error, str(path))) from None
    except Exception as error:  # a verifier message names the op and the rule
        raise UserInputError(f"{path}: {error}") from None
    return module


def _observer(verbosity: int):
    if verbosity == 0:
        return None
    started = time.perf_counter()

    def report(step: PassStep) -> None:
        nonlocal started
        elapsed = time.perf_counter() - started
        print(f"[{step.index:03d}] {step.name:<20} {elapsed * 1000:8.1f} ms", file=sys.stderr)
        for line in step.notes:
            print(f"      {line}", file=sys.stderr)
        if verbosity >= 2:
            sys.stdout.write(step.diff())
        started = time.perf_counter()

    return report


def _compile(args: argparse.Namespace) -> int:
    module, _ = _load(args)
    target = "kernel" if args.ir == "cuda" else args.ir
    lower(module, to=target, observer=_observer(args.verbose))
    if args.ir == "cuda":
        from deplodock.backends.cuda.emit import emit_cuda

        text = emit_cuda(module)
    else:
        text = str(module) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def _run(args: argparse.Namespace) -> int:
    import torch

    from deplodock.backends.cuda.driver import gpu_available
    from deplodock.backends.cuda.runtime import CompiledProgram

    module, captured = _load(args)
    if captured is None:
        raise UserInputError("run needs -c EXPRESSION (an .mlir file has no PyTorch reference)")
    lower(module, to="kernel", observer=_observer(args.verbose))
    program = CompiledProgram(module, arch=args.arch)
    print(f"deplodock run: {captured.source}")
    for k in program.kernels:
        res = program.resources.get(k.sym_name.data)
        details = (
            f"{res.registers} registers, {res.shared_bytes} B shared, "
            f"{'SPILLS' if res.spills else 'no spills'}"
            if res
            else "no resource report"
        )
        grid = "x".join(map(str, k.grid_shape))
        block = "x".join(map(str, k.block_shape))
        print(f"  kernel {k.sym_name.data}: grid {grid}, block {block}, {details}")
    if not gpu_available():
        print(
            f"deplodock: no CUDA GPU on this machine: compiled for {args.arch} with NVRTC, "
            "nothing run",
            file=sys.stderr,
        )
        return 0 if args.no_gpu_ok else EXIT_NO_GPU
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    inputs, reference = _fresh_inputs(captured, program.func, seed)
    got = program(*inputs)
    want = reference()
    torch.cuda.synchronize()
    print(f"  inputs: fresh random (seed {seed}); parameters re-drawn at random")
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        err = (g.double() - w.double()).abs()
        max_abs = err.max().item() if err.numel() else 0.0
        scale = w.double().abs().max().item() if w.numel() else 1.0
        rel = max_abs / scale if scale > 0 else max_abs
        unwritten = torch.isnan(g).sum().item() - torch.isnan(w).sum().item()
        if unwritten > 0:
            rel = float("inf")
        worst = max(worst, rel)
        verdict = "OK" if rel <= args.rtol else "MISMATCH"
        print(
            f"  output {i}: {tuple(g.shape)} {g.dtype}: max abs err {max_abs:.3e}, "
            f"max rel err {rel:.3e} (rtol {args.rtol:g}) {verdict}"
        )
    if args.bench and worst <= args.rtol:
        _bench(program, inputs, captured.module, reference)
    return 0 if worst <= args.rtol else EXIT_MISMATCH


def _bench(program, inputs, model, reference) -> None:
    """Time deplodock against eager and torch.compile, side by side in one run."""
    import torch

    from deplodock.backends.cuda.timing import time_graphs

    compiled = torch.compile(model)
    with torch.no_grad():
        timings = time_graphs(
            {
                "deplodock": lambda: program(*inputs, poison=False),
                "eager": reference,
                "torch.compile": lambda: compiled(*reference.user_inputs),
            }
        )
    name = torch.cuda.get_device_name()
    print(f"  GPU time per call on {name} (CUDA graphs, median of rounds [p10, p90]):")
    eager = timings["eager"].median_us
    for timing in timings.values():
        lo, hi = timing.spread_us
        print(
            f"    {timing.name:<14} {timing.median_us:10.1f} us  [{lo:.1f}, {hi:.1f}]  "
            f"{eager / timing.median_us:5.2f}x eager"
        )


def _fresh_inputs(captured, func, seed: int):
    """Random user inputs and parameters on the GPU, plus a closure computing eager's result.

    Parameters are re-drawn too: a weight of all ones (RMSNorm's default) would hide a
    kernel that reads the wrong weight element.
    """
    import torch

    from deplodock.frontends.export import graph_inputs

    gen = torch.Generator().manual_seed(seed)
    model = captured.module.to("cuda")
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype))
    users = iter(
        torch.randn(t.shape, generator=gen, dtype=t.dtype).to("cuda")
        if t.dtype.is_floating_point
        else t.to("cuda")
        for t in captured.example_inputs
    )
    user_inputs: list = []
    args = []
    for spec in graph_inputs(func):
        if spec.kind == "input":
            tensor = next(users)
            user_inputs.append(tensor)
        elif spec.kind == "param":
            tensor = model.get_parameter(spec.target).detach()
        elif spec.kind == "buffer":
            tensor = model.get_buffer(spec.target)
        else:
            tensor = captured.program.constants[spec.target].to("cuda")
        args.append(tensor.contiguous())

    def reference():
        with torch.no_grad():
            out = model(*user_inputs)
        return list(out) if isinstance(out, tuple | list) else [out]

    reference.user_inputs = user_inputs  # type: ignore[attr-defined]
    return args, reference


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"compile": _compile, "run": _run}[args.command](args)
    except UserInputError as error:
        print(f"deplodock: error: {error}", file=sys.stderr)
        return 1
    except Exception as error:
        if os.environ.get("DEPLODOCK_TRACEBACK"):
            raise
        from deplodock.backends.cuda.nvrtc import NvrtcError

        kind = "NVRTC failed" if isinstance(error, NvrtcError) else "internal compiler error"
        print(f"deplodock: {kind}: {type(error).__name__}: {error}", file=sys.stderr)
        print("(set DEPLODOCK_TRACEBACK=1 for the traceback)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
