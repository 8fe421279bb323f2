"""The program executor (backends/cuda/runtime.py): the buffer plan, input checking, and
on the GPU poisoning, stream and CUDA-graph replay.

The plan is pure Python over the kernel-level @forward, so it is checked here on the
CPU: lifetimes, that no two intermediates live at once share memory, and that a chain of
kernels needs far less than a buffer per intermediate."""

from __future__ import annotations

import random

import pytest
import torch

from deplodock.backends.cuda.driver import gpu_available
from deplodock.backends.cuda.runtime import (
    ARENA_ALIGNMENT,
    CompiledProgram,
    InputError,
    ValueInfo,
    _assign_offsets,
    check_inputs,
    forward_func,
    plan_program,
)
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.pipeline import lower

needs_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")

# Three matmul + softmax steps: each intermediate is read by the next kernel only.
# Each softmax is scaled before the next product, so ``softmax-sum`` (which folds a
# softmax contracted right away into one walk) leaves the chain's kernels apart.
CHAIN = (
    "torch.matmul(torch.matmul(torch.matmul(torch.randn(64,64), torch.randn(64,64))"
    ".softmax(-1) * 2, torch.randn(64,64)).softmax(-1) * 2, torch.randn(64,64)).softmax(-1)"
)


def _kernel_module(src: str):
    captured = capture_expression(src)
    module = import_program(captured.program).module
    lower(module, to="kernel")
    return captured, module


@pytest.fixture(scope="module")
def chain():
    return _kernel_module(CHAIN)


def _overlap(a: ValueInfo, b: ValueInfo) -> bool:
    live = a.first <= b.last and b.first <= a.last
    memory = a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes
    return live and memory


def _check_layout(plan) -> None:
    inter = plan.intermediates
    for v in inter:
        assert v.offset % ARENA_ALIGNMENT == 0
        assert v.offset + v.nbytes <= plan.arena_bytes
    for i, a in enumerate(inter):
        for b in inter[i + 1 :]:
            assert not _overlap(a, b), (a, b)


def test_chain_reuses_memory(chain) -> None:
    _, module = chain
    plan = plan_program(forward_func(module))
    assert len(plan.steps) >= 5
    assert all(s.grid is not None for s in plan.steps)  # kernel level: launch shapes
    _check_layout(plan)
    # Each intermediate is dead after the kernel that consumes it: two matrices and a row
    # of softmax sums suffice, however long the chain, where a buffer each takes one per
    # kernel.
    assert plan.arena_bytes == plan.peak_live_bytes() == 2 * 64 * 64 * 4 + 64 * 4
    assert plan.arena_bytes < plan.unshared_bytes
    assert plan.unshared_bytes == sum(v.nbytes for v in plan.intermediates)


def test_plan_lifetimes_and_kinds(chain) -> None:
    _, module = chain
    plan = plan_program(forward_func(module))
    assert plan.num_args == 4
    assert [v.kind for v in plan.values[: plan.num_args]] == ["arg"] * 4
    (returned,) = plan.returns
    assert plan.values[returned].kind == "output"
    assert plan.values[returned].offset is None  # the caller's: allocated per call
    for step_index, step in enumerate(plan.steps):
        for i in step.outputs:
            assert plan.values[i].first == step_index
        for i in step.inputs:
            assert plan.values[i].last >= step_index


def test_plan_works_at_the_loop_level() -> None:
    captured = capture_expression(CHAIN)
    module = import_program(captured.program).module
    lower(module, to="loop")
    plan = plan_program(forward_func(module))
    assert all(s.grid is None for s in plan.steps)
    _check_layout(plan)


def test_greedy_layout_never_overlaps_live_buffers() -> None:
    rng = random.Random(0)
    for _ in range(200):
        buffers = []
        for i in range(rng.randrange(1, 25)):
            first = rng.randrange(0, 20)
            last = first + rng.randrange(0, 6)
            nbytes = rng.choice([4, 100, 256, 1000, 4096, 65536])
            buffers.append(ValueInfo(i, f"v{i}", (nbytes,), torch.uint8, nbytes, "x", first, last))
        offsets, arena = _assign_offsets(buffers)
        placed = [
            ValueInfo(
                b.id, b.name, b.shape, b.dtype, b.nbytes, b.kind, b.first, b.last, offsets[b.id]
            )
            for b in buffers
        ]
        for i, a in enumerate(placed):
            assert a.offset % ARENA_ALIGNMENT == 0 and a.offset + a.nbytes <= arena
            for b in placed[i + 1 :]:
                assert not _overlap(a, b)
        assert arena <= sum(-(-b.nbytes // ARENA_ALIGNMENT) * ARENA_ALIGNMENT for b in buffers)


# ------------------------------------------------------------------- input checking


@pytest.fixture(scope="module")
def chain_plan(chain):
    return plan_program(forward_func(chain[1]))


def _good(plan, device="cpu"):
    return [torch.randn(v.shape, device=device) for v in plan.values[: plan.num_args]]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a[:-1], "takes 4 tensors"),
        (lambda a: [torch.randn(64, 32), *a[1:]], "expected shape (64, 64) float32, got (64, 32)"),
        (lambda a: [a[0].double(), *a[1:]], "expected dtype (64, 64) float32, got (64, 64) float"),
        (lambda a: [a[0].t(), *a[1:]], "is not contiguous (strides (1, 64)"),
        (lambda a: [3.0, *a[1:]], "expected a tensor"),
        (lambda a: a, "is on cpu: compiled programs run on CUDA tensors"),
    ],
    ids=["count", "shape", "dtype", "non-contiguous", "not-a-tensor", "cpu-device"],
)
def test_input_errors(chain_plan, change, message) -> None:
    with pytest.raises(InputError) as error:
        check_inputs(chain_plan, change(_good(chain_plan)))
    assert message in str(error.value)
    if "argument" in str(error.value):
        assert "%x" in str(error.value)  # names the argument as the IR prints it


def test_compiled_program_checks_before_touching_the_gpu(chain) -> None:
    """The checks run before the module is loaded, so they speak on any machine."""
    program = CompiledProgram(chain[1])
    args = _good(program.plan)
    args[0] = args[0].t()
    with pytest.raises(InputError, match=r"argument 0 \(%x\) is not contiguous"):
        program(*args)


# ------------------------------------------------------------------------------ GPU


@pytest.fixture(scope="module")
def chain_program(chain):
    captured, module = chain
    return captured, CompiledProgram(module)


def _reference(captured, args):
    with torch.no_grad():
        return captured.module.cuda()(*args)


@pytest.mark.gpu
@needs_gpu
def test_chain_matches_eager_with_and_without_poison(chain_program) -> None:
    captured, program = chain_program
    args = _good(program.plan, "cuda")
    want = _reference(captured, args)
    for poison in (True, False):
        (got,) = program(*args, poison=poison)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@needs_gpu
def test_runs_on_the_callers_stream(chain_program) -> None:
    captured, program = chain_program
    args = _good(program.plan, "cuda")
    want = _reference(captured, args)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)  # keep the stream busy: work queued behind it waits
        (got,) = program(*args, poison=False)
        done = torch.cuda.Event()
        done.record(stream)
    assert not done.query()  # queued behind the sleep on the same stream
    stream.synchronize()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@needs_gpu
def test_graph_replay_matches_and_copies_inputs(chain_program) -> None:
    captured, program = chain_program
    args = _good(program.plan, "cuda")
    graphed = program.capture(*args)
    for _ in range(2):
        fresh = _good(program.plan, "cuda")
        (got,) = graphed(*fresh)
        torch.testing.assert_close(got, _reference(captured, fresh), rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@needs_gpu
def test_graph_static_arguments_must_stay_the_same(chain_program) -> None:
    _, program = chain_program
    args = _good(program.plan, "cuda")
    graphed = program.capture(*args, static=[False, True, True, True])
    graphed(torch.randn(64, 64, device="cuda"), *args[1:])
    with pytest.raises(InputError, match="captured as static"):
        graphed(*_good(program.plan, "cuda"))
