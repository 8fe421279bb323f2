"""Session 21: what bounds the attention walk? Builds a case of ``attention.py`` with the
default pipeline and runs it twice, for Nsight Compute to profile its walk kernel
(``gpu6.sh``: shared-memory wavefronts, pipe utilisation, warp stalls, the instruction
mix).

    ncu --clock-control none -k regex:k_scaled_dot_product_attention -c 1 \\
        --section SpeedOfLight ... python3 docs/bench/h200-2026-12-04-s21/ncu_walk.py CASE
"""

import os
import sys
import warnings

import torch

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from attention import CASES  # noqa: E402

from deplodock.bench import strict_fp32  # noqa: E402
from deplodock.bench.variants import _Fn, build  # noqa: E402

strict_fp32()
for name in sys.argv[1:]:
    fn, makers = CASES[name]
    module = _Fn(fn)
    inputs = [make().cuda() for make in makers]
    program = build(module, inputs, {})
    for _ in range(2):
        program(*inputs)
    torch.cuda.synchronize()
    print(name, [(k.sym_name.data, k.grid_shape[0], k.block_shape[0]) for k in program.kernels])
