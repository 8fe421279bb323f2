"""From PyTorch to the loop level, each level computes what PyTorch computes.

Every expression is captured, then interpreted after each pass (decompose; lift-to-loop;
fuse) on fresh random inputs and parameters, and compared with PyTorch eager on the CPU.
So decomposition, lifting and fusion are each checked for preserving meaning, on the
seed examples (at small shapes) and on chains that exercise prologues, epilogues,
broadcasts, transposes and reduction chains.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deplodock.dialects import make_context
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import graph_inputs, import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.reference import relative_error

EXPRESSIONS = [
    "torch.nn.RMSNorm(64)(torch.randn(1,8,64))",
    "torch.nn.Softmax(dim=-1)(torch.randn(1,3,16,16))",
    "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))",
    "torch.softmax(torch.randn(4,32) * 0.5 + torch.randn(32), dim=0)",
    "torch.matmul(torch.randn(8,16).t(), torch.randn(8,12)).relu() + 1.0",
    "torch.nn.RMSNorm(32)(torch.randn(2,3,32)) * torch.randn(2,3,32) - torch.randn(32)",
    "(torch.randn(6,10) - torch.randn(6,10).mean(dim=-1, keepdim=True)).pow(2).sum(dim=0)",
    "torch.randn(2,3,4).permute(2,0,1).reshape(4,6) * 2.0",
    "torch.randn(2,12).view(2,3,4).transpose(0,2).unsqueeze(0).sum(dim=-1).exp()",
    "torch.randn(5,1).expand(5,7) + torch.randn(7).contiguous()",
]

PASSES = ["decompose", "lift-to-loop", "fuse"]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_each_pass_preserves_meaning(expr: str) -> None:
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    module = imported.module
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for p in captured.module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    users = [torch.randn(t.shape, generator=gen) for t in captured.example_inputs]
    want = captured.module(*users).detach().numpy()
    user_iter = iter(users)
    args = []
    for spec in graph_inputs(imported.func):
        if spec.kind == "input":
            args.append(next(user_iter).numpy())
        else:
            args.append(captured.module.get_parameter(spec.target).detach().numpy())
    ctx = make_context()
    for name in PASSES:
        get_pass(name)().apply(ctx, module)
        module.verify()
        (got,) = run_forward(module, args)
        assert got.shape == want.shape
        assert not np.isnan(got).any(), f"unwritten elements after {name}"
        assert relative_error(got, want) <= 1e-5, f"{name} changed the result of {expr}"
