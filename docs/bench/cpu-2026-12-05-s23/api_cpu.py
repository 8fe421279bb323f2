"""deplodock.compile(model, ids) of a whole model on the CPU machine (compiles, no call).

DEPLODOCK_STATS=1 python api_cpu.py tinyllama-1.1b|qwen2.5-7b
"""

import sys
import time

import torch

from deplodock.frontends.models import CausalLMLogits, build_model

lm = build_model(sys.argv[1], device="meta").to_empty(device="cpu")
model = CausalLMLogits(lm).eval()
ids = torch.randint(0, lm.config.vocab_size, (1, 128))
started = time.perf_counter()
import deplodock  # noqa: E402 (timed: deplodock.compile's import is part of a first compile)

fn = deplodock.compile(model, ids)
seconds = time.perf_counter() - started
print(f"RESULT api {sys.argv[1]}: compile {seconds:.2f} s (hit: {fn.exported is None})")
