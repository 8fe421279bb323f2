"""Whole TinyLlama (22 layers, seq 128) through the torch.compile backend on the 2-core CPU
machine, cold: the backend cuts dynamo's graph to four layers, lowers and restacks it
(session 24); its CUDA is compared byte for byte with lowering every layer of the same
exported program. No GPU: the backend's run check is stubbed, so it compiles (NVRTC) and
the graph then runs eagerly.

    DEPLODOCK_STATS=1 python docs/bench/cpu-2026-12-05-s24/backend_restack.py CACHE_DIR
"""

import os
import sys
import time

import torch

os.environ["DEPLODOCK_CACHE_DIR"] = sys.argv[1]
import deplodock.torch_backend as tb
from deplodock.api import compile_exported
from deplodock.frontends.models import CausalLMLogits, build_model

tb._runs_here = lambda inputs: None
lm = build_model("tinyllama-1.1b", device="meta").to_empty(device="cpu")
model = CausalLMLogits(lm).eval()
ids = torch.randint(0, lm.config.vocab_size, (1, 128))
seen = {}


def backend(gm, example_inputs):
    started = time.perf_counter()
    seen["run"] = tb.deplodock_backend(gm, example_inputs)
    seen["seconds"] = time.perf_counter() - started
    return gm.forward


torch._dynamo.reset()
with torch.no_grad():
    torch.compile(model, backend=backend)(ids)
compiled = seen["run"].deplodock
print(f"backend, cold: {seen['seconds']:.2f} s, {len(compiled.program.kernel_names)} kernels")
started = time.perf_counter()
whole = compile_exported(compiled.exported, cache=False)
print(f"every layer lowered: {time.perf_counter() - started:.2f} s")
open("/tmp/br_restacked.cu", "w").write(compiled.program.source)
open("/tmp/br_whole.cu", "w").write(whole.source)
same = compiled.program.source == whole.source
print(f"CUDA byte-identical: {same}; kernels alike: {compiled.program.kernel_names == whole.kernel_names}")
