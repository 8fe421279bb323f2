"""PyTorch's OpInfo database as deplodock's conformance suite.

    python -m deplodock.bench.opinfo                         # every entry, float32, the table
    python -m deplodock.bench.opinfo --filter erf,clamp -v   # a few entries, every sample's verdict
    python -m deplodock.bench.opinfo --dtype bfloat16 --samples 4 --out table.md --json table.json
    python -m deplodock.bench.opinfo --device cuda           # through deplodock.compile on the GPU
    python -m deplodock.bench.opinfo --samples 0 --results all.jsonl --deadline 500 --out t.md
                                     # every sample; run again with the same file to resume

Each entry of ``torch.testing._internal.common_methods_invocations.op_db`` (the suite
Inductor's ``test_torchinductor_opinfo.py`` tests itself on) gives sample inputs for a
dtype. Every sample becomes a program of its tensors (the tensors the sample holds, in
its input, its positional and its keyword arguments, are the program's inputs; the rest
are constants of the program), is captured with ``torch.export``, lowered, and compared
with eager PyTorch on the same inputs:

- ``--device cpu`` (the default): lowered to the loop and the kernel level and run on the
  numpy interpreters (the kernel level SIMT, with the race and bounds checks);
  ``--levels loop,kernel,cuda`` also compiles the kernels with NVRTC for sm_90 (no GPU
  needed) and fails a sample whose CUDA NVRTC rejects or whose kernels spill;
- ``--device cuda``: compiled with ``deplodock.compile`` and run on the GPU, the outputs
  poisoned first, compared with eager on CUDA.

An entry's verdict is the worst of its samples':

- ``pass``: every sample matched at torch's tolerance for the dtype;
- ``refused``: some sample was refused cleanly before any work (an unsupported op with its
  reason, a program torch.export cannot capture, outputs that are not tensors) and none
  failed;
- ``failed``: a sample gave a wrong answer (``mismatch``) or ended in an exception that is
  not a clean refusal (``crash``): both are bugs.

Entries whose meaning is random (``dropout``, ``rand_like``…) or whose samples give
nothing to compare are listed as refused with that reason. Tolerances are torch's own
(``torch.testing.assert_close``'s defaults for the dtype), widened as Inductor's OpInfo
test does for 16-bit floats when the reference is computed in float64.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import json
import multiprocessing
import signal
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch.utils import _pytree as pytree

__all__ = ["EntryResult", "SampleResult", "check_entry", "entries", "main", "run"]

VERDICTS = ("pass", "refused", "failed")


@dataclass
class SampleResult:
    """One sample's verdict: pass, refused (with the reason) or mismatch/crash."""

    verdict: str  # pass | refused | mismatch | crash
    reason: str = ""


@dataclass
class EntryResult:
    """One OpInfo entry (name and variant) and its samples' verdicts."""

    name: str
    samples: list[SampleResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        kinds = {s.verdict for s in self.samples}
        if kinds & {"mismatch", "crash"}:
            return "failed"
        if "refused" in kinds or not kinds:
            return "refused"
        return "pass"

    @property
    def reason(self) -> str:
        """The first reason of the samples that decided the verdict."""
        order = ("crash", "mismatch", "refused")
        for kind in order:
            for s in self.samples:
                if s.verdict == kind:
                    return f"{kind}: {s.reason}" if kind != "refused" else s.reason
        return ""


# Entries whose result is random or depends on state the program does not see.
_RANDOM = (
    "rand",
    "normal",
    "bernoulli",
    "multinomial",
    "dropout",
    "uniform",
    "randint",
    "randn",
    "randperm",
    "exponential",
    "geometric",
    "cauchy",
    "log_normal",
    "poisson",
)


def _is_random(op) -> bool:
    """Whether the entry's results are random draws (dropout in training, sampling)."""
    if "without_train" in full_name(op) or op.name.startswith("signal.windows"):
        return False
    words = op.name.replace(".", "_").split("_")
    return any(w in _RANDOM for w in words) or "rand" in op.name or "dropout" in op.name


def entries(names: Sequence[str] = ()) -> list:
    """The OpInfo entries, optionally only those whose full name (``name.variant``)
    contains one of ``names``."""
    from torch.testing._internal.common_methods_invocations import op_db

    found = [op for op in op_db if not names or any(n in full_name(op) for n in names)]
    return sorted(found, key=full_name)


def full_name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


class _Program(torch.nn.Module):
    """One sample as a module of its tensors: ``forward(*tensors)`` calls the op."""

    def __init__(self, fn: Callable, spec, leaves: list, tensor_slots: list[int]):
        super().__init__()
        self.fn, self.spec, self.leaves, self.slots = fn, spec, leaves, tensor_slots

    def forward(self, *tensors):
        leaves = list(self.leaves)
        for slot, t in zip(self.slots, tensors, strict=True):
            leaves[slot] = t
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.fn(*args, **kwargs)


class Refused(Exception):
    """A sample deplodock does not take, for a reason a user would be told."""


def _program(op, sample) -> tuple[_Program, list[torch.Tensor]]:
    args = (sample.input, *sample.args)
    leaves, spec = pytree.tree_flatten((args, dict(sample.kwargs)))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    for i in slots:
        if leaves[i].layout != torch.strided:
            raise Refused(f"a {leaves[i].layout} input (sparse layouts are not compiled)")
        if leaves[i].is_complex():
            raise Refused(f"a {leaves[i].dtype} input (complex numbers are not compiled)")
    tensors = [leaves[i].detach().clone() for i in slots]
    return _Program(op.op, spec, leaves, slots), tensors


def _outputs(value: Any) -> list[torch.Tensor]:
    leaves = pytree.tree_leaves(value)
    if not leaves or not all(isinstance(v, torch.Tensor) for v in leaves):
        kinds = sorted({type(v).__name__ for v in leaves}) or ["nothing"]
        raise Refused(f"the op returns {', '.join(kinds)}, not tensors")
    return leaves


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) of ``torch.testing.assert_close`` for ``dtype``, widened for 16-bit
    floats as Inductor's OpInfo test widens them (its reference is eager in the dtype
    too, rounded per op, where a fused kernel rounds once)."""
    if dtype == torch.float16:
        return 1e-2, 1e-3 * 5
    if dtype == torch.bfloat16:
        return 1.6e-2 * 2, 1e-5 * 1000
    if dtype == torch.float64:
        return 1e-7, 1e-7
    if dtype == torch.float32:
        return 1.3e-6 * 10, 1e-5 * 10
    return 0.0, 0.0


_FLOATS = (torch.float16, torch.bfloat16, torch.float32)

# Entries whose result is uninitialised memory: only its shape is compared, as Inductor's
# OpInfo test does for them.
SHAPE_ONLY = frozenset(
    {
        "empty",
        "empty_like",
        "empty_permuted",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
    }
)


@dataclass
class _Uninitialized:
    """A reference output whose values mean nothing (an `empty` tensor): its shape."""

    like: torch.Tensor

    @property
    def shape(self) -> torch.Size:
        return self.like.shape


def _reference(program: _Program, tensors: list[torch.Tensor], device: str) -> list:
    """Eager PyTorch's outputs on ``device``; a sample eager rejects there is refused."""
    inputs = [t.cuda() for t in tensors] if device == "cuda" else tensors
    try:
        with torch.no_grad():
            result = (program.cuda() if device == "cuda" else program)(*inputs)
    except Exception as e:  # noqa: BLE001 - eager's own refusal of the sample
        raise Refused(
            f"eager PyTorch rejects the sample on {device}: {_one_line(str(e))}"
        ) from None
    return _outputs(result)


@dataclass
class Float64:
    """A sample's float64 reference: its outputs, and a function giving the float64
    outputs again for the inputs moved by up to one unit in the last place of their dtype
    (each call another draw), which measures how ill-conditioned the sample is."""

    outputs: list
    perturbed: Callable[[], list] | None = None


def _reference64(program: _Program, tensors: list[torch.Tensor], like: Sequence[Any]):
    """The sample's ``Float64`` reference, computed on the CPU (``like``: eager's outputs,
    for their count and which ones are uninitialised), or None when it does not run in
    float64."""

    def run(inputs: list[torch.Tensor]) -> list:
        with torch.no_grad():
            return _outputs(program.cpu()(*inputs))

    try:
        exact = run([t.double() if t.is_floating_point() else t for t in tensors])
    except Exception:  # noqa: BLE001 - no float64 kernel: eager's is the only reference
        return None
    if len(exact) != len(like):
        return None
    draws = torch.Generator().manual_seed(0)

    def perturbed() -> list:
        moved = []
        for t in tensors:
            if t.is_floating_point():
                eps = torch.finfo(t.dtype).eps
                noise = torch.rand(t.shape, generator=draws, dtype=torch.float64) * 2 - 1
                moved.append(t.double() * (1 + eps * noise))
            else:
                moved.append(t)
        return run(moved)

    outputs = [w if isinstance(w, _Uninitialized) else e for e, w in zip(exact, like, strict=True)]
    return Float64(outputs, perturbed)


def _matches(got: Sequence[Any], want: Sequence[Any], exact: Float64 | None) -> str | None:
    """``_compare`` with eager. A float result that misses may still be right, judged
    against the float64 result (``exact``), in three ways, the first two as Inductor's
    OpInfo test judges (``torch._dynamo.utils.same`` with ``fp64_ref``): within tolerance
    of the float64 result rounded to the dtype; a root-mean-square error from float64 at
    most twice eager's own (three times in bf16); or, for an ill-conditioned sample, a
    largest error from float64 at most twice what moving the inputs by one unit in their
    last place does to the float64 result (the most of four draws): no program in the
    dtype can be held to more than the rounding of its own inputs allows. A fused kernel
    rounds once where eager rounds after each op (CUDA's addbmm after every batch in
    bf16); multi_head_attention_forward's sample of logits near 1e5 moves by 0.18 when
    its inputs move by an ulp, where eager CUDA is 0.002 from float64 and deplodock 0.04."""
    problem = _compare(got, want)
    if problem is None or exact is None:
        return problem
    rounded = [
        e if isinstance(e, _Uninitialized) else e.to(w.dtype)
        for e, w in zip(exact.outputs, want, strict=True)
    ]
    if _compare(got, rounded) is None:
        return None
    if len(got) != len(want):
        return problem
    if all(_no_worse_than_eager(g, w, e) for g, w, e in zip(got, want, exact.outputs, strict=True)):
        return None
    if exact.perturbed is not None and _within_conditioning(got, want, exact):
        return None
    return problem


def _within_conditioning(got: Sequence[Any], want: Sequence[Any], exact: Float64) -> bool:
    """Whether every float output is as close to float64 as the sample's conditioning
    allows (see ``_matches``), with the same non-finite elements."""
    draws = [exact.perturbed() for _ in range(4)]
    for k, (g, w, e) in enumerate(zip(got, want, exact.outputs, strict=True)):
        if isinstance(w, _Uninitialized):
            continue
        if not w.is_floating_point():
            if _compare([g], [w]) is not None:
                return False
            continue
        g = torch.as_tensor(np.asarray(g)) if not isinstance(g, torch.Tensor) else g
        g, e = g.cpu().double(), e.cpu().double()
        finite = torch.isfinite(e)
        if g.shape != e.shape or not torch.equal(torch.isfinite(g), finite):
            return False
        if not finite.any():
            continue
        spread = max(float((d[k].double() - e)[finite].abs().max()) for d in draws)
        _, atol = tolerance(w.dtype)
        if float((g - e)[finite].abs().max()) > 2 * spread + atol:
            return False
    return True


def _no_worse_than_eager(got: Any, want: Any, exact: Any) -> bool:
    """Inductor's float64 rule for one output: the same non-finite elements as float64,
    and a root-mean-square error from float64 at most twice (bf16: three times) eager's,
    plus a tenth of the dtype's atol."""
    if isinstance(want, _Uninitialized) or not want.is_floating_point():
        return _compare([got], [want]) is None
    got = torch.as_tensor(np.asarray(got)) if not isinstance(got, torch.Tensor) else got
    dtype = want.dtype
    got, want, exact = got.cpu().double(), want.cpu().double(), exact.cpu().double()
    if got.shape != exact.shape:
        return False
    finite = torch.isfinite(exact)
    if not torch.equal(torch.isfinite(got), finite) or not torch.equal(
        got[~finite].nan_to_num(), exact[~finite].nan_to_num()
    ):
        return False
    if not finite.any():
        return True

    def rmse(a: torch.Tensor) -> float:
        return float(torch.sqrt(torch.mean((a[finite] - exact[finite]) ** 2)))

    multiplier = 3.0 if dtype == torch.bfloat16 else 2.0
    _, atol = tolerance(dtype)
    return rmse(got) <= multiplier * rmse(want) + atol / 10


def _compare(got: Sequence[Any], want: Sequence[Any]) -> str | None:
    """None when every output matches; else what differs."""
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g = torch.as_tensor(np.asarray(g)) if not isinstance(g, torch.Tensor) else g
        g = g.cpu()
        if tuple(g.shape) != tuple(w.shape):
            return f"output {k} has shape {tuple(g.shape)}, expected {tuple(w.shape)}"
        if isinstance(w, _Uninitialized):
            continue
        w = w.cpu()
        if w.dtype == torch.bool or g.dtype == torch.bool:
            if not torch.equal(g.to(torch.bool), w.to(torch.bool)):
                return f"output {k}: {int((g.to(torch.bool) != w).sum())} booleans differ"
            continue
        rtol, atol = tolerance(w.dtype)
        try:
            torch.testing.assert_close(
                g.to(w.dtype), w, rtol=rtol, atol=atol, equal_nan=True, check_dtype=False
            )
        except AssertionError as e:
            first = str(e).strip().splitlines()
            return f"output {k}: " + " ".join(line.strip() for line in first[:3])
    return None


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float):
    if seconds <= 0 or not hasattr(signal, "SIGALRM"):
        yield
        return

    def fire(signum, frame):
        raise _Timeout(f"over {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: the interpreters keep it in f32
        return t.float().numpy()
    return t.numpy()


def _check_interpreters(
    program: _Program, tensors: list[torch.Tensor], want, levels, exact=None
) -> str | None:
    from deplodock.frontends.capture import export_module
    from deplodock.frontends.export import import_program
    from deplodock.pipeline import lower

    ep = export_module(program, tuple(tensors), "the sample")
    imported = import_program(ep)
    module = imported.module
    args = {i.name: i for i in imported.inputs}
    from deplodock.dialects.interpreters.run import run_forward

    inputs = []
    user = iter(tensors)
    for gi in imported.inputs:
        if gi.kind == "input":
            inputs.append(_numpy(next(user)))
        else:
            inputs.append(_numpy(_lifted(ep, gi.target)))
    del args
    current = "torch"
    for level in levels:
        if level == "cuda":  # the kernel level's CUDA through NVRTC: no error, no spills
            problem = _check_nvrtc(lower(module, to="kernel") if current != "kernel" else module)
            if problem is not None:
                return f"cuda: {problem}"
            continue
        module = lower(module, to=level) if level != current else module
        current = level
        got = run_forward(module, inputs)
        problem = _matches(got, want, exact)
        if problem is not None:
            return f"{level} level: {problem}"
    return None


def _check_nvrtc(module) -> str | None:
    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.backends.cuda.nvrtc import compile_cuda

    compiled = compile_cuda(emit_cuda(module), arch="sm_90")
    spilling = [name for name, r in compiled.resources.items() if r.spills]
    return f"kernels spill registers: {', '.join(spilling)}" if spilling else None


def _lifted(ep: torch.export.ExportedProgram, target: str) -> torch.Tensor:
    if target in ep.constants:
        return ep.constants[target]
    return ep.state_dict[target]


def _check_cuda(program: _Program, tensors: list[torch.Tensor], want, exact=None) -> str | None:
    import deplodock

    device_tensors = [t.cuda() for t in tensors]
    fast = deplodock.compile(program.cuda(), *device_tensors, poison=True)
    spilling = [name for name, r in fast.program.resources.items() if r.spills]
    if spilling:
        return f"kernels spill registers: {', '.join(spilling)}"
    got = _outputs(fast(*device_tensors))
    return _matches(got, want, exact)


def check_sample(op, sample, device: str, levels: Sequence[str], timeout: float) -> SampleResult:
    """Capture, lower and run one sample; compare with eager."""
    from deplodock.errors import UserInputError

    try:
        with _deadline(timeout):
            program, tensors = _program(op, sample)
            want = _reference(program, tensors, device)
            if full_name(op) in SHAPE_ONLY:
                want = [_Uninitialized(w) for w in want]
            exact: Float64 | None = None
            if any(getattr(w, "dtype", None) in _FLOATS for w in want):
                exact = _reference64(program, tensors, want)
            if device == "cuda":
                problem = _check_cuda(program, tensors, want, exact)
            else:
                problem = _check_interpreters(program, tensors, want, levels, exact)
    except Refused as e:
        return SampleResult("refused", str(e))
    except UserInputError as e:
        return SampleResult("refused", _one_line(str(e)))
    except _Timeout as e:
        return SampleResult("crash", f"timeout ({e})")
    except Exception as e:  # noqa: BLE001 - every other exception is a bug to report
        frame = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{frame.filename.rsplit('/', 2)[-2:]}:{frame.lineno}"
        return SampleResult("crash", f"{type(e).__name__}: {_one_line(str(e))} [{where}]")
    if problem is not None:
        return SampleResult("mismatch", problem)
    return SampleResult("pass")


def _one_line(text: str, limit: int = 300) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):  # "1 unsupported op:\n  aten.x (why)"
        text = lines[0] + " " + "; ".join(lines[1:4])
    else:
        text = lines[0] if lines else ""
    return text[:limit]


@contextlib.contextmanager
def _no_test_case_lookup():
    """OpInfo's ``sample_inputs`` looks for a ``unittest.TestCase`` up the stack (its
    per-sample skips) with ``inspect.stack()``, which reads the source of every frame: a
    tenth of an entry's time here, more under pytest's deep stacks. No frame of this
    harness is a TestCase, so while samples are drawn the lookup answers None at once."""
    from torch.testing._internal.opinfo import core

    original = getattr(core, "extract_test_fn", None)
    if original is None:
        yield
        return
    core.extract_test_fn = lambda: None
    try:
        yield
    finally:
        core.extract_test_fn = original


def check_entry(
    op,
    dtype: torch.dtype = torch.float32,
    samples: int = 3,
    device: str = "cpu",
    levels: Sequence[str] = ("loop", "kernel"),
    timeout: float = 60.0,
) -> EntryResult:
    """The verdicts of the first ``samples`` samples of ``op`` for ``dtype``."""
    result = EntryResult(full_name(op))
    start = time.perf_counter()
    if _is_random(op):
        result.samples.append(SampleResult("refused", "random sampling (results are random)"))
        return result
    if dtype not in op.supported_dtypes("cpu"):
        result.samples.append(SampleResult("refused", f"torch has no {dtype} kernel for it"))
        return result
    torch.manual_seed(0)
    try:
        with _no_test_case_lookup():
            generated = op.sample_inputs("cpu", dtype, requires_grad=False)
            chosen = []
            for sample in generated:
                chosen.append(sample)
                if len(chosen) == samples:  # 0: every sample
                    break
    except Exception as e:  # noqa: BLE001 - the OpInfo's own generator failing
        result.samples.append(SampleResult("refused", f"no samples: {type(e).__name__}: {e}"))
        return result
    for sample in chosen:
        result.samples.append(check_sample(op, sample, device, levels, timeout))
    result.seconds = time.perf_counter() - start
    return result


def run(
    ops: Iterable,
    dtype: torch.dtype = torch.float32,
    samples: int = 3,
    device: str = "cpu",
    levels: Sequence[str] = ("loop", "kernel"),
    timeout: float = 60.0,
    progress: Callable[[EntryResult], None] | None = None,
    jobs: int = 1,
    deadline: float = 0.0,
) -> list[EntryResult]:
    """The results of the entries of ``ops`` that ran, in their order; ``jobs`` > 1 checks
    entries in that many spawned worker processes, each looking its entries up by name.
    ``deadline`` > 0: no entry starts after that many seconds (the ones running finish), so
    a long run ends on time with what it has; ``progress`` sees each result as it comes."""
    ops = list(ops)
    check = functools.partial(
        check_entry, dtype=dtype, samples=samples, device=device, levels=levels, timeout=timeout
    )
    stop = time.monotonic() + deadline if deadline > 0 else float("inf")
    if jobs <= 1:
        results = []
        for op in ops:
            if time.monotonic() > stop:
                break
            results.append(check(op))
            if progress:
                progress(results[-1])
        return results
    # Workers are spawned, never forked: CUDA does not survive a fork, and a fork of a
    # process whose OpenMP pool has run (any test session that computed with torch before)
    # can deadlock in the child, out of reach of the per-sample deadline.
    context = multiprocessing.get_context("spawn")
    by_index: dict[int, EntryResult] = {}
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        futures = {
            pool.submit(_check_in_worker, full_name(op), check): i for i, op in enumerate(ops)
        }
        for future in concurrent.futures.as_completed(futures):
            if time.monotonic() > stop:
                for pending in futures:
                    pending.cancel()  # only those not started yet
            if future.cancelled():
                continue
            i = futures[future]
            try:
                by_index[i] = future.result()
            except Exception as e:  # noqa: BLE001 - a worker that died (out of memory, a signal)
                by_index[i] = EntryResult(
                    full_name(ops[i]), [SampleResult("crash", f"worker died: {e!r}")]
                )
            if progress:
                progress(by_index[i])
    return [by_index[i] for i in sorted(by_index)]


# A worker's entries, built once per worker process (OpInfo entries do not pickle).
_WORKER_OPS: dict[str, Any] = {}


def _check_in_worker(name: str, check: Callable) -> EntryResult:
    warnings.filterwarnings("ignore")
    if not _WORKER_OPS:
        torch.set_num_threads(1)  # the workers already use every core between them
        _WORKER_OPS.update((full_name(op), op) for op in entries())
    return check(_WORKER_OPS[name])


def table(results: Sequence[EntryResult], title: str, not_run: Sequence[str] = ()) -> str:
    """The Markdown report: counts, then every entry that did not pass, by verdict."""
    counts = Counter(r.verdict for r in results)
    lines = [f"# {title}", "", "| verdict | entries |", "| --- | --- |"]
    lines += [f"| {v} | {counts.get(v, 0)} |" for v in VERDICTS]
    if not_run:
        lines += [f"| not run (the deadline passed) | {len(not_run)} |"]
    lines += [f"| all | {len(results) + len(not_run)} |", ""]
    reasons = Counter(_family(r.reason) for r in results if r.verdict == "refused")
    lines += [
        "## Why entries are refused (most common first)",
        "",
        "| reason | entries |",
        "| --- | --- |",
    ]
    lines += [f"| {reason} | {n} |" for reason, n in reasons.most_common()]
    lines += [
        "",
        "## Every entry",
        "",
        "| entry | verdict | samples passed | reason |",
        "| --- | --- | --- | --- |",
    ]
    for r in results:
        passed = sum(s.verdict == "pass" for s in r.samples)
        reason = r.reason.replace("|", "\\|")
        lines.append(f"| `{r.name}` | {r.verdict} | {passed}/{len(r.samples)} | {reason} |")
    lines += [f"| `{name}` | not run | | |" for name in not_run]
    return "\n".join(lines) + "\n"


def _family(reason: str) -> str:
    """A refusal's reason without its particulars (op names stay, source lines go)."""
    reason = reason.split(" at ", 1)[0]
    reason = reason.split("  (at ", 1)[0]
    return reason[:160]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deplodock.bench.opinfo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--filter", default="", help="comma-separated parts of entry names")
    parser.add_argument(
        "--entries", default="", help="comma-separated full entry names (name.variant), exactly"
    )
    parser.add_argument("--dtype", default="float32")
    parser.add_argument(
        "--samples", type=int, default=3, help="samples per entry (default 3; 0: every sample)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument(
        "--levels",
        default="loop,kernel",
        help="interpreted levels, in order (cpu only; default loop,kernel)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per sample")
    parser.add_argument("--out", help="write the Markdown table here")
    parser.add_argument("--json", help="write every sample's verdict here")
    parser.add_argument(
        "--results",
        help="a JSON-lines file each entry's result is appended to as it finishes; entries "
        "already in it (for the same dtype, device, levels and samples) are not run again, "
        "so a run cut short resumes where it stopped",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=0.0,
        help="seconds after which no entry starts (the table lists the rest as not run)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per entry")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    dtype = getattr(torch, args.dtype)
    names = [n for n in args.filter.split(",") if n]
    ops = entries(names)
    if args.entries:
        exact = set(args.entries.split(","))
        ops = [op for op in ops if full_name(op) in exact]
    levels = tuple(level for level in args.levels.split(",") if level)
    start = time.perf_counter()
    done = Counter()

    config = {
        "dtype": args.dtype,
        "device": args.device,
        "samples_per_entry": args.samples,
        "levels": list(levels) if args.device == "cpu" else [],
    }
    earlier = _load_results(args.results, config) if args.results else {}
    todo = [op for op in ops if full_name(op) not in earlier]

    def progress(r: EntryResult) -> None:
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps({**config, **_as_json(r)}) + "\n")
        done[r.verdict] += 1
        if args.verbose:
            print(
                f"{r.verdict:8s} {r.name:40s} {r.seconds:6.1f}s {r.reason[:150]}",
                file=sys.stderr,
                flush=True,
            )
        elif sys.stderr.isatty():
            n = sum(done.values())
            print(
                f"\r{n}/{len(ops)} " + " ".join(f"{v} {done[v]}" for v in VERDICTS),
                end="",
                file=sys.stderr,
                flush=True,
            )

    fresh = run(
        todo,
        dtype,
        args.samples,
        args.device,
        levels,
        args.timeout,
        progress,
        jobs=args.jobs,
        deadline=args.deadline,
    )
    by_name = {**earlier, **{r.name: r for r in fresh}}
    results = [by_name[full_name(op)] for op in ops if full_name(op) in by_name]
    not_run = [full_name(op) for op in ops if full_name(op) not in by_name]
    if sys.stderr.isatty() and not args.verbose:
        print(file=sys.stderr)
    how_many = f"up to {args.samples} samples" if args.samples else "every sample"
    where = f"the interpreters ({'+'.join(levels)})" if args.device == "cpu" else "CUDA"
    title = (
        f"OpInfo conformance: {args.dtype}, {where}, {how_many} an entry, torch {torch.__version__}"
    )
    report = table(results, title, not_run)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([_as_json(r) for r in results], f, indent=1)
    counts = Counter(r.verdict for r in results)
    print(
        " ".join(f"{v} {counts.get(v, 0)}" for v in VERDICTS)
        + f" of {len(results)} entries ({time.perf_counter() - start:.0f} s)"
        + (f"; {len(not_run)} not run (the deadline passed)" if not_run else "")
    )
    return 0


def _as_json(r: EntryResult) -> dict:
    return {"name": r.name, "verdict": r.verdict, "samples": [asdict(s) for s in r.samples]}


def _load_results(path: str, config: dict) -> dict[str, EntryResult]:
    """The entries a ``--results`` file already holds for ``config`` (later lines win)."""
    found: dict[str, EntryResult] = {}
    try:
        with open(path) as f:
            lines = f.readlines()
    except FileNotFoundError:
        return found
    for line in lines:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut off when the run was killed
        if all(row.get(k) == v for k, v in config.items()):
            samples = [SampleResult(**s) for s in row["samples"]]
            found[row["name"]] = EntryResult(row["name"], samples)
    return found


if __name__ == "__main__":
    raise SystemExit(main())
