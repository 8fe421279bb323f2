"""Which sample of an OpInfo entry makes a kernel spill through deplodock.compile, and
that kernel's CUDA and ptxas report (session 9, on the H200):
    python3 docs/bench/h200-2026-12-02-s9/spill_probe.py ENTRY [DTYPE]"""

import os
import sys
import warnings

import torch

import deplodock
from deplodock import opinfo

warnings.filterwarnings("ignore")
name, dtype = sys.argv[1], getattr(torch, sys.argv[2] if len(sys.argv) > 2 else "float32")
out = os.environ.get("OUT", ".")
(op,) = [o for o in opinfo.entries([name]) if opinfo.full_name(o) == name]
print("torch", torch.__version__, name, dtype)
for k, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=False)):
    program, tensors = opinfo._program(op, sample)
    try:
        fast = deplodock.compile(program.cuda(), *[t.cuda() for t in tensors], cache=False)
    except Exception as e:  # noqa: BLE001 - a probe: say what and go on
        print(k, "refused/failed:", type(e).__name__, str(e)[:200])
        continue
    for kernel, r in fast.program.compiled.resources.items():
        if r.spills:
            shapes = [tuple(t.shape) for t in tensors]
            print(k, shapes, kernel, r)
            unit = fast.program.compiled.unit_of[kernel]
            with open(f"{out}/spill-{name}-{k}-{kernel}.cu", "w") as f:
                f.write(unit.compiled.source)
