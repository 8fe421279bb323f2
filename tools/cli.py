"""``deplodock``: compile a PyTorch program to any level, or run it on the GPU.

    deplodock compile -c "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))" --ir loop
    deplodock compile prog.mlir --ir cuda          # continue from a printed level
    deplodock compile tinyllama --layers 1 --seq 128 --ir tensor --stats
    deplodock run -c "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))"
    deplodock run tinyllama --seq 128              # whole model: logits vs transformers eager
    deplodock bench --filter rmsnorm --out bench-results   # see deplodock.bench

The program is an expression (``-c``), an .mlir file of any level, or a model: a built-in
name or hub id (``tinyllama``, ``Qwen/Qwen2.5-7B``) or a local directory with a
config.json, built offline with the real transformers classes (``--layers``, ``--seq``,
``--part layer`` for its first decoder layer; see ``deplodock.frontends.models``).
``compile`` builds models on the meta device: parameters are function arguments, so no
weight data is needed, and a 7B model compiles in a few hundred MB. ``--stats`` prints,
on stderr, each step's time and the peak memory, the op counts at each level and, from
the loop level on, per kernel the torch ops it covers, its minimum HBM reads and writes and
its FLOPs, with totals against eager PyTorch (one kernel per torch op; views free). With
``-v`` each kernel's torch ops are listed one per line with their source lines.

``-v`` lists the passes as they run (on stderr), each by its tag: its level's mark (``ten``,
``l``, ``t``, ``k``), its number within the level and its name, ``t:007_stage-inputs``
(``deplodock.passes.PIPELINE``); ``-vv`` also prints each pass's diff of the IR between
``>>> t:007_stage-inputs`` and ``<<< t:007_stage-inputs`` lines (on stdout, so
``awk '/^>>> t:007/,/^<<< t:007/'`` extracts one), its notes first. Exit statuses
(``deplodock.boundary``): 0 done; 1 bad input (a message with its place, never a
traceback), or ``run`` found a mismatch with PyTorch; 2 ``run`` has no GPU to run on; 3 an
internal compiler error (the pass, the op and a saved reproducer are named); 130
interrupted. DEPLODOCK_TRACEBACK=1 shows the traceback.

``run MODEL`` (``_run_model``) compiles the whole causal LM (or ``--part layer``), runs it
on the GPU, compares its logits with the transformers model in eager PyTorch (default
``--rtol 1e-4``, relative to the largest logit), and times deplodock, eager and
torch.compile side by side in CUDA graphs (``--no-bench``, ``--no-torch-compile`` to skip;
``--torch-backend`` also checks ``torch.compile(model, backend="deplodock")``). The
compiled program comes from the program cache when this model, config, ``--layers``,
``--seq`` and ``--part`` were compiled for the arch by this compiler before
(``backends/cuda/program_cache.py``; ``--no-cache`` or ``DEPLODOCK_CACHE=0`` compiles
from scratch). On a terminal, lowering shows a progress bar; ``-q`` turns all progress
off.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from deplodock.boundary import (
    EXIT_NO_GPU,
    EXIT_USER_ERROR,
    PassError,
    check_output_path,
    guarded,
)
from deplodock.errors import UserInputError
from deplodock.levels import LEVELS
from deplodock.stages import Stages
from deplodock.target import DEFAULT_ARCH, TARGETS

if TYPE_CHECKING:  # xDSL, the passes and torch load where a command needs them: an
    # answer from the output cache imports none of them
    from deplodock.kernel_stats import KernelStats, OpStats
    from deplodock.pipeline import PassStep

EXIT_MISMATCH = EXIT_USER_ERROR  # run: deplodock's answer differs from PyTorch's


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deplodock", description="A hackable ML compiler: PyTorch to fused CUDA kernels."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def add_common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "file",
            nargs="?",
            metavar="PROGRAM",
            help="an .mlir file of any level, or a model: tinyllama, qwen2.5-7b, a hub id "
            "such as Qwen/Qwen2.5-7B, or a local directory with a config.json (instead of -c)",
        )
        sub.add_argument("-c", "--code", help="a PyTorch expression, e.g. 'torch.relu(...)'")
        sub.add_argument(
            "--arch",
            "--target",
            dest="arch",
            default=DEFAULT_ARCH,
            metavar="ARCH",
            help=f"the CUDA architecture to compile for: {', '.join(TARGETS)} (default "
            f"{DEFAULT_ARCH}); the schedules follow its SM count, shared memory and features",
        )
        sub.add_argument(
            "-v",
            "--verbose",
            action="count",
            default=0,
            help="list the passes as they run, by tag (t:007_stage-inputs: the tile level's "
            "pass 7) and time (stderr); -vv: also each pass's diff between '>>> TAG' and "
            "'<<< TAG' lines (stdout)",
        )
        sub.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
        model = sub.add_argument_group("models")
        model.add_argument("--layers", type=int, help="keep the first N decoder layers")
        model.add_argument("--seq", type=int, help="the example sequence length (default 128)")
        model.add_argument(
            "--part",
            choices=PARTS,
            help="the whole causal LM (ids → logits, the default) or its first decoder layer",
        )

    compile_ = commands.add_parser("compile", help="lower a program and print one level")
    add_common(compile_)
    compile_.add_argument("--ir", choices=LEVELS, default="cuda", help="the level to print")
    compile_.add_argument("-o", "--output", help="write the result here instead of stdout")
    compile_.add_argument(
        "--debuginfo",
        action="store_true",
        help="print each op's location: the torch ops (module, ATen overload, source line) it "
        "computes; the printed IR still reads back",
    )
    compile_.add_argument(
        "-p",
        "--pass-options",
        action="append",
        default=[],
        metavar="PASS{OPT=V}",
        help="override a pass's defaults, deplo-opt's syntax: 'chunk-reduce{chunks=1}', "
        "'blockify-launch{block_threads=64},mark-unroll{max_chunk_trips=4}', "
        "'mma-contract{precision=tf32x3}' (repeatable); a loop kernel these leave beyond the "
        "roofline guard gets the default schedule where that is estimated faster (-v says so)",
    )
    compile_.add_argument(
        "--resources",
        action="store_true",
        help="with --ir cuda: compile with NVRTC and print per kernel registers, shared "
        "memory, spills and launch shape (stderr)",
    )
    compile_.add_argument(
        "--stats",
        action="store_true",
        help="print each step's time, the peak memory, the op counts per level and, at the "
        "loop level, each kernel's torch ops, minimum traffic and FLOPs against eager "
        "PyTorch (stderr; -v: each torch op's source line)",
    )
    compile_.add_argument(
        "--no-cache",
        action="store_true",
        help="compile even when this output is in the output cache, and do not store it "
        "(as DEPLODOCK_CACHE=0; -v, --stats and --resources always compile: they report "
        "the compile itself)",
    )

    run = commands.add_parser("run", help="compile, run on the GPU, compare with PyTorch")
    add_common(run)
    run.add_argument(
        "--rtol",
        type=float,
        default=None,
        help=f"max |got-want| / max |want| (default {EXPRESSION_RTOL:g}, fp16 results "
        f"{HALF_RTOL['f16']:g}, bf16 {HALF_RTOL['bf16']:g}; models {MODEL_RTOL:g}: logits "
        "after many fp32 layers)",
    )
    run.add_argument("--seed", type=int, default=None, help="seed of the random inputs")
    run.add_argument(
        "--stats",
        action="store_true",
        help="print each step's time and the peak memory after it: the compile's stages "
        "(or the program cache lookup), building the model, the first run (stderr)",
    )
    run.add_argument(
        "--bench",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also time deplodock, PyTorch eager and torch.compile (CUDA graphs, median); "
        "on by default for models",
    )
    run.add_argument(
        "--torch-backend",
        action="store_true",
        help="models: also run torch.compile(model, backend='deplodock') and compare its "
        "logits with eager too",
    )
    run.add_argument(
        "--no-torch-compile",
        action="store_true",
        help="time deplodock and eager only (torch.compile of a whole model takes minutes)",
    )
    run.add_argument(
        "--no-gpu-ok",
        action="store_true",
        help="exit 0 rather than 2 when there is no GPU (compile-only machines, CI)",
    )
    run.add_argument(
        "--no-cache",
        action="store_true",
        help="compile from scratch: read and write neither the program cache nor the kernel "
        "cache (as DEPLODOCK_CACHE=0; the cache lives in $DEPLODOCK_CACHE_DIR, else "
        "~/.cache/deplodock)",
    )

    from deplodock.bench import add_arguments as add_bench_arguments

    add_bench_arguments(
        commands.add_parser(
            "bench",
            help="time the benchmark cases against eager and torch.compile; write a report",
        )
    )
    return parser


PARTS = ("model", "layer")  # as deplodock.frontends.models.PARTS (not imported: torch)
DEFAULT_SEQ = 128
EXPRESSION_RTOL = 1e-5
HALF_RTOL = {"f16": 1e-3, "bf16": 1.6e-2}  # torch.testing's rtol for the 16-bit floats
MODEL_RTOL = 1e-4


@dataclass
class _Steps(Stages):
    """Times the long steps (capture, import, each level's lowering), shows them as
    progress on a terminal's stderr, and keeps them for --stats."""

    progress: bool = False
    counts: list[tuple[str, Counter[str]]] = field(default_factory=list)  # level, ops
    kernels: list[KernelStats] | None = None  # the loop level, fused
    eager: list[OpStats] | None = None  # one kernel per torch op (from right after lift)
    origins: dict = field(default_factory=dict)  # torch op name -> Origin (provenance)
    target: object = None  # the Target the rooflines are for (None: sm_90)

    @contextlib.contextmanager
    def step(self, name: str, show: bool = True) -> Iterator[None]:
        """Time one step; ``show=False``: a progress bar shows it instead."""
        show = show and self.progress
        if show:
            print(f"deplodock: {name} …", end="", file=sys.stderr, flush=True)
        try:
            with super().step(name):
                yield
        finally:
            if show:
                print(f" {self.rows[-1][1]:.1f} s", file=sys.stderr, flush=True)


class _Bar:
    """A one-line progress bar on stderr, redrawn in place (a terminal's only)."""

    WIDTH = 24

    def __init__(self, title: str, total: int):
        self.title, self.total, self.done = title, max(total, 1), 0
        self.started = time.perf_counter()
        self.draw("")

    def draw(self, what: str) -> None:
        filled = self.WIDTH * self.done // self.total
        bar = "#" * filled + "." * (self.WIDTH - filled)
        elapsed = time.perf_counter() - self.started
        count = f"{self.done}/{self.total}"
        line = f"deplodock: {self.title} [{bar}] {count} {what:<20} {elapsed:5.1f} s"
        print(f"\r{line}\x1b[K", end="", file=sys.stderr, flush=True)

    def advance(self, what: str) -> None:
        self.done += 1
        self.draw(what)

    def close(self, what: str = "done") -> None:
        self.draw(what)
        print(file=sys.stderr, flush=True)


def _steps(args: argparse.Namespace) -> _Steps:
    quiet = args.quiet or args.verbose > 0  # -v lists the passes itself
    from deplodock.target import target_for

    arch = getattr(args, "arch", None)
    return _Steps(
        progress=not quiet and sys.stderr.isatty(), target=target_for(arch) if arch else None
    )


def _is_mlir_file(text: str) -> bool:
    """An .mlir path (read as a file even when missing, to say so) or any existing file;
    everything else names a model."""
    return text.endswith(".mlir") or Path(text).is_file()


def _load(
    args: argparse.Namespace,
    steps: _Steps,
    device: str = "cpu",
    module_device: str | None = None,
    once: bool = False,
):
    """(module, captured expression or model, or None) from -c, a file or a model
    (captured on ``device``, its module built on ``module_device``: ``capture_model``).
    ``once``: a stitched model deeper than four layers is imported as its four-layer
    template, ``captured.restack`` set to what makes the whole stack of it once lowered
    (``deplodock.restack``)."""
    if (args.code is None) == (args.file is None):
        raise UserInputError(
            "give exactly one program: -c 'EXPRESSION', an .mlir file or a model name"
        )
    is_model = args.code is None and not _is_mlir_file(args.file)
    model_options = [
        f"--{name}" for name in ("layers", "seq", "part") if getattr(args, name) is not None
    ]
    if model_options and not is_model:
        verb = "applies" if len(model_options) == 1 else "apply"
        raise UserInputError(f"{', '.join(model_options)} {verb} to models only")
    if args.code is None and not is_model:
        with steps.step("parse"):
            return _parse_file(Path(args.file)), None
    from deplodock.frontends.export import import_program

    if is_model:
        from deplodock.frontends.models import capture_model, require_transformers, resolve

        spec = resolve(args.file)  # an unknown name is told before transformers is missed
        with steps.step("import transformers"):
            require_transformers()
        captured = capture_model(
            spec, device=device, module_device=module_device, stages=steps, **_model_options(args)
        )
        steps.title = captured.source
        if args.verbose and captured.note:
            print(f"deplodock: {captured.note}", file=sys.stderr)
    else:
        from deplodock.frontends.expression import capture_expression

        with steps.step("capture (torch.export)"):
            captured = capture_expression(args.code)
        steps.title = captured.source
    with steps.step("import (torch dialect)"):
        module = import_program(_template(captured) if once else captured.program).module
    return module, captured


def _template(captured):
    """The program to lower for ``captured``: a stitched stack's four-layer template
    (``captured.restack`` then makes the whole stack of it), else its program."""
    from deplodock.frontends.layers import template_of

    found = template_of(captured.program)
    if found is None:
        return captured.program
    program, captured.restack = found
    return program


def _parse_file(path: Path):
    from deplodock.boundary import parse_ir
    from deplodock.dialects import make_context

    try:
        text = path.read_text()
    except OSError as error:
        raise UserInputError(f"cannot read {path}: {error.strerror}") from None
    return parse_ir(make_context(), text, str(path))


def _observer(verbosity: int):
    if verbosity == 0:
        return None
    started = time.perf_counter()

    def report(step: PassStep) -> None:
        nonlocal started
        elapsed = time.perf_counter() - started
        print(f"{step.tag:<30} {elapsed * 1000:8.1f} ms", file=sys.stderr)
        for line in step.notes:
            print(f"      {line}", file=sys.stderr)
        if verbosity >= 2:
            sys.stdout.write(step.diff())
        started = time.perf_counter()

    return report


def _lower_by_level(module, to: str, args: argparse.Namespace, steps: _Steps, stats: bool) -> None:
    """Lower level by level (so each level is timed and counted), like `lower(to=...)`."""
    from deplodock.kernel_stats import eager_stats, origin_table, program_stats
    from deplodock.pipeline import level_of, lower, passes_between

    start = level_of(module)
    if stats:
        steps.counts.append((start, _op_counts(module, start)))
    report = _observer(args.verbose)

    def observer(step: PassStep) -> None:
        if stats and step.name == "lift-to-loop" and step.module is not None:
            steps.eager = eager_stats(step.module)  # one kernel per torch op
            steps.origins = origin_table(step.module)  # every op's provenance, before fusion
        if report is not None:
            report(step)

    levels = LEVELS[LEVELS.index(start) + 1 : LEVELS.index(to) + 1]
    options = pass_options(args)
    bar = None
    if steps.progress and levels:
        bar = _Bar(f"lower to {to}", len(passes_between(start, to)))
    for level in levels:
        if level == "tile" and "kernel" in levels and (options or not (stats or report)):
            # lowered with the kernel level: the memo then copies each kernel once, and the
            # roofline guard has the loop level's form to lower again (pipeline.lower)
            continue
        with steps.step(f"lower to {level}", show=bar is None):
            if report:
                first = level_of(module)
                lower(module, to=level, observer=observer, arch=args.arch, options=options)
                if bar is not None:
                    bar.done += len(passes_between(first, level))
                    bar.draw(level)
            else:
                # eager's kernels are read right after lift-to-loop, before fusion (no
                # observer: printing every pass would cost more than the lowering)
                def lifted() -> None:
                    steps.eager = eager_stats(module)
                    steps.origins = origin_table(module)

                after = {"lift-to-loop": lifted} if stats else {}
                _lower_with_progress(module, level, bar, args.arch, options, after)
        if stats:
            steps.counts.append((level, _op_counts(module, level)))
            if level == "loop":
                steps.kernels = program_stats(module)
                steps.origins = {**steps.origins, **origin_table(module)}
    if bar is not None:
        bar.close()
    if to == "kernel" and args.verbose:
        _warn_beyond_guard(module, args.arch)


def _warn_beyond_guard(module, arch: str) -> None:
    """``-v``: each kernel whose estimate is a cliff, far above its roofline (stderr)."""
    from deplodock.dialects.kernel import KernelOp
    from deplodock.passes.tile.schedule.estimate import beyond_guard, kernel_estimate
    from deplodock.target import target_for

    for op in module.walk():
        if isinstance(op, KernelOp):
            e = kernel_estimate(op, target_for(arch))
            if beyond_guard(e):
                print(
                    f"deplodock: warning: @{op.sym_name.data} is estimated at "
                    f"{e.seconds * 1e6:.1f} µs ({e.bound}), {e.ratio:.0f}x its roofline "
                    f"({e.roofline * 1e6:.1f} µs): its schedule leaves the GPU idle",
                    file=sys.stderr,
                )


def _lower_with_progress(
    module,
    level: str,
    bar: _Bar | None,
    arch: str,
    options: dict | None = None,
    after: dict[str, Callable[[], None]] | None = None,
) -> None:
    """``lower(module, to=level)``, advancing ``bar`` after each pass (without the
    observer's printed IR, which costs seconds on a whole model) and calling
    ``after[name]()`` once the pass ``name`` is done."""
    from deplodock.pipeline import lower

    def progress(name: str, done: bool) -> None:
        if bar is not None:
            (bar.advance if done else bar.draw)(name)
        if done and name in (after or {}):
            after[name]()

    lower(module, to=level, progress=progress, arch=arch, options=options)


def pass_options(args: argparse.Namespace) -> dict | None:
    """``-p``/``--pass-options`` of ``args`` configured (``pipeline.parse_pass_options``);
    None without any, and then nothing imported (a warm command loads no xDSL)."""
    given = getattr(args, "pass_options", None)
    if not given:
        return None
    from deplodock.pipeline import parse_pass_options

    return parse_pass_options(given, args.arch)


def _op_counts(module, level: str) -> Counter[str]:
    """What a level is made of: ATen targets at the torch level; below it, the function
    body's ops by name (ten op kinds at tensor, kernels and the ops between them below)."""
    from deplodock.dialects.torch import AtenOp

    if level == "torch":
        return Counter(op.overload for op in module.walk() if isinstance(op, AtenOp))
    return Counter(
        op.name for func in module.ops for op in func.body.block.ops if op.name != "func.return"
    )


def _print_stats(steps: _Steps, verbose: bool = False) -> None:
    """The --stats table, on stderr (stdout holds the IR); with -v each kernel's torch
    ops one per line, with overload, source line and module."""
    from deplodock.kernel_stats import format_table

    out = sys.stderr
    steps.print(out)
    for level, counts in steps.counts:
        print(f"{level} level: {sum(counts.values())} ops", file=out)
        for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:>6}  {name}", file=out)
    if steps.kernels is not None:
        print(
            "loop kernels (minimum HBM traffic: each input read once, output written once)",
            file=out,
        )
        print(
            format_table(
                steps.kernels, steps.eager, steps.origins, verbose=verbose, target=steps.target
            ),
            file=out,
        )


def _compile(args: argparse.Namespace) -> int:
    steps = _steps(args)
    store = key = None
    if not (args.no_cache or args.verbose or args.stats or args.resources):
        from deplodock.backends.cuda.program_key import default_output_cache

        store = default_output_cache()
    if store is not None:
        with steps.step("output cache lookup"):
            key = _output_key(args)
            text = store.get(key) if key is not None else None
        if text is not None:
            _write_output(args, text)
            return 0
    from deplodock.pipeline import level_of

    target = "kernel" if args.ir == "cuda" else args.ir
    # every layer lowered where each pass is printed or counted, or passes are configured
    # (-p chunk-reduce{kernels=..} may name a kernel of any layer), else a stack's template
    once = target in ("loop", "tile", "kernel") and not (
        args.verbose or args.stats or pass_options(args)
    )
    module, captured = _load(args, steps, device="meta", once=once)
    start = level_of(module)
    if LEVELS.index(target) < LEVELS.index(start):
        below = ", ".join(LEVELS[LEVELS.index(start) :])
        raise UserInputError(
            f"the program is at the {start} level, below --ir {args.ir}: "
            f"deplodock lowers, it does not raise (choose one of {below})"
        )
    _lower_by_level(module, target, args, steps, args.stats)
    stacked = None
    if getattr(captured, "restack", None) is not None:
        # the CUDA text needs no copies made (emit_cuda renames them), the IR does
        defer = args.ir == "cuda" and not args.resources
        module, stacked = _restacked(module, captured, target, args, steps, defer)
    if args.ir == "cuda":
        from deplodock.backends.cuda.emit import emit_cuda

        with steps.step("emit CUDA"):
            text = emit_cuda(module, stacked)
        if args.resources:
            _print_resources(module, text, args.arch)
    elif args.debuginfo:
        from xdsl.printer import Printer

        buffer = io.StringIO()
        Printer(stream=buffer, print_debuginfo=True).print_op(module)
        text = buffer.getvalue() + "\n"
    else:
        text = str(module) + "\n"
    if args.stats:
        _print_stats(steps, verbose=args.verbose > 0)
    _write_output(args, text)
    if store is not None and key is not None:
        store.put(key, text)
    return 0


def _restacked(
    module, captured, target: str, args: argparse.Namespace, steps: _Steps, defer: bool = False
):
    """(the lowered template made the whole stack (``deplodock.restack``), None), or with
    ``defer`` (the module, its ``restack.Stacked``: the interior copies not made); or,
    where its layers do not repeat alike, (the whole program imported and lowered, None)."""
    from deplodock.restack import NotRestackable

    try:
        with steps.step(f"restack to {captured.restack.layers} layers"):
            stacked = captured.restack.stacked(module)
            if not defer:
                stacked.complete()
        return module, stacked if defer else None
    except NotRestackable as e:
        from deplodock.frontends.export import import_program

        with steps.step(f"import every layer (not restacked: {e})"):
            module = import_program(captured.program).module
        _lower_by_level(module, target, args, steps, stats=False)
        return module, None


def _write_output(args: argparse.Namespace, text: str) -> None:
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)


def _output_key(args: argparse.Namespace) -> str | None:
    """The output cache's key of ``deplodock compile``: what the program is (a model's
    identity as ``run`` keys it, on the meta device; the expression; the file's path and
    bytes), the level, ``--debuginfo`` and ``-p`` (None: no key, e.g. an unreadable
    file, which the compile then reports)."""
    import hashlib

    from deplodock.backends.cuda.program_key import program_key

    if args.code is not None:
        program: object = ["expression", args.code]
    elif args.file is not None and _is_mlir_file(args.file):
        try:
            data = Path(args.file).read_bytes()
        except OSError:
            return None
        program = ["file", str(Path(args.file).resolve()), hashlib.sha256(data).hexdigest()]
    elif args.file is not None:
        from deplodock.frontends.model_specs import program_identity, resolve

        spec = resolve(args.file)
        program = ["model", program_identity(spec, device="meta", **_model_options(args))]
    else:
        return None
    settings = {"ir": args.ir, "debuginfo": args.debuginfo, "passes": args.pass_options}
    return program_key(["compile", program, settings], args.arch)


def _launches(program) -> list[tuple[str, tuple[int, ...], tuple[int, ...], int]]:
    """(name, grid, block, dynamic shared bytes) of every kernel launch of a
    CompiledProgram, from its plan (a program from the program cache has no IR)."""
    return [
        (s.kernel, s.grid, s.block, s.shared_bytes)
        for s in program.plan.steps
        if s.grid is not None
    ]


def _resource_lines(launches, resources, rooflines: dict[str, str] | None = None) -> list[str]:
    """Per kernel, (name, grid, block, dynamic shared bytes) in ``launches``: launch shape
    and NVRTC's report (registers, shared memory, spills; a kernel past 48 KB has its
    shared memory given at launch); ``rooflines``: a kernel's roofline text, by name."""
    lines = []
    rooflines = rooflines or {}
    for name, grid_shape, block_shape, dynamic in launches:
        res = resources.get(name)
        shared = (
            f"{dynamic} B shared (dynamic)" if dynamic else f"{res and res.shared_bytes} B shared"
        )
        details = (
            f"{res.registers} registers, {shared}, "
            f"{res.local_bytes} B stack, "
            + (
                f"SPILLS {res.spill_stores} B stored / {res.spill_loads} B loaded"
                if res.spills
                else "no spills"
            )
            if res
            else "no resource report"
        )
        grid = "x".join(map(str, grid_shape))
        block = "x".join(map(str, block_shape))
        roof = f"; {rooflines[name]}" if name in rooflines else ""
        lines.append(f"{name}: grid {grid}, block {block}, {details}{roof}")
    return lines


def _print_resources(module, source: str, arch: str) -> None:
    """``--resources``: compile the CUDA with NVRTC and report every kernel (stderr)."""
    from deplodock.backends.cuda.nvrtc import compile_cuda
    from deplodock.dialects.kernel import KernelOp
    from deplodock.passes.tile.schedule.estimate import (
        beyond_guard,
        kernel_estimate,
        traffic_bytes,
    )
    from deplodock.target import target_for

    compiled = compile_cuda(source, arch=arch)
    ops = [op for op in module.walk() if isinstance(op, KernelOp)]
    kernels = [
        (op.sym_name.data, op.grid_shape, op.block_shape, op.dynamic_shared_bytes()) for op in ops
    ]
    rooflines = {}
    for op in ops:  # its operands read once, its results written once
        moved = traffic_bytes(op)
        e = kernel_estimate(op, target_for(arch))
        rooflines[op.sym_name.data] = (
            f"traffic {moved / 1e6:.1f} MB, roofline {e.roofline * 1e6:.1f} µs, estimate "
            f"{e.seconds * 1e6:.1f} µs ({e.bound}{', BEYOND THE GUARD' if beyond_guard(e) else ''})"
        )
    print(f"deplodock resources ({arch}, NVRTC):", file=sys.stderr)
    for line in _resource_lines(kernels, compiled.resources, rooflines):
        print(f"  {line}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    import torch

    from deplodock.backends.cuda.driver import gpu_available
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.reference import fresh_inputs, output_error

    if args.code is None and args.file is not None and not _is_mlir_file(args.file):
        return _run_model(args)
    steps = _steps(args)
    module, captured = _load(args, steps, device="cpu")
    if captured is None:
        raise UserInputError(
            "run needs -c EXPRESSION or a model (an .mlir file has no PyTorch reference)"
        )
    rtol = args.rtol if args.rtol is not None else expression_rtol(module)
    _lower_by_level(module, "loop", args, steps, stats=False)
    fused = module.clone()
    _lower_by_level(module, "kernel", args, steps, stats=False)
    kernel_cache = False if args.no_cache else None
    with steps.step("emit CUDA, NVRTC"):
        program = CompiledProgram(module, arch=args.arch, cache=kernel_cache)
    print(f"deplodock run: {captured.source}")
    spilling = sorted(n for n, r in program.resources.items() if r.spills)
    if spilling:
        from deplodock.pipeline import compile_program

        print(f"  {', '.join(spilling)} spill registers: splitting fused reductions off")
        program = compile_program(fused, arch=args.arch, cache=kernel_cache)
    for line in _resource_lines(_launches(program), program.resources):
        print(f"  kernel {line}")
    if not gpu_available():
        print(
            f"deplodock: no CUDA GPU on this machine: compiled for {args.arch} with NVRTC, "
            "nothing run",
            file=sys.stderr,
        )
        if args.stats:  # (its title is the capture's: ``_load``)
            steps.print()
        return 0 if args.no_gpu_ok else EXIT_NO_GPU
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    with steps.step("first run, eager reference"):
        inputs, user_inputs, reference = fresh_inputs(captured, program.func, seed)
        got = program(*inputs)
        want = reference()
        torch.cuda.synchronize()
    if args.stats:
        steps.print()
    print(f"  inputs: fresh random (seed {seed}); parameters re-drawn at random")
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        error = output_error(g, w)
        worst = max(worst, error.max_rel)
        verdict = "OK" if error.ok(rtol) else "MISMATCH"
        print(
            f"  output {i}: {error.shape} {error.dtype}: max abs err {error.max_abs:.3e}, "
            f"max rel err {error.max_rel:.3e} (rtol {rtol:g}) {verdict}"
        )
    if args.bench and worst <= rtol:
        _bench(
            program,
            inputs,
            user_inputs,
            captured.module,
            reference,
            torch_compile=not args.no_torch_compile,
        )
    return 0 if worst <= rtol else EXIT_MISMATCH


def _run_model(args: argparse.Namespace) -> int:
    """``deplodock run MODEL``: the whole causal LM (or ``--part layer``) compiled, run on
    the GPU and compared with the transformers model in eager PyTorch, logits against
    logits; then deplodock, eager and torch.compile timed side by side.

    The model is the real transformers class built from its config with random weights
    (the transformers initialisation, seed 0, run on the GPU), every parameter then perturbed by
    N(0, 0.02²) drawn from ``--seed``, so norm weights are not all ones and a kernel
    reading the wrong weight element shows; token ids (or hidden states for a layer) are
    drawn from ``--seed`` too. Without a GPU it says so and exits 2 before building
    anything (``--no-gpu-ok``: compile on the meta device, exit 0).

    The compiled program is looked up in the program cache first
    (``backends/cuda/program_cache.py``), keyed by the model's name, config, ``--layers``,
    ``--seq``, ``--part``, the arch and the compiler's sources: a hit skips importing
    transformers, torch.export, the lowering and NVRTC (the model is still built to run
    it on the GPU, after the compile); a miss compiles and stores it. ``--no-cache``: no
    program cache and no kernel cache."""
    import torch

    from deplodock.api import Compiled, compile_layers_once
    from deplodock.backends.cuda.driver import gpu_available
    from deplodock.backends.cuda.program_cache import ProgramEntry, default_program_cache
    from deplodock.reference import output_error

    rtol = args.rtol if args.rtol is not None else MODEL_RTOL
    have_gpu = gpu_available()
    if not have_gpu and not args.no_gpu_ok:
        print(
            "deplodock: no CUDA GPU on this machine: run compares the model with PyTorch on "
            "the GPU (compile only: deplodock compile MODEL --ir cuda, or run --no-gpu-ok)",
            file=sys.stderr,
        )
        return EXIT_NO_GPU
    steps = _steps(args)
    device = "cpu" if have_gpu else "meta"
    store = None if args.no_cache else default_program_cache()
    key = entry = captured = None
    if store is not None:
        with steps.step("program cache lookup"):
            key = _model_key(args, device)
            entry = store.get(key)
    if entry is not None:
        program = entry.program()
        title = str(entry.info.get("title", args.file))
        constants = entry.constants
    else:
        # captured on the CPU, its weights built after the compile (as on a hit)
        # -v prints each pass: of every layer, as compile -v does
        once = not args.verbose
        module, captured = _load(args, steps, device=device, module_device="meta", once=once)
        _lower_by_level(module, "loop", args, steps, stats=False)
        with steps.step("lower to kernel, NVRTC"):
            program = compile_layers_once(
                captured.program,
                args.arch,
                False if args.no_cache else None,
                imported=module,
                restack=captured.restack,
            )
        title = captured.source
        constants = captured.program.constants
        if store is not None:
            with steps.step("program cache store"):
                store.put(key, ProgramEntry.of(program, constants, info={"title": title}))
    steps.title = title  # (a cache hit's, which nothing captured)
    print(f"deplodock run: {title}")
    if entry is not None:
        print(f"  compiled in {steps.total_s:.2f} s (program cache hit)")
    else:
        compile_times = ", ".join(f"{name} {sec:.1f} s" for name, sec, _ in steps.rows)
        print(f"  compiled in {steps.total_s:.1f} s ({compile_times})")
    spilling = sorted(n for n, r in program.resources.items() if r.spills)
    print(
        f"  {len(program.kernel_names)} kernels for {args.arch}; "
        + (f"{len(spilling)} spill registers: {', '.join(spilling)}" if spilling else "no spills")
    )
    if args.verbose:
        for line in _resource_lines(_launches(program), program.resources):
            print(f"  kernel {line}")
    if not have_gpu:
        print(
            f"deplodock: no CUDA GPU on this machine: compiled for {args.arch}, nothing run",
            file=sys.stderr,
        )
        if args.stats:
            steps.print()
        return 0
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    started = time.perf_counter()
    with steps.step("build the model (random weights)"):
        built, where = _weights_on_gpu(args)  # the capture built none
        if captured is None:
            captured = built
        else:
            captured.module = built.module
        print(f"  model built in {time.perf_counter() - started:.1f} s (random weights, {where})")
        model, user_inputs = _model_on_gpu(captured, seed)
    compiled = Compiled(model, captured.program, program, constants=constants)
    inputs = compiled.arguments(*user_inputs)

    def reference():
        with torch.no_grad():
            return model(*user_inputs)

    with steps.step("first run, eager reference"):
        got = program(*inputs)  # poisoned: an unwritten element is NaN
        want = reference()
        torch.cuda.synchronize()
    if args.stats:
        steps.print()
    what = "token ids" if user_inputs[0].dtype == torch.int64 else "hidden states"
    print(f"  inputs: random {what} (seed {seed}); weights perturbed from the same seed")
    error = output_error(got[0], want)
    verdict = "OK" if error.ok(rtol) else "MISMATCH"
    print(
        f"  {'logits' if what == 'token ids' else 'output'} {error.shape} {error.dtype}: "
        f"max abs err {error.max_abs:.3e}, max rel err {error.max_rel:.3e} (rtol {rtol:g}) "
        f"{verdict}"
    )
    ok = error.ok(rtol)
    if args.torch_backend:
        ok &= _check_torch_backend(model, user_inputs, want, rtol)
    if args.bench is not False and ok:
        del got, want
        _bench(
            program,
            inputs,
            user_inputs,
            model,
            reference,
            torch_compile=not args.no_torch_compile,
            rounds=10,
            calls=2,
        )
    return 0 if ok else EXIT_MISMATCH


def _model_options(args: argparse.Namespace) -> dict:
    seq = args.seq if args.seq is not None else DEFAULT_SEQ
    return {"layers": args.layers, "seq": seq, "part": args.part or "model"}


def _model_key(args: argparse.Namespace, device: str) -> str:
    """The program cache's key of ``deplodock run MODEL`` (no transformers import)."""
    from deplodock.backends.cuda.program_key import program_key
    from deplodock.frontends.model_specs import program_identity, resolve

    spec = resolve(args.file)  # an unknown name is told here
    identity = program_identity(spec, device=device, **_model_options(args))
    return program_key(["model", identity], args.arch)


def _weights_on_gpu(args: argparse.Namespace):
    """(the model ``_load`` would capture, with its weights, where they were built): built
    on the GPU, where transformers initialises a 7B model in seconds (about 70 s on the
    CPU); on the CPU, the way it was always built, where that raises anything (the GPU's
    memory, say), said on stderr. Eager and deplodock then run the same weights either
    way."""
    import torch

    try:
        return _model_unexported(args, "cuda"), "cuda"
    except Exception as error:  # out of memory, or a transformers that will not: the CPU
        torch.cuda.empty_cache()
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"deplodock: weights not built on the GPU ({reason}): on the CPU", file=sys.stderr)
        return _model_unexported(args, "cpu"), "cpu"


def _model_unexported(args: argparse.Namespace, device: str):
    """The model ``_load`` would capture, built on ``device`` but not exported."""
    from deplodock.frontends.models import model_program, resolve

    return model_program(resolve(args.file), device=device, **_model_options(args))


def _check_torch_backend(model, user_inputs, want, rtol: float) -> bool:
    """torch.compile(model, backend="deplodock") against eager: no graph may fall back."""
    import warnings

    import torch

    from deplodock.reference import output_error
    from deplodock.torch_backend import DeplodockFallbackWarning

    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always", DeplodockFallbackWarning)
        got = torch.compile(model, backend="deplodock")(*user_inputs)
    torch.cuda.synchronize()
    fallbacks = [w for w in caught if issubclass(w.category, DeplodockFallbackWarning)]
    for w in fallbacks:
        print(f"  {w.message}")
    error = output_error(got, want)
    ok = error.ok(rtol) and not fallbacks
    print(
        f"  torch.compile(backend='deplodock') ({time.perf_counter() - started:.0f} s): "
        f"max rel err {error.max_rel:.3e} (rtol {rtol:g}) "
        + ("OK" if ok else "FELL BACK TO EAGER" if fallbacks else "MISMATCH")
    )
    return ok


def _model_on_gpu(captured, seed: int):
    """(the captured module on the GPU with perturbed weights, fresh user inputs)."""
    import torch

    model = captured.module.to("cuda")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype, device="cuda") * 0.02)
        vocab = getattr(getattr(model, "lm", None), "config", None)
        inputs = []
        for example in captured.example_inputs:
            if example.dtype.is_floating_point:
                inputs.append(
                    torch.randn(example.shape, generator=gen, dtype=example.dtype, device="cuda")
                )
            else:
                high = vocab.vocab_size if vocab is not None else int(example.max()) + 1
                inputs.append(torch.randint(0, high, example.shape, generator=gen, device="cuda"))
    return model, inputs


def _bench(
    program,
    inputs,
    user_inputs,
    model,
    reference,
    torch_compile: bool = True,
    rounds: int = 30,
    calls: int = 20,
) -> None:
    """Time deplodock against eager and torch.compile, side by side in one run, all in
    fp32 (TF32 off for cuBLAS and torch.compile, as ``deplodock bench`` does)."""
    import torch

    from deplodock.bench import strict_fp32

    strict_fp32()

    from deplodock.backends.cuda.timing import time_graphs

    candidates = {
        "deplodock": lambda: program(*inputs, poison=False),
        "eager": reference,
    }
    if torch_compile:
        compiled = torch.compile(model)
        candidates["torch.compile"] = lambda: compiled(*user_inputs)
    with torch.no_grad():
        started = time.perf_counter()
        timings = time_graphs(candidates, rounds=rounds, calls=calls)
        elapsed = time.perf_counter() - started
    name = torch.cuda.get_device_name()
    print(
        f"  GPU time per call on {name} (CUDA graphs of {calls} calls, median of {rounds} "
        f"rounds [p10, p90]; {elapsed:.0f} s with warm-up):"
    )
    eager = timings["eager"].median_us
    for timing in timings.values():
        lo, hi = timing.spread_us
        print(
            f"    {timing.name:<14} {timing.median_us:10.1f} us  [{lo:.1f}, {hi:.1f}]  "
            f"{eager / timing.median_us:5.2f}x eager"
        )


def _bench_command(args: argparse.Namespace) -> int:
    from deplodock.bench import run_bench

    return run_bench(args)


def expression_rtol(module) -> float:
    """``run``'s default tolerance: ``EXPRESSION_RTOL``, or torch's for the coarsest
    16-bit float among the program's results (a bf16 result is rounded to 8 bits)."""
    from xdsl.dialects import func

    types = [
        str(getattr(t, "element_type", t))
        for op in module.walk()
        if isinstance(op, func.FuncOp)
        for t in op.function_type.outputs.data
    ]
    return max([EXPRESSION_RTOL] + [HALF_RTOL[t] for t in types if t in HALF_RTOL])


def _check_options(args: argparse.Namespace) -> None:
    """What can be checked before any work: the arch (and, for a command that runs the
    program, that this machine's GPU is not older than it) and the output path."""
    from deplodock.target import UnknownTarget, target_for

    arch = getattr(args, "arch", None)
    try:
        if arch is not None:
            target_for(arch)
    except UnknownTarget as e:
        raise UserInputError(str(e)) from None
    if arch is not None and args.command in ("run", "bench"):
        _check_gpu_runs(arch)
    check_output_path(getattr(args, "output", None))
    pass_options(args)  # a bad one is told before any work


def _check_gpu_runs(arch: str) -> None:
    """A program planned for ``arch`` runs on a GPU of that arch or a newer one (it is
    compiled for the GPU present: ``runtime.binary_arch``), not on an older one: on the
    H200, ``--target sm_120`` is refused here rather than failing to load its cubin."""
    from deplodock.backends.cuda import driver
    from deplodock.target import target_for

    if not driver.gpu_available():
        return  # compile only: any arch
    present = driver.current_arch()
    if target_for(arch).sm > target_for(present).sm:
        raise UserInputError(
            f"--arch {arch} is newer than this machine's GPU ({present}): code planned for "
            f"{arch} does not run here; run for {present} or an older arch, or compile only "
            f"(deplodock compile ... --arch {arch})"
        )


def _reproduce(args: argparse.Namespace) -> Callable[[PassError], str]:
    """The failing pass's input for ``args``' program: captured again, lowered up to it."""

    def reproduce(error: PassError) -> str:
        from deplodock.pipeline import lower

        module, _ = _load(args, _Steps(progress=False), device="meta")
        options = pass_options(args)
        lower(module, to="kernel", until=error.pass_name, arch=args.arch, options=options)
        return str(module) + "\n"

    return reproduce


def main(argv: Sequence[str] | None = None) -> int:
    """The ``deplodock`` command; its exit statuses are ``deplodock.boundary``'s."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # argparse printed the usage and the problem
        return EXIT_USER_ERROR if exit_.code else 0
    args.argv = list(sys.argv[1:] if argv is None else argv)  # bench's report quotes it
    command = {"compile": _compile, "run": _run, "bench": _bench_command}[args.command]

    def body() -> int:
        _check_options(args)
        return command(args)

    return guarded("deplodock", body, reproduce=_reproduce(args))


if __name__ == "__main__":
    sys.exit(main())
