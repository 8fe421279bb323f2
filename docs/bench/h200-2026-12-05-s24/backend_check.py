"""Whole TinyLlama (22 layers, seq 128, fp32, random weights on the GPU) through
``torch.compile(model, backend="deplodock")``: the backend cuts dynamo's graph to four
layers, lowers them and restacks the stack (session 24); its logits against eager.
Run with ``DEPLODOCK_STATS=1`` for the backend's stage table.

    python3 docs/bench/h200-2026-12-05-s24/backend_check.py [MODEL]
"""

import sys
import time
import warnings

import torch

from deplodock.frontends.models import CausalLMLogits, build_model
from deplodock.torch_backend import DeplodockFallbackWarning

name = sys.argv[1] if len(sys.argv) > 1 else "tinyllama-1.1b"
torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
lm = build_model(name, device="meta").to_empty(device="cuda")
with torch.no_grad():
    for p in lm.parameters():
        p.normal_(0, 0.02)
model = CausalLMLogits(lm).eval()
ids = torch.randint(0, lm.config.vocab_size, (1, 128), device="cuda")
started = time.perf_counter()
with warnings.catch_warnings(record=True) as caught, torch.no_grad():
    warnings.simplefilter("always")
    got = torch.compile(model, backend="deplodock")(ids)
    torch.cuda.synchronize()
first = time.perf_counter() - started
fallbacks = [str(w.message) for w in caught if issubclass(w.category, DeplodockFallbackWarning)]
with torch.no_grad():
    want = model(ids)
err = (got - want).abs().max().item() / want.abs().max().item()
verdict = "OK" if err <= 1e-4 and not fallbacks else "MISMATCH"
print(f"{name} backend: first call {first:.2f} s, fallbacks {fallbacks}, "
      f"max abs err / max |logit| {err:.2e}: {verdict}")
