"""Programs of the Core ATen op set on the GPU (issue 16): blocks users write, in fp32 and
16-bit floats, compiled with ``deplodock.compile`` and compared with eager PyTorch on the
same GPU, on fresh random inputs with the outputs poisoned first (NaN: an element no
kernel wrote shows).

A plain script for the machine with the H200 (pytest does not collect it)::

    python3 test/gpu/core_aten_check.py [--only mlp,attention,layer-bf16]

- ``mlp``: Linear → LayerNorm → GELU → Dropout (eval) → Linear → LayerNorm → GELU →
  Dropout → Linear, fp32;
- ``attention``: a fused qkv projection split with ``chunk`` before causal SDPA, heads
  by ``view``/``transpose``, an output projection, fp32;
- ``mlp-bf16``, ``attention-fp16``: the same blocks in 16-bit floats;
- ``layer-bf16``: TinyLlama's first decoder layer (the real transformers class, random
  weights) in bf16 against eager bf16.

Each line: the case, the kernels, max abs and relative error (relative to the largest
reference magnitude) and the tolerance; every kernel's NVRTC report is checked for
spills. Exit 1 on a mismatch or a spill, 2 without a GPU (after compiling).
"""

from __future__ import annotations

import argparse
import sys
import traceback

import torch

import deplodock


def mlp(dtype: torch.dtype) -> tuple[torch.nn.Module, tuple]:
    d, h = 384, 1024
    layers = []
    for i in range(2):
        layers += [
            torch.nn.Linear(d if i == 0 else h, h),
            torch.nn.LayerNorm(h),
            torch.nn.GELU(),
            torch.nn.Dropout(0.1),
        ]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(h, d)).eval()
    return model.to(dtype), (torch.randn(2, 37, d, dtype=dtype),)


class FusedQkvAttention(torch.nn.Module):
    def __init__(self, d: int = 256, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, d))


def attention(dtype: torch.dtype) -> tuple[torch.nn.Module, tuple]:
    return FusedQkvAttention().eval().to(dtype), (torch.randn(2, 67, 256, dtype=dtype),)


def tinyllama_layer(dtype: torch.dtype) -> tuple[torch.nn.Module, tuple]:
    from deplodock.frontends.models import model_program

    built = model_program("tinyllama", seq=128, part="layer")
    module = built.module.to(dtype)
    inputs = tuple(t.to(dtype) if t.is_floating_point() else t for t in built.example_inputs)
    return module, inputs


CASES = {
    "mlp": (mlp, torch.float32, 1e-4),
    "attention": (attention, torch.float32, 1e-4),
    "mlp-bf16": (mlp, torch.bfloat16, 3e-2),
    "attention-fp16": (attention, torch.float16, 1e-2),
    "layer-bf16": (tinyllama_layer, torch.bfloat16, 3e-2),
}


def check(name: str, gpu: bool) -> bool:
    build, dtype, rtol = CASES[name]
    torch.manual_seed(0)
    model, inputs = build(dtype)
    if gpu:
        model = model.cuda()
        inputs = tuple(t.cuda() for t in inputs)
    fast = deplodock.compile(model, *inputs, poison=True)
    spills = [n for n, r in fast.program.resources.items() if r.spills]
    kernels = len(fast.program.kernel_names)
    if not gpu:
        print(
            f"{name:16s} {kernels:3d} kernels compiled (no GPU to run on)"
            + (f"; SPILLS: {spills}" if spills else "")
        )
        return not spills
    ok = not spills
    for trial in range(2):  # fresh inputs each time: the same function on any input
        fresh = tuple(torch.randn_like(t) if t.is_floating_point() else t for t in inputs)
        with torch.no_grad():
            want = model(*fresh)
        got = fast(*fresh)
        want = want[0] if isinstance(want, tuple) else want
        got = got[0] if isinstance(got, tuple) else got
        err = (got.float() - want.float()).abs().max().item()
        scale = want.float().abs().max().item()
        rel = err / scale if scale else err
        good = rel <= rtol and not torch.isnan(got).any().item()
        ok &= good
        print(
            f"{name:16s} {kernels:3d} kernels  trial {trial}: max abs {err:.3e}  rel {rel:.2e}"
            f"  (tol {rtol:.0e}) {'ok' if good else 'MISMATCH'}"
            + (f"  SPILLS: {spills}" if spills else "")
        )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(CASES))
    args = parser.parse_args()
    gpu = torch.cuda.is_available()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ok = True
    for name in args.only.split(","):
        try:
            ok &= check(name, gpu)
        except Exception:  # noqa: BLE001 - a script: report every case
            traceback.print_exc()
            print(f"{name:16s} ERROR")
            ok = False
    if not gpu:
        print("no GPU to run on: compiled only")
        return 2 if ok else 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
