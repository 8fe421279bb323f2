"""Session 33: variants for the shapes group's copy-rate misses (issue 19), beside eager
and torch.compile in one run (``deplodock.bench.variants``):

* rows of 128 and 196 KB (softmax 4096 x 32768, ``shapes/softmax/odd`` 4096 x 50257) staged
  with one block an SM (``stage-inputs{large_blocks=1}``: the whole row copied by
  ``cp.async``, every copy in flight), with the online loop or the two-pass one over the
  staged row (``online-softmax{min_row=...}``);
* ``shapes/bmm/small``: each product's slabs filled through registers (every load issued
  before the first store: ``stage_fills.holds_fill``), against the strided fill loop
  (``materialize{held_fill_elements=0}``);
* ``shapes/mm/tiny-k`` (bound by its 268 MB of output stores) with smaller thread tiles, so
  more blocks an SM overlap one's compute with another's stores.

    python3 docs/bench/h200-2026-12-06-s33/copyrate.py [CASE ...]
"""

import sys
import warnings

import torch

warnings.filterwarnings("ignore")


def _softmax(m: int, n: int):
    return (lambda x: torch.softmax(x, -1)), [lambda: torch.randn(m, n)]


CASES = {
    "softmax_odd_4096x50257": _softmax(4096, 50257),
    "softmax_4096x32768": _softmax(4096, 32768),
    "softmax_8192x28000": _softmax(8192, 28000),
    "logsoftmax_odd_4096x50257": (
        lambda x: torch.log_softmax(x, -1),
        [lambda: torch.randn(4096, 50257)],
    ),
    "bmm_small": (
        torch.bmm,
        [lambda: torch.randn(8192, 32, 33), lambda: torch.randn(8192, 33, 31)],
    ),
    "mm_tiny_k": (torch.mm, [lambda: torch.randn(8192, 16), lambda: torch.randn(16, 8192)]),
}


HELD_FILL_CASES = (
    "rmsnorm/large/4096x4096",
    "attention/tinyllama/S32",
    "shapes/layernorm/odd",
    "shapes/rmsnorm/odd",
)
"""The other bench cases whose CUDA the held fill changes (cuda_hash.py before and after)."""


def _bench_case(name: str):
    """A bench case as ``(module, input makers)`` (its captured module and inputs)."""
    from deplodock.bench.cases import all_cases

    (case,) = [c for c in all_cases() if c.name == name]
    captured = case.build()
    return captured.module, [lambda t=t: t for t in captured.example_inputs]


def variants(name: str):
    from deplodock.passes.kernel.materialize import Materialize
    from deplodock.passes.loop.online_softmax import OnlineSoftmax
    from deplodock.passes.tile.register_tile import RegisterTile
    from deplodock.passes.tile.stage_inputs import StageInputs

    out = {"default": {}}
    if "softmax" in name:
        one = StageInputs(large_blocks=1)
        out["staged1"] = {"stage-inputs": one}
        out["staged1_twopass"] = {"stage-inputs": one, "online-softmax": OnlineSoftmax(10**9)}
        out["twopass"] = {"online-softmax": OnlineSoftmax(10**9)}
    if name == "bmm_small" or name in HELD_FILL_CASES:
        out["held"] = {"materialize": Materialize(held_fill_elements=32)}
        out["strided"] = {"materialize": Materialize(held_fill_elements=0)}
    if name == "mm_tiny_k":
        for tm, tn, th_m, th_n in ((4, 8, 16, 8), (8, 4, 16, 16), (4, 4, 16, 16), (8, 8, 8, 8)):
            rt = RegisterTile(tm=tm, tn=tn, threads_m=th_m, threads_n=th_n)
            out[f"t{tm}x{tn}_{th_m}x{th_n}"] = {"register-tile": rt}
    return out


if __name__ == "__main__":
    from deplodock.bench.variants import compare

    names = sys.argv[1:] or [*CASES, *HELD_FILL_CASES]
    CASES.update({n: _bench_case(n) for n in HELD_FILL_CASES if n in names})
    compare(CASES, variants, names)
