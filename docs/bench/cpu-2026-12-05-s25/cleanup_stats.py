"""How often each of fusion's cleanup steps changed a kernel, round by round.

python cleanup_stats.py compile tinyllama --seq 128 --ir loop -o /tmp/t.mlir
"""

import atexit
import collections
import sys

import deplodock.passes.loop.fuse as F

C = collections.Counter()


def cleanup(kernel):
    inputs = set(kernel.input_buffers)
    F.fold_applies(kernel)
    rounds = []
    while True:
        h = F.hoist_invariants(kernel, inputs)
        d = F.deduplicate(kernel)
        x = F.drop_dead(kernel)
        rounds.append((h, d, x))
        if not (h or d or x):
            break
    C[tuple(rounds)] += 1
    F.rename_ivs(kernel)


F.cleanup = cleanup
atexit.register(lambda: [print(v, k, file=sys.stderr) for k, v in C.most_common(12)])
sys.argv = ["deplodock"] + sys.argv[1:]
from deplodock.cli import main

main()
