"""Session 32: what does cuBLAS's kernel have over ours on TinyLlama's gate at S=512
(x[512, 2048] @ w[5632, 2048].T: ours 306 us with the planner's 64 x 128 tile in 128
threads, cuBLAS 247 with its 128 x 128 tile in 128 threads)? Runs deplodock's kernel and
eager's twice each, for Nsight Compute (``call6.sh``) to compare pipes, stalls, shared
memory wavefronts and the instruction mix.

    ncu --clock-control none -k regex:'k_linear|gemm' -c 2 --section ... \\
        python3 docs/bench/h200-2026-12-06-s32/ncu_gemm.py
"""

import warnings

import torch

warnings.filterwarnings("ignore")

from deplodock.bench import strict_fp32  # noqa: E402
from deplodock.bench.variants import _Fn, build  # noqa: E402

strict_fp32()
x = torch.randn(1, 512, 2048, device="cuda")
w = torch.randn(5632, 2048, device="cuda") / 2048**0.5
program = build(_Fn(torch.nn.functional.linear), [x, w], {})
for _ in range(2):
    program(x, w)
    torch.nn.functional.linear(x, w)
torch.cuda.synchronize()
print([(k.sym_name.data, k.grid_shape[0], k.block_shape[0]) for k in program.kernels])
