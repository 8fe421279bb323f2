"""How far deplodock's and eager's CUDA results are from float64, for every sample of an
OpInfo entry that deplodock does not match eager on (session 9, on the H200):
    python3 docs/bench/h200-2026-12-02-s9/accuracy_probe.py ENTRY [DTYPE]"""

import sys
import warnings

import torch

import deplodock
from deplodock import opinfo

warnings.filterwarnings("ignore")
name, dtype = sys.argv[1], getattr(torch, sys.argv[2] if len(sys.argv) > 2 else "float32")
(op,) = [o for o in opinfo.entries([name]) if opinfo.full_name(o) == name]
print("torch", torch.__version__, name, dtype)
for k, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=False)):
    try:
        program, tensors = opinfo._program(op, sample)
        want = opinfo._reference(program, tensors, "cuda")
        exact = opinfo._reference64(program, tensors, want)
        cuda = [t.cuda() for t in tensors]
        got = opinfo._outputs(deplodock.compile(program.cuda(), *cuda, cache=False)(*cuda))
    except Exception as e:  # noqa: BLE001 - a probe: refused samples are not its subject
        print(k, "skipped:", type(e).__name__, str(e)[:120].replace("\n", " "))
        continue
    if opinfo._compare(got, want) is None:
        continue
    verdict = opinfo._matches(got, want, exact)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if not w.is_floating_point():
            continue
        e = exact[i].cpu().double() if exact else None
        g, w = g.cpu().double(), w.cpu().double()
        line = f"{k} out{i} {tuple(w.shape)} |d-eager| {float((g - w).abs().max()):.3g}"
        if e is not None:
            rmse = lambda a: float(((a - e) ** 2).mean().sqrt())  # noqa: E731
            line += (
                f" |d-f64| {float((g - e).abs().max()):.3g} |eager-f64| "
                f"{float((w - e).abs().max()):.3g} rmse d {rmse(g):.3g} eager {rmse(w):.3g}"
                f" |f64| max {float(e.abs().max()):.3g}"
            )
        print(line, "->", "pass" if verdict is None else "MISMATCH", sample.kwargs.keys())
