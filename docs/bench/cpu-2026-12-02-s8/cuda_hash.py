"""sha1 of the emitted CUDA of every bench case (not whole models), for before/after.

    python docs/bench/cpu-2026-12-02-s8/cuda_hash.py after.json    # this tree
    OLD_UNROLL=1 python docs/bench/cpu-2026-12-02-s8/cuda_hash.py before.json
    python -c "import json; a, b = (json.load(open(f)) for f in ('before.json', 'after.json')); print([k for k in a if a[k] != b[k]])"

OLD_UNROLL=1 turns off mark-unroll's cap on nested unrolling (session 8), the one change
of this session meant to change generated code; on the session's first commit the script
runs without it. Session 8: the 91 cases' CUDA identical (an empty list).
"""
import hashlib, json, sys, warnings
warnings.filterwarnings("ignore")
import os
if os.environ.get("OLD_UNROLL"):
    import deplodock.passes.tile.mark_unroll as mu
    mu.enclosing_copies = lambda op, kernel: 1
from deplodock.bench.cases import all_cases
from deplodock.frontends.export import import_program
from deplodock.pipeline import lower
from deplodock.backends.cuda.emit import emit_cuda
out = {}
for case in all_cases():
    if case.group == "model":
        continue
    captured = case.build()
    module = import_program(captured.program).module
    lower(module, to="kernel")
    src = emit_cuda(module)
    out[case.name] = hashlib.sha1(src.encode()).hexdigest()
    print(case.name, out[case.name], flush=True, file=sys.stderr)
json.dump(out, open(sys.argv[1], "w"), indent=1)
