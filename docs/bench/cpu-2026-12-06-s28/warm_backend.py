"""torch.compile(model, backend="deplodock") of whole TinyLlama (seq 128) on the CPU machine
in a fresh process: the first call's time, the backend's own part and whether it hit,
and how many xDSL modules the call loaded. The GPU check is stubbed (NVRTC needs no GPU).

    python warm_backend.py CACHE_DIR   # the first run fills CACHE_DIR; run it again
"""

import os
import sys
import time

import torch

os.environ["DEPLODOCK_CACHE_DIR"] = sys.argv[1]
import deplodock.torch_backend as tb  # noqa: E402
from deplodock.frontends.models import CausalLMLogits, build_model  # noqa: E402

tb._runs_here = lambda inputs: None
lm = build_model("tinyllama-1.1b", device="meta").to_empty(device="cpu")
model = CausalLMLogits(lm).eval()
ids = torch.randint(0, lm.config.vocab_size, (1, 128))
before = set(sys.modules)
stamp = {}


def backend(gm, example_inputs):
    started = time.perf_counter()
    run = tb.deplodock_backend(gm, example_inputs)
    stamp["own"] = time.perf_counter() - started
    stamp["hit"] = run.deplodock.exported is None
    return gm.forward


started = time.perf_counter()
with torch.no_grad():
    torch.compile(model, backend=backend)(ids)
first = time.perf_counter() - started
xdsl = sum(m.split(".")[0] == "xdsl" for m in set(sys.modules) - before)
own, hit = stamp["own"], stamp["hit"]
print(f"first call {first:.2f} s, own {own:.2f} s, hit {hit}, xdsl modules {xdsl}")
