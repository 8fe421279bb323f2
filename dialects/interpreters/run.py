"""Run a program of any interpretable level on numpy inputs.

``run_forward(module, inputs)`` calls ``func.func @forward`` with xDSL's interpreter and
every interpreter function table the project has (upstream func, ours for arith/math and
for each dialect), so a test can compare the same program before and after a pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions
from xdsl.interpreters.func import FuncFunctions


def interpreter_functions() -> list[InterpreterFunctions]:
    """The implementation tables, upstream's where they work on numpy values, then ours."""
    from deplodock.dialects.interpreters.loop import LoopFunctions
    from deplodock.dialects.interpreters.scalar import ScalarFunctions
    from deplodock.dialects.interpreters.tensor import TensorFunctions

    return [FuncFunctions(), ScalarFunctions(), TensorFunctions(),
            LoopFunctions()]


def run_forward(
    module: ModuleOp, inputs: Sequence[np.ndarray], entry: str = "forward"
) -> list[np.ndarray]:
    """The outputs of ``@entry`` for ``inputs`` (numpy arrays, in argument order)."""
    interpreter = Interpreter(module)
    for functions in interpreter_functions():
        interpreter.register_implementations(functions)
    return [np.asarray(v) for v in interpreter.call_op(entry, tuple(inputs))]
