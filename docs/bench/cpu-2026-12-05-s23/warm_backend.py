"""torch.compile(model, backend="deplodock") of whole TinyLlama on the CPU machine: cold,
then warm twice (dynamo reset between), timing the first call and the backend's own part.
No GPU: the backend's run check is stubbed so it compiles (NVRTC) and stores the program;
the graph then runs eagerly on the CPU (the backend returns gm.forward here).

    python warm_backend.py CACHE_DIR
"""

import os
import sys
import time

import torch

os.environ["DEPLODOCK_CACHE_DIR"] = sys.argv[1]
import deplodock.torch_backend as tb
from deplodock.frontends.models import CausalLMLogits, build_model

tb._runs_here = lambda inputs: None
import deplodock.api as api

lowered = []  # calls that lowered (a hit lowers nothing)
for name in ("compile_layers_once", "compile_exported"):
    def counted(*a, _real=getattr(api, name), **k):
        lowered.append(1)
        return _real(*a, **k)
    setattr(api, name, counted)
lm = build_model("tinyllama-1.1b", device="meta").to_empty(device="cpu")
model = CausalLMLogits(lm).eval()
ids = torch.randint(0, lm.config.vocab_size, (1, 128))
for attempt in ("cold", "warm", "warm"):
    torch._dynamo.reset()
    stamp = {}
    lowered.clear()

    def backend(gm, ex, stamp=stamp):
        t = time.perf_counter()
        run = tb.deplodock_backend(gm, ex)
        stamp["backend"] = time.perf_counter() - t
        stamp["hit"] = not lowered  # (exported is None too where only a cut was exported)
        return gm.forward

    t = time.perf_counter()
    with torch.no_grad():
        torch.compile(model, backend=backend)(ids)
    first = time.perf_counter() - t
    own = stamp["backend"]
    print(f"{attempt} first call {first:.2f} s, backend {own:.2f} s, hit {stamp['hit']}")
