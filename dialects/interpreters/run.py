"""Run a program of any interpretable level on numpy inputs.

``run_forward(module, inputs)`` calls ``func.func @forward`` with xDSL's interpreter and
every interpreter function table the project has (upstream func, ours for arith/math and
for each dialect), so a test can compare the same program before and after a pass.

At the kernel level ``blocks=`` runs only some blocks of each launch (``"sample"``: the
first, the middle and the last; see ``kernel.select_blocks``); what the others would have
written stays NaN. ``trace_forward`` also returns the launches, and ``Trace.written(i)``
says which elements of output ``i`` the blocks that ran wrote, so a test compares exactly
those.

``record_forward`` keeps every value between the ops of ``@forward`` (at the tensor level,
each intermediate tensor), and ``run_alone`` runs one op, a kernel say, by itself on given
operand values: together they judge each kernel alone (test_kernel_by_kernel.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Operation, SSAValue

from deplodock.dialects.interpreters.kernel import BlockChoice, KernelFunctions, Launch


def interpreter_functions(blocks: BlockChoice = None) -> list[InterpreterFunctions]:
    """The implementation tables, upstream's where they work on numpy values, then ours.

    ``blocks`` picks the blocks each ``kernel.kernel`` launch runs (None: all).
    """
    from deplodock.dialects.interpreters.loop import LoopFunctions
    from deplodock.dialects.interpreters.scalar import ScalarFunctions
    from deplodock.dialects.interpreters.tensor import TensorFunctions
    from deplodock.dialects.interpreters.tile import TileFunctions

    return [
        FuncFunctions(),
        ScalarFunctions(),
        TensorFunctions(),
        LoopFunctions(),
        TileFunctions(),
        KernelFunctions(blocks),
    ]


@dataclass
class Trace:
    """The outputs of one run, and the kernel launches that produced them."""

    outputs: list[np.ndarray]
    launches: list[Launch]
    sources: list[tuple[Launch, int] | None]  # per output: the launch and result it is

    def written(self, output: int) -> np.ndarray:
        """True where output ``output`` was computed: the elements the chosen blocks of its
        kernel stored, or everywhere for an output no ``kernel.kernel`` returned."""
        source = self.sources[output]
        if source is None:
            return np.ones(self.outputs[output].shape, np.bool_)
        launch, result = source
        return launch.written_mask(result)


def trace_forward(
    module: ModuleOp,
    inputs: Sequence[np.ndarray],
    entry: str = "forward",
    *,
    blocks: BlockChoice = None,
) -> Trace:
    """Run ``@entry`` on ``inputs`` and keep each kernel launch's record."""
    interpreter = Interpreter(module)
    tables = interpreter_functions(blocks)
    for functions in tables:
        interpreter.register_implementations(functions)
    outputs = [np.asarray(v) for v in interpreter.call_op(entry, tuple(inputs))]
    launches = next(t for t in tables if isinstance(t, KernelFunctions)).launches
    return Trace(outputs, launches, _sources(interpreter.get_op_for_symbol(entry), launches))


def _sources(entry, launches: list[Launch]) -> list[tuple[Launch, int] | None]:
    by_op = {id(launch.op): launch for launch in launches}
    returned = entry.body.block.last_op if isinstance(entry, func.FuncOp) else None
    sources: list[tuple[Launch, int] | None] = []
    for value in returned.operands if returned is not None else ():
        launch = by_op.get(id(value.owner))
        sources.append((launch, value.index) if launch is not None else None)  # type: ignore[attr-defined]
    return sources


def run_forward(
    module: ModuleOp,
    inputs: Sequence[np.ndarray],
    entry: str = "forward",
    *,
    blocks: BlockChoice = None,
) -> list[np.ndarray]:
    """The outputs of ``@entry`` for ``inputs`` (numpy arrays, in argument order)."""
    return trace_forward(module, inputs, entry, blocks=blocks).outputs


# --- every value between the ops of a program, and one op run alone ---------------------------


class _Recorder(Interpreter.Listener):
    """Keeps the results of the ops directly in one block (the entry function's body)."""

    def __init__(self, block) -> None:
        self.block = block
        self.values: dict[SSAValue, object] = {}

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        if op.parent_block() is self.block:
            self.values.update(zip(op.results, results, strict=True))


def record_forward(
    module: ModuleOp,
    inputs: Sequence[np.ndarray],
    entry: str = "forward",
    *,
    blocks: BlockChoice = None,
) -> dict[SSAValue, np.ndarray | None]:
    """Run ``@entry`` on ``inputs`` and keep every value of its body: each argument and
    each result of an op directly in it (at the tensor level every intermediate tensor;
    below, each kernel's outputs), keyed by SSA value.

    A product the tensor interpreter never builds (a matmul's (M, K, N) ``a * b``, which the
    sum reading it evaluates as one einsum) is recorded as None.
    """
    from deplodock.dialects.interpreters.tensor import _DEFERRED

    entry_op = Interpreter(module).get_op_for_symbol(entry)
    assert isinstance(entry_op, func.FuncOp)
    block = entry_op.body.block
    recorder = _Recorder(block)
    interpreter = Interpreter(module, listeners=(recorder,))
    for functions in interpreter_functions(blocks):
        interpreter.register_implementations(functions)
    interpreter.call_op(entry, tuple(inputs))
    values = dict(zip(block.args, inputs, strict=True))
    for value, result in recorder.values.items():
        values[value] = None if result is _DEFERRED else result
    return values


def run_alone(
    module: ModuleOp,
    op: Operation,
    inputs: Sequence[np.ndarray],
    *,
    blocks: BlockChoice = None,
) -> Trace:
    """Run one op of ``module`` (a kernel of any level, say) by itself on ``inputs``, one
    array per operand, whatever computed them; its results are the trace's outputs."""
    interpreter = Interpreter(module)
    tables = interpreter_functions(blocks)
    for functions in tables:
        interpreter.register_implementations(functions)
    outputs = [np.asarray(v) for v in interpreter.run_op(op, tuple(inputs))]
    launches = next(t for t in tables if isinstance(t, KernelFunctions)).launches
    launch = next((item for item in launches if item.op is op), None)
    sources = [(launch, i) if launch is not None else None for i in range(len(outputs))]
    return Trace(outputs, launches, sources)
