"""Row reductions of several passes on the H200: the online softmax against the two-pass
form it replaces, each beside eager and torch.compile in one run.

    python3 docs/bench/h200-2026-12-02-s12/rows.py [CASE ...]      # default: all

Each case is lowered three ways through the passes' own options (never by patching a
planner): ``online`` (the default pipeline), ``two-pass`` (``online-softmax{min_row}``
above the row: the max and exp-sum loops kept apart, the code before session 12) and
``online-t128`` (``cooperative-reduce{threads=128}`` on top: a smaller group a row).
Each is checked against eager and timed beside eager and
torch.compile in one run by ``deplodock.bench.variants`` (session 13; the run log,
``rows-run1.txt``, came from this script before, whose % of copy was against a copy it
timed itself, 2.77 TB/s, not the bench's 4.25 TB/s).
"""

import sys
import warnings

import torch

warnings.filterwarnings("ignore")

F = torch.nn.functional
CASES = {  # name: (function, input makers)
    "softmax_seed": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(1, 28, 2048, 2048)]),
    "softmax_odd": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(4096, 50257)]),
    "softmax_short_rows": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8192, 16, 1000)]),
    "softmax_few_long": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8, 2**22)]),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), [lambda: torch.randn(16384, 8191)]),
    "logsumexp": (lambda x: torch.logsumexp(x, -1), [lambda: torch.randn(16384, 8191)]),
    "cross_entropy": (
        lambda x, t: F.cross_entropy(x, t),
        [lambda: torch.randn(8192, 32001), lambda: torch.randint(0, 32001, (8192,))],
    ),
}


def variants(name: str):
    del name  # the same three for every case
    from deplodock.passes.loop.online_softmax import OnlineSoftmax
    from deplodock.passes.tile.cooperative_reduce import CooperativeReduce

    return {
        "online": {},
        "two-pass": {"online-softmax": OnlineSoftmax(min_row=2**40)},
        "online-t128": {"cooperative-reduce": CooperativeReduce(threads=128)},
    }


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    compare(CASES, variants, sys.argv[1:])
