"""Kernel by kernel: every loop kernel of both real decoder layers, judged alone.

``test_models.py`` checks the fused loop-level layer end to end; an error there could come
from any of its kernels, or two could cancel. Here each ``loop.kernel`` of the first
decoder layer of TinyLlama and of Qwen2.5-7B (real dimensions, seq 8, random weights,
offline) is run by itself in the loop interpreter on the *tensor-level* values of its
inputs, and each of its outputs is compared with the tensor-level value it stands for. A
wrong kernel is reported by name, and its error cannot leak into the kernels after it.

Which tensor-level value a loop-level value stands for follows from the SSA structure:

* a function argument is the same argument at both levels;
* ``lift-to-loop`` replaces each op of the function body by one kernel in place (one
  result for one result; an op it leaves alone, a non-splat ``ten.constant``, stays the
  same op), so zipping the body before and after it pairs every lifted kernel's result
  with the tensor op result it computes;
* ``fuse`` substitutes producers into consumers and keeps the consumer's name, so a fused
  kernel's result stands for the tensor value its (unique) name was lifted from, and a
  kernel reading another kernel's result reads that value.

Loop-level values are named by reference (argument position, kernel name and result,
position among the other ops), so the mapping also holds for a copy of the module.

Tolerance: a float output passes when max |loop - tensor| <= 1e-5 * max |tensor| over its
finite elements (normwise relative error; the fp32 reductions here sum up to 18944 terms in
a different order than the tensor interpreter's numpy pairwise sums and BLAS einsums, an
error of order sqrt(K) ulps of the largest partial sums); non-finite elements (a mask's
-inf) must agree exactly; an integer or boolean output must be equal; a NaN the loop level
leaves where the tensor level has a number is an unwritten element and fails.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from deplodock.dialects.interpreters.run import record_forward, run_alone
from deplodock.dialects.loop import ForOp, KernelOp
from deplodock.frontends.export import graph_inputs, import_program
from deplodock.pipeline import PassStep, lower

pytest.importorskip("transformers")

MODELS = ["tinyllama", "qwen2.5-7b"]
SEQ = 8
RTOL = 1e-5

Ref = tuple[str, str | int, int]
"""What a loop-level value is, independent of the module object: ("arg", position, 0),
("kernel", name, result) or ("op", position among the body's other ops, result)."""


# --- the layer, at both levels ---------------------------------------------------------------


def random_arguments(func: FuncOp, seed: int = 0) -> list[np.ndarray]:
    """Random arguments that show a wrong index: matrices N(0, 1/fan-in) (activations stay
    of order one), vectors 1 + N(0, 0.01) (norm weights off one, biases nonzero, rotary
    frequencies), user inputs N(0, 1)."""
    rng = np.random.default_rng(seed)
    args = []
    for spec in graph_inputs(func):
        noise = rng.standard_normal(spec.shape, dtype=np.float32)
        if spec.kind == "input" or len(spec.shape) not in (1, 2):
            args.append(noise)
        elif len(spec.shape) == 2:
            args.append(noise / np.float32(spec.shape[1] ** 0.5))
        else:
            args.append(1 + np.float32(0.1) * noise)
    return args


@dataclass
class Layer:
    name: str
    module: ModuleOp  # the layer at the loop level (after lift-to-loop and fuse)
    tensor: dict[Ref, np.ndarray | None]  # the tensor-level value each Ref stands for
    lifted: int  # how many kernels lift-to-loop made


def _body(module: ModuleOp) -> list[Operation]:
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return list(func.body.block.ops)


def ref(value: SSAValue) -> Ref:
    """The reference of a value of the function body (see ``Ref``)."""
    if isinstance(value, BlockArgument):
        return ("arg", value.index, 0)
    owner = value.owner
    assert isinstance(owner, Operation)
    if isinstance(owner, KernelOp):
        return ("kernel", owner.sym_name.data, value.index)
    others = [op for op in owner.parent_block().ops if not isinstance(op, KernelOp)]
    return ("op", next(i for i, op in enumerate(others) if op is owner), value.index)


@functools.cache
def layer(name: str) -> Layer:
    """The first decoder layer of ``name`` (seq 8): its fused loop level, and the value at
    the tensor level of every argument and op result, named by what stands for it below."""
    from deplodock.frontends.models import capture_model

    imported = import_program(capture_model(name, seq=SEQ, part="layer", device="meta").program)
    args = random_arguments(imported.func)
    lower(imported.module, to="tensor")
    tensor_ops = _body(imported.module)
    recorded = record_forward(imported.module, args)
    tensor: dict[Ref, np.ndarray | None] = {("arg", i, 0): a for i, a in enumerate(args)}
    lifted = []

    def pair(step: PassStep) -> None:
        if step.name != "lift-to-loop":
            return
        ops = _body(imported.module)
        assert len(ops) == len(tensor_ops), "lift-to-loop is no longer one kernel per op"
        for old, new in zip(tensor_ops, ops, strict=True):
            assert isinstance(new, KernelOp) or new is old, f"{old.name} became {new.name}"
            for before, after in zip(old.results, new.results, strict=True):
                assert before.type == after.type and ref(after) not in tensor
                tensor[ref(after)] = recorded[before]
            lifted.extend([new] if isinstance(new, KernelOp) else [])

    lower(imported.module, to="loop", observer=pair)
    kernels = [op for op in _body(imported.module) if isinstance(op, KernelOp)]
    used = {ref(v) for op in kernels for v in (*op.inputs, *op.results)}
    kept = {r: v for r, v in tensor.items() if r in used}  # what fusion took in: not needed
    return Layer(name, imported.module, kept, len(lifted))


# --- the check -------------------------------------------------------------------------------


@dataclass
class Verdict:
    kernel: str
    errors: list[float]  # per output: the normwise relative error (0 for an exact match)
    problems: list[str]  # why an output fails, in words

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        errors = ", ".join(f"{e:.1e}" for e in self.errors)
        status = "ok" if self.ok else "FAIL: " + "; ".join(self.problems)
        return f"  @{self.kernel:<34} max rel err {errors:<10} {status}"


def compare(got: np.ndarray, want: np.ndarray) -> tuple[float, str | None]:
    """The error of one output and, when it fails, why (see the module docstring)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return np.inf, f"{got.dtype}{list(got.shape)} for {want.dtype}{list(want.shape)}"
    if not np.issubdtype(want.dtype, np.floating):
        wrong = int(np.count_nonzero(got != want))
        return float(wrong > 0), f"{wrong} of {want.size} elements differ" if wrong else None
    finite = np.isfinite(want)
    unwritten = int(np.count_nonzero(np.isnan(got) & ~np.isnan(want)))
    if unwritten:
        return np.inf, f"{unwritten} elements left unwritten (NaN)"
    if not np.array_equal(got[~finite], want[~finite], equal_nan=True):
        return np.inf, "non-finite elements differ"
    got64, want64 = got[finite].astype(np.float64), want[finite].astype(np.float64)
    if not got64.size:
        return 0.0, None
    scale = float(np.abs(want64).max()) or 1.0
    error = float(np.abs(got64 - want64).max()) / scale
    return error, f"{error:.2e} > {RTOL:g}" if not error <= RTOL else None


def judge(module: ModuleOp, tensor: dict[Ref, np.ndarray | None]) -> list[Verdict]:
    """Run each kernel of ``module`` alone on the tensor-level values of its inputs and
    compare each output with the tensor-level value it stands for."""
    verdicts = []
    for kernel in [op for op in _body(module) if isinstance(op, KernelOp)]:
        name = kernel.sym_name.data
        refs = [ref(v) for v in kernel.inputs] + [ref(r) for r in kernel.results]
        missing = [r for r in refs if r not in tensor]
        assert not missing, f"@{name}: no tensor-level value for {missing}"
        assert all(tensor[r] is not None for r in refs), (
            f"@{name} reads or writes a product the tensor interpreter never builds"
        )
        inputs = [tensor[ref(v)] for v in kernel.inputs]
        outputs = run_alone(module, kernel, inputs).outputs  # type: ignore[arg-type]
        errors, problems = [], []
        for i, (got, result) in enumerate(zip(outputs, kernel.results, strict=True)):
            error, problem = compare(got, np.asarray(tensor[ref(result)]))
            errors.append(error)
            if problem is not None:
                problems.append(f"output {i}: {problem}")
        verdicts.append(Verdict(name, errors, problems))
    return verdicts


def check(name: str, module: ModuleOp, tensor: dict[Ref, np.ndarray | None]) -> list[Verdict]:
    """``judge``, failing with every kernel's error listed and the wrong ones marked."""
    verdicts = judge(module, tensor)
    failed = [v.kernel for v in verdicts if not v.ok]
    if failed:
        pytest.fail(
            f"{name}: {len(failed)} of {len(verdicts)} loop kernels differ from the tensor "
            f"level ({', '.join('@' + k for k in failed)}), each run alone on the "
            f"tensor-level values of its inputs (rtol {RTOL:g}):\n"
            + "\n".join(v.line() for v in verdicts),
            pytrace=False,
        )
    return verdicts


# --- the tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_every_loop_kernel_matches_the_tensor_level(name: str) -> None:
    got = layer(name)
    verdicts = check(name, got.module, got.tensor)
    kernels = [op for op in _body(got.module) if isinstance(op, KernelOp)]
    assert len(verdicts) == len(kernels) > 1
    assert len(kernels) < got.lifted, "fuse fused nothing: the check would judge lifted kernels"
    (ret,) = [op for op in _body(got.module) if isinstance(op, ReturnOp)]
    assert all(isinstance(v.owner, KernelOp) for v in ret.arguments)  # the layer's output too


def _breakable(module: ModuleOp) -> tuple[KernelOp, arith.ConstantOp]:
    """A fused kernel with a reduction, and a finite float constant of its arithmetic."""
    for kernel in [op for op in _body(module) if isinstance(op, KernelOp)]:
        covers = kernel.attributes.get("covers")
        fused = isinstance(covers, ArrayAttr) and len(covers.data) > 1
        if not fused or not any(isinstance(o, ForOp) and o.is_reduce for o in kernel.walk()):
            continue
        for op in kernel.walk():
            if (
                isinstance(op, arith.ConstantOp)
                and isinstance(op.value, FloatAttr)
                and np.isfinite(op.value.value.data)
                and op.result.uses
                and all(u.operation.name in ("arith.addf", "arith.mulf") for u in op.result.uses)
            ):
                return kernel, op
    raise AssertionError("no fused kernel with a reduction and a float constant to break")


def test_a_broken_kernel_is_reported_by_name() -> None:
    """One constant of a fused kernel changed (copy of the module): that kernel fails,
    named, with its error; every other kernel, fed tensor-level values, still passes."""
    got = layer("tinyllama")
    module = got.module.clone()
    kernel, constant = _breakable(module)
    value = constant.value
    assert isinstance(value, FloatAttr)
    constant.properties["value"] = FloatAttr(value.value.data + 1.0, value.type)
    with pytest.raises(pytest.fail.Exception) as failure:
        check("tinyllama", module, got.tensor)
    message = str(failure.value)
    name = kernel.sym_name.data
    kernels = len([op for op in _body(module) if isinstance(op, KernelOp)])
    assert f"1 of {kernels} loop kernels differ" in message
    (wrong,) = [line for line in message.splitlines() if "FAIL" in line]
    assert f"@{name} " in wrong and "max rel err" in wrong and f"> {RTOL:g}" in wrong
