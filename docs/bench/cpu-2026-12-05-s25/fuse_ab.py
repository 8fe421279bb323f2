"""Fusion's cleanup before (a round after any change) and after (a round only after a
merge or a drop), paired in one process on one tensor-level module, four times each:
the CPU time of cleanup and of the fuse pass, and whether the loop IR is the same.

    deplodock compile tinyllama --layers 4 --seq 128 --ir tensor -q -o /tmp/t4.mlir
    python fuse_ab.py /tmp/t4.mlir
"""

import gc
import sys
import time

from xdsl.parser import Parser

import deplodock.passes.loop.fuse as F
from deplodock.pipeline import lower, make_context

text = open(sys.argv[1]).read()
ctx = make_context()
new = F.cleanup


def old(kernel):
    inputs = set(kernel.input_buffers)
    F.fold_applies(kernel)
    while True:
        changed = F.hoist_invariants(kernel, inputs)
        changed |= F.deduplicate(kernel)
        changed |= F.drop_dead(kernel)
        if not changed:
            break
    F.rename_ivs(kernel)


T = {"old": [], "new": []}
C = {}
CS = {"old": [], "new": []}
orig_apply = F.Fuse.apply


def timed(self, ctx, op):
    t = time.process_time()
    orig_apply(self, ctx, op)
    T[cur].append(time.process_time() - t)


F.Fuse.apply = timed
outs = {}
for rep in range(4):
    for cur, fn in (("old", old), ("new", new)):

        def wrapped(k, fn=fn):
            t = time.process_time()
            fn(k)
            C[cur] += time.process_time() - t

        F.cleanup = wrapped
        C[cur] = C.get(cur, 0)
        m = Parser(ctx, text).parse_module()
        gc.collect()
        lower(m, to="loop")
        outs[cur] = str(m)
        CS[cur].append(C[cur])
        C[cur] = 0
print("cleanup", {k: [round(x, 2) for x in v] for k, v in CS.items()})
print(
    {k: [round(x, 2) for x in v] for k, v in T.items()},
    "identical loop IR:",
    outs["old"] == outs["new"],
)
