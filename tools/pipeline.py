"""The lowering pipeline: which passes take a program from one level to the next.

    torch ──decompose──▶ tensor ──lift-to-loop, fuse──▶ loop
          ──tileify, collapse-reduce, split-matmul-k, register-tile, chunk-matmul-k,
            chunk-reduce, cooperative-reduce, vectorize, blockify-launch, mma-contract,
            permute-register-tile, stage-inputs, pad-smem, fill-k-loop,
            split-inner-for-swizzle, mark-unroll──▶ tile
          ──materialize──▶ kernel
          ──emit──▶ cuda

``lower(module, to=...)`` runs the passes in order, verifying after each, and reports each
step to an observer so the CLI can list passes (``-v``) or print a diff per pass (``-vv``),
each named by its tag (``PassStep.tag``: ``t:007_stage-inputs``, the tile level's pass 7).
Unobserved, the passes from tileify to materialize, which rewrite each kernel on its own,
run on one kernel of each structure, copied to the others under their names
(``deplodock.lower_memo``: a whole model's decoder layers are lowered once).

The roofline guard: where ``options`` override a tile-level pass, a loop kernel whose
kernels come out far above their roofline is lowered again with the defaults, the
better of the two kept (``roofline_guard``; the decision is ``estimate.prefer_default``),
and the note rides on ``materialize``'s step (``-v``).
"""

from __future__ import annotations

import difflib
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from deplodock.boundary import PassError, apply_pass, culprit
from deplodock.dialects import kernel, loop, make_context, tile
from deplodock.dialects.clone import INFORMATIONAL, structure
from deplodock.levels import LEVELS  # re-exported: the levels, top to bottom
from deplodock.lower_memo import lower_each_kernel_once, memo_enabled
from deplodock.passes import PIPELINE, decides_from_hardware, get_pass, pass_tag

if TYPE_CHECKING:
    from deplodock.restack import Restack, Stacked

# The passes that produce each level from the one before it, in order (the one table:
# ``deplodock.passes.PIPELINE``).
PASSES_TO: dict[str, tuple[str, ...]] = {
    level: tuple(name for at, _, name, _ in PIPELINE if at == level) for level in LEVELS[1:-1]
}


def make_pass(name: str, arch: str | None = None, **options) -> ModulePass:
    """The pass ``name`` configured with ``options``; a pass that decides from the
    hardware (``decides_from_hardware``) also gets ``arch`` (None: its default, sm_90)."""
    cls = get_pass(name)
    if arch is not None and decides_from_hardware(cls):
        options = {"arch": arch, **options}
    return cls(**options)


def parse_pass_options(texts: Sequence[str], arch: str | None) -> dict[str, ModulePass] | None:
    """``-p``/``--pass-options`` texts (deplo-opt's syntax, ``'mma-contract{precision=
    tf32x3}'``): pass name -> the pass configured (a pass that decides from the hardware
    gets ``arch`` unless given its own); None without any. A bad one is a
    ``UserInputError`` naming it, before any work."""
    if not texts:
        return None
    import dataclasses

    from xdsl.utils.arg_spec import parse_pipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    from deplodock.errors import UserInputError
    from deplodock.passes import all_passes

    options = {}
    for text in texts:
        try:
            specs = list(parse_pipeline(text))
        except ArgSpecParseError as error:  # a BaseException, with the place marked
            raise UserInputError(f"--pass-options {text!r}: {error}") from None
        for spec in specs:
            if spec.name not in all_passes():
                known = ", ".join(all_passes())
                raise UserInputError(f"--pass-options: unknown pass '{spec.name}' ({known})")
            cls = get_pass(spec.name)
            try:
                pass_ = cls.from_pass_spec(spec)
            except ValueError as error:
                raise UserInputError(f"--pass-options {spec.name}: {error}") from None
            if decides_from_hardware(cls) and "arch" not in spec.parameters:
                pass_ = dataclasses.replace(pass_, arch=arch)
            options[spec.name] = pass_
    return options


def level_of(module: ModuleOp) -> str:
    """The lowest level whose ops the module holds (torch for an empty one)."""
    names = {op.name.split(".")[0] for op in module.walk()}
    for level, dialect in (
        ("kernel", "kernel"),
        ("tile", "tile"),
        ("loop", "loop"),
        ("tensor", "ten"),
    ):
        if dialect in names:
            return level
    return "torch"


def passes_between(start: str, stop: str) -> list[str]:
    """Pass names that take a program from level ``start`` to level ``stop``."""
    if start not in LEVELS or stop not in LEVELS:
        raise ValueError(f"unknown level (known: {', '.join(LEVELS)})")
    first, last = LEVELS.index(start), LEVELS.index(min(stop, "kernel", key=LEVELS.index))
    return [name for level in LEVELS[first + 1 : last + 1] for name in PASSES_TO[level]]


@dataclass(frozen=True)
class PassStep:
    """What an observer hears after each pass: its place in the run, name, and the IR
    around it."""

    index: int  # 1 for the first pass of the whole pipeline (decompose), in run order
    name: str
    before: str
    after: str
    notes: tuple[str, ...] = ()  # what the pass decided and why (e.g. refused fusions)
    module: ModuleOp | None = None  # the module right after the pass (observers may read it)

    @property
    def tag(self) -> str:
        """``t:007_stage-inputs``: the pass's level, its number within the level
        (``deplodock.passes.PIPELINE``) and its name."""
        return pass_tag(self.name)

    def diff(self) -> str:
        """The unified diff of this pass between ``>>> t:007_stage-inputs`` /
        ``<<< t:007_stage-inputs`` lines, its notes first (``# ...``), so that
        ``awk '/^>>> t:007/,/^<<< t:007/'`` shows what the pass did, or why it did nothing."""
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"before {self.name}",
            tofile=f"after {self.name}",
        )
        body = "".join(lines) or "(no change)\n"
        if not body.endswith("\n"):
            body += "\n"
        notes = "".join(f"# {note}\n" for note in self.notes)
        return f">>> {self.tag}\n{notes}{body}<<< {self.tag}\n"


Observer = Callable[[PassStep], None]


def lower(
    module: ModuleOp,
    to: str,
    *,
    ctx: Context | None = None,
    observer: Observer | None = None,
    options: dict[str, ModulePass] | None = None,
    progress: Callable[[str, bool], None] | None = None,
    memo: bool | None = None,
    until: str | None = None,
    arch: str | None = None,
    guard: bool = True,
) -> ModuleOp:
    """Lower ``module`` in place to level ``to`` (``cuda`` stops at kernel; emit after),
    for the target ``arch`` (``deplodock.target``; None: sm_90).

    ``until`` names a pass to stop before (the input of a failing pass, for its
    reproducer: ``deplodock.boundary``). A pass that fails raises a ``PassError``.

    ``options`` maps a pass name to a configured instance, overriding its defaults.
    ``observer`` hears each step with the IR before and after (printing it costs seconds
    on a whole model); ``progress(name, done)`` only hears a pass start and end.
    Without an observer, the per-kernel passes (tile level, materialize) lower one kernel
    of each structure and copy it (``deplodock.lower_memo``); ``memo=False`` (or
    ``DEPLODOCK_LOWER_MEMO=0``) lowers every kernel.

    ``guard``: where ``options`` override a tile-level pass and the lowering runs from
    the loop level to the kernel level, a loop kernel lowered beyond the roofline guard
    is lowered again with the defaults and the better kept (``roofline_guard``); False
    keeps what the options give (a sweep timing forced schedules).
    """
    ctx = ctx or make_context()
    start = level_of(module)
    if LEVELS.index(to) < LEVELS.index(start):
        raise ValueError(f"the program is already at the {start} level, below {to}")
    everything = passes_between("torch", "kernel")
    verifier = Verifier()

    def run(
        target: ModuleOp,
        names: list[str],
        hold: str | None = None,
        finish: Callable[[ModuleOp], tuple[str, ...]] | None = None,
    ) -> None:
        for name in names:
            index = everything.index(name) + 1  # numbered as in the full pipeline
            pass_ = (options or {}).get(name) or make_pass(name, arch)
            before = str(target) if observer else ""
            if progress:
                progress(name, False)
            apply_pass(pass_, ctx, target, verify=verifier.after_pass)
            # the roofline guard's notes ride on the last pass's step
            finished = finish(target) if finish and name == names[-1] else ()
            if progress and name != hold:
                progress(name, True)
            if observer:
                notes = _notes(pass_, target) + finished
                observer(PassStep(index, name, before, str(target), notes, target))

    names = passes_between(start, to)
    if until is not None:
        names = names[: names.index(until)] if until in names else names
        memo = False
    guarded = _guarded_tail(names, options) if guard else []
    per_kernel = _per_kernel_tail(names, options) if observer is None and _memo(memo) else []
    tail = per_kernel or guarded
    run(module, names[: len(names) - len(tail)])
    finish = None
    if guarded:  # the loop-level form, for kernels the options lower beyond the guard
        loop_form = module.clone()

        def finish(lowered: ModuleOp) -> tuple[str, ...]:
            return roofline_guard(lowered, loop_form, guarded, options or {}, arch, ctx)

    if per_kernel:
        # The last pass ends once every kernel has its copy of its class's lowering.
        last = per_kernel[-1]

        def lower_scratch(scratch: ModuleOp) -> None:
            run(scratch, per_kernel, last)
            verifier.whole(scratch)  # the classes' lowerings, before they are copied

        if lower_each_kernel_once(module, lower_scratch):
            verifier.trust(module)
            if finish:
                finish(module)  # unobserved: its notes unheard
            if progress:
                progress(last, True)
        else:
            run(module, per_kernel, finish=finish)
    elif tail:
        run(module, tail, finish=finish)
    if names:
        try:
            verifier.whole(module)  # what the passes changed in place too
        except Exception as error:  # noqa: BLE001 - IR a pass left invalid is a bug
            raise PassError(names[-1], culprit(error), error) from error
    return module


def apply_passes(
    module: ModuleOp,
    names: list[str],
    ctx: Context,
    memo: bool | None = None,
    arch: str | None = None,
    verifier: Verifier | None = None,
    options: dict[str, ModulePass] | None = None,
) -> None:
    """Apply the passes ``names`` with their defaults for ``arch``, or as ``options``
    configures them (no verification between them); the per-kernel ones to one kernel of
    each structure, copied (``lower_each_kernel_once``). With a ``verifier``, each class's
    lowering is verified whole before it is copied and the copies trusted
    (``Verifier.trust``): the caller's ``verifier.whole(module)`` then verifies each
    distinct kernel once."""
    per_kernel = _per_kernel_tail(names, options) if _memo(memo) else []

    def configured(name: str) -> ModulePass:
        return (options or {}).get(name) or make_pass(name, arch)

    for name in names[: len(names) - len(per_kernel)]:
        apply_pass(configured(name), ctx, module, verify=None)

    def run(target: ModuleOp) -> None:
        for name in per_kernel:
            apply_pass(configured(name), ctx, target, verify=None)

    def run_verified(scratch: ModuleOp) -> None:
        run(scratch)
        if verifier is not None:
            verifier.whole(scratch)

    if per_kernel and lower_each_kernel_once(module, run_verified):
        if verifier is not None:
            verifier.trust(module)
    elif per_kernel:
        run(module)


def _memo(memo: bool | None) -> bool:
    return memo_enabled() if memo is None else memo


def _guarded_tail(names: list[str], options: dict[str, ModulePass] | None) -> list[str]:
    """The passes from tileify to materialize, when ``names`` runs them all and ``options``
    override one of them (the roofline guard then has a default to fall back on); else
    none."""
    tail = [*PASSES_TO["tile"], *PASSES_TO["kernel"]]
    if not set(options or ()) & set(tail) or names[-len(tail) :] != tail:
        return []
    return tail


def roofline_guard(
    module: ModuleOp,
    loop_form: ModuleOp,
    names: list[str],
    options: dict[str, ModulePass],
    arch: str | None,
    ctx: Context,
) -> tuple[str, ...]:
    """The roofline guard, after ``names`` (tileify to materialize) lowered ``module``
    with ``options`` from ``loop_form`` (a copy of it at the loop level): where a kernel
    is beyond the guard (``estimate.beyond_guard``), each loop kernel is lowered alone
    with the options and, where that is beyond the guard, alone with the defaults;
    ``estimate.prefer_default`` picks one; if any default is picked, ``module`` becomes
    ``loop_form`` with each loop kernel replaced by its pick (the per-kernel passes give a
    kernel alone the ops it gets among the others: ``deplodock.lower_memo``). Returns the
    notes (``-v``). A module with anything but kernels at the top is left as it is."""
    from deplodock.dialects import kernel, loop
    from deplodock.lower_memo import alone, functions_of_kernels, replace_by
    from deplodock.passes.tile.schedule.estimate import prefer_default, worst_beyond_guard
    from deplodock.target import target_for

    target = target_for(arch)

    def kernels(lowered: ModuleOp) -> list[kernel.KernelOp]:
        return [op for op in lowered.walk() if isinstance(op, kernel.KernelOp)]

    def lowered_alone(op, configured: dict[str, ModulePass]) -> ModuleOp:
        scratch = alone(op)
        for name in names:
            apply_pass(configured.get(name) or make_pass(name, arch), ctx, scratch, verify=None)
        return scratch

    if worst_beyond_guard(kernels(module), target) is None:
        return ()
    loop_kernels = functions_of_kernels(loop_form)
    if loop_kernels is None or not all(isinstance(op, loop.KernelOp) for op in loop_kernels):
        return ()
    picks: list[tuple[loop.KernelOp, ModuleOp]] = []
    notes: list[str] = []
    replaced = False
    for op in loop_kernels:
        forced = lowered_alone(op, options)
        default = None
        if worst_beyond_guard(kernels(forced), target) is not None:
            try:
                default = lowered_alone(op, {})
            except Exception:  # noqa: BLE001 - the forced lowering stays, and the note says so
                default = None
        take, note = prefer_default(
            op.sym_name.data, kernels(forced), None if default is None else kernels(default), target
        )
        picks.append((op, default if take and default else forced))
        replaced |= take
        if note:
            notes.append(note)
    if replaced:
        for op, lowered in picks:
            replace_by(op, lowered)
        for old in list(module.ops):
            old.detach()
            old.erase()
        for new in list(loop_form.ops):
            new.detach()
            module.body.block.add_op(new)
    return tuple(notes)


def _per_kernel_tail(names: list[str], options: dict[str, ModulePass] | None = None) -> list[str]:
    """The passes at the end of ``names`` that rewrite each kernel on its own (the tile
    level's and materialize: ``lower_each_kernel_once`` may run them), unless an option
    picks kernels by name (``chunk-reduce{kernels=..}``)."""
    if any(getattr(p, "kernels", ()) for p in (options or {}).values()):
        return []
    per_kernel = {*PASSES_TO["tile"], *PASSES_TO["kernel"]}
    first = len(names)
    while first and names[first - 1] in per_kernel:
        first -= 1
    return names[first:]


class Verifier:
    """Verification after each pass at the cost of what the pass made.

    A pass that rewrites a kernel replaces it by a new op, so after each pass every
    top-level op of each function not seen before (the kernels it made, the ops between
    them) is verified: bad IR is reported at the pass that made it. A kernel a pass left
    alone is not verified again, which was most of the time of a whole model's lowering
    (TinyLlama: 16 full verifications of 465 kernels, about 80 % of lowering to the kernel
    level). The caller verifies the whole module once at the end (``whole``), which also
    covers what a pass changed in place (an attribute, a loop's unroll request).

    A kernel's body is verified once per content: a body is isolated from above, so two
    kernels with the same ``structure`` (ops, wiring, types, properties and attributes,
    names aside) and the same attributes (but the informational ``covers`` and
    ``fusion.refused``, which name torch ops and kernels) verify alike. Each kernel op
    is still verified itself (its signature against its operands); the bodies of a
    decoder's repeated layers are not (TinyLlama: a quarter of lowering to the loop level
    went to verifying the same bodies again)."""

    def __init__(self) -> None:
        self.seen: weakref.WeakSet = weakref.WeakSet()
        self.bodies: set = set()  # contents verified
        self.trusted: weakref.WeakSet = weakref.WeakSet()  # kernels copied from verified ones

    def trust(self, module: ModuleOp) -> None:
        """The kernels of ``module`` are copies of kernels verified whole (the lowering
        memo's, ``lower_each_kernel_once``: names and locations replaced, operands
        rewired): only the kernel ops themselves are verified again, not their bodies
        (their names in properties keep ``structure`` from seeing them alike)."""
        for function in module.ops:
            if isinstance(function, func.FuncOp):
                self.trusted.update(op for op in function.body.block.ops if isinstance(op, KERNELS))

    def after_pass(self, module: ModuleOp) -> None:
        for function in module.ops:
            if not isinstance(function, func.FuncOp):
                self.whole(module)  # something else at the top: verify it all
                return
            for op in function.body.block.ops:
                if op not in self.seen:
                    self.op(op)
                    self.seen.add(op)

    def op(self, op: Operation) -> None:
        """Verify ``op``, a kernel's body only if no kernel like it was verified."""
        if not isinstance(op, KERNELS):
            op.verify()
            return
        op.verify(verify_nested_ops=False)
        if op in self.trusted:
            return
        body, _ = structure(op)
        own = tuple(sorted((k, v) for k, v in op.attributes.items() if k not in INFORMATIONAL))
        key = (body, own)
        if key not in self.bodies:
            for region in op.regions:
                region.verify()
            self.bodies.add(key)

    def whole(self, module: ModuleOp) -> None:
        """``module.verify()``, each kernel body once per content."""
        module.verify(verify_nested_ops=False)
        for top in module.ops:
            if not isinstance(top, func.FuncOp):
                top.verify()
                continue
            top.verify(verify_nested_ops=False)
            for block in top.body.blocks:
                for op in block.ops:
                    if op.parent is not block:
                        raise ValueError("Parent pointer of operation does not refer to its block")
                    self.op(op)


KERNELS = (loop.KernelOp, tile.KernelOp, kernel.KernelOp)


def verify_module(module: ModuleOp) -> None:
    """Verify ``module`` as ``module.verify()`` would, each kernel body once per content
    (``Verifier``)."""
    Verifier().whole(module)


def _notes(pass_: ModulePass, module: ModuleOp) -> tuple[str, ...]:
    """Decisions a pass left on the IR that a user asked to see with -v: the fusions
    ``fuse`` refused, the long rows ``online-softmax`` left two loops, the inputs
    ``stage-inputs`` left in global memory, the K loops ``fill-k-loop{buffers=3}`` left
    with fewer copies (and why), the attention walks ``tile-walk`` scheduled (their plan)
    or left to the lane-split walk (why)."""
    if pass_.name == "fuse":
        from deplodock.passes.loop.fuse import refusals

        return tuple(refusals(module))
    if pass_.name == "online-softmax":
        from deplodock.passes.loop.online_softmax import kept

        return tuple(kept(module, pass_))
    if pass_.name == "stage-inputs":
        from deplodock.passes.tile.stage_inputs import unstaged

        return tuple(unstaged(module, pass_))
    if pass_.name == "fill-k-loop":
        from deplodock.passes.tile.fill_k_loop import short

        return tuple(short(module, pass_))
    if pass_.name == "tile-walk":
        from deplodock.passes.tile.tile_walk import notes

        return tuple(notes(module, pass_))
    return ()


def compile_fitting(
    module: ModuleOp,
    compile_source: Callable | None = None,
    rounds: int = 2,
    *,
    compile_module: Callable | None = None,
    memo: bool | None = None,
    arch: str | None = None,
    restack: Restack | None = None,
    options: dict[str, ModulePass] | None = None,
):
    """Lower ``module`` to the kernel level and compile it with ``compile_module`` (the
    kernel-level module → an object with ``.resources[name].spills``, e.g. a
    ``CompiledProgram``) or else ``compile_source`` (its CUDA source → such an object);
    a register-tiled kernel that spills under a launch-bounds cap (``min_blocks_per_sm``
    above 1: the cost model's residency, fitted with NVRTC 13.0, which another NVRTC may
    not meet in 128 registers) is compiled again uncapped, and a kernel that spills with
    no minimum asked is compiled again asking for one block an SM (``uncap``); a fused kernel that
    still spills is split at the tile level (``chunk-reduce{kernels=.. chunks=1}``: its
    reduction becomes a kernel of its own) and the program compiled again, up to
    ``rounds`` times. Returns (the kernel-level module,
    the compiled object, the names of the kernels that were split). ``memo`` and
    ``arch``: as in ``lower``. ``restack``: ``module`` is a decoder stack's template,
    made the whole stack once lowered (``deplodock.restack``; a kernel that spills is
    split in the template, where each of its copies has its class's twin). With
    ``compile_module``, which then takes the ``restack.Stacked`` too, the interior
    layer's copies are made only when the compiled object asks (a ``CompiledProgram``
    plans, emits and compiles without them, and makes them for its ``module``): the
    returned module is then the template with the whole stack's arguments and last layer,
    and the whole program is the compiled object's ``module``. ``options``: passes
    configured otherwise than by their defaults, as in ``lower`` (no roofline guard: what
    is asked is what is compiled)."""
    from deplodock.backends.cuda.emit import emit_cuda

    ctx = make_context()
    lower(module, to="loop", memo=memo, arch=arch)
    rest = passes_between("loop", "kernel")
    first, rest = rest[0], rest[1:]  # tileify: after it, kernels have only free axes
    ((options or {}).get(first) or make_pass(first, arch)).apply(ctx, module)
    split: list[str] = []

    def compile_lowered(lowered: ModuleOp, stacked: Stacked | None):
        if compile_module is None:
            return compile_source(emit_cuda(lowered))
        return compile_module(lowered) if stacked is None else compile_module(lowered, stacked)

    for _ in range(rounds + 1):
        lowered = module.clone()
        verifier = Verifier()
        apply_passes(lowered, rest, ctx, memo=memo, arch=arch, verifier=verifier, options=options)
        verifier.whole(lowered)
        stacked = None
        if restack is not None:
            stacked = restack.stacked(lowered)
            if compile_module is None:
                stacked.complete()
                stacked = None
        compiled = compile_lowered(lowered, stacked)
        spilling = [n for n, r in compiled.resources.items() if r.spills and n not in split]
        if uncap(lowered, spilling):
            compiled = compile_lowered(lowered, stacked)
            spilling = [n for n, r in compiled.resources.items() if r.spills and n not in split]
        if not spilling:
            break
        before = str(module)
        make_pass("chunk-reduce", arch, chunks=1, kernels=tuple(spilling)).apply(ctx, module)
        verify_module(module)
        if str(module) == before:
            break  # nothing splittable: keep what compiled
        split += spilling
    return lowered, compiled, split


def uncap(module: ModuleOp, names: Sequence[str]) -> list[str]:
    """The kernels among ``names`` made to ask ``__launch_bounds__`` for one block an SM
    (what they were, by name): a register-tiled kernel capped to more (its schedule's
    ``resident``) uncapped, and a kernel that asked for no minimum given one
    (``kernel.kernel``'s ``resident``: without it ptxas may cap the registers by its own
    occupancy heuristic and spill). A kernel that asked for one already is left alone."""
    if not names:  # nothing spilled: no walk of the whole module
        return []
    from xdsl.dialects.builtin import IntAttr

    from deplodock.dialects import kernel, tile

    dropped = []
    for op in module.walk():
        if isinstance(op, kernel.KernelOp) and op.sym_name.data in names:
            wanted = op.min_blocks_per_sm
            if wanted is None:
                op.resident = IntAttr(1)
            elif wanted > 1:
                op.attributes[tile.SCHEDULE] = tile.schedule_of(op).replace(resident=1)
            else:
                continue
            dropped.append(op.sym_name.data)
    return dropped


def compile_program(
    module: ModuleOp, arch: str = "sm_90", *, cache=None, restack=None, options=None
):
    """``module`` (at the loop level or above) lowered, compiled with NVRTC for ``arch`` and
    ready to run: a ``CompiledProgram``, with every fused kernel that spilled registers
    split again (``compile_fitting``; a second round compiles only the kernels that changed,
    the others are in the kernel cache). ``cache``: the kernel cache (None: the
    environment's; False: none). ``restack`` and ``options``: as in ``compile_fitting``."""
    from deplodock.backends.cuda.runtime import CompiledProgram

    def compile_module(lowered: ModuleOp, stacked: Stacked | None = None) -> CompiledProgram:
        return CompiledProgram(lowered, arch=arch, cache=cache, stacked=stacked)

    _, program, _ = compile_fitting(
        module, compile_module=compile_module, arch=arch, restack=restack, options=options
    )
    return program
