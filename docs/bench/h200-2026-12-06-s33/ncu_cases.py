"""Session 33: run the shapes group's cases named on the command line, deplodock's program
and eager's twice each, for Nsight Compute (``call1.sh``) to show what bounds the copy-rate
misses of issue 19 (softmax/odd, bmm/small, mm/tiny-k, mm/tall-skinny).

    ncu -c 12 --section SpeedOfLight ... python3 ncu_cases.py softmax/odd
"""

import sys
import warnings

import torch

warnings.filterwarnings("ignore")

from deplodock.bench import strict_fp32  # noqa: E402
from deplodock.bench.cases import shapes_cases  # noqa: E402
from deplodock.frontends.export import import_program  # noqa: E402
from deplodock.pipeline import compile_program  # noqa: E402
from deplodock.reference import fresh_inputs  # noqa: E402

strict_fp32()
cases = {c.name.removeprefix("shapes/"): c for c in shapes_cases()}
for name in sys.argv[1:]:
    captured = cases[name].build()
    program = compile_program(import_program(captured.program).module, arch="sm_90")
    inputs, _, reference = fresh_inputs(captured, program.func, 0)
    for _ in range(2):
        program(*inputs, poison=False)
        reference()
    torch.cuda.synchronize()
    print(
        name, [(k.sym_name.data, list(k.grid_shape), list(k.block_shape)) for k in program.kernels]
    )
