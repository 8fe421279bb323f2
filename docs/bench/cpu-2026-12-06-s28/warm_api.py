"""A warm deplodock.compile of whole TinyLlama (seq 128, built on meta, to_empty on the
CPU) in this process: its time, the garbage collections in it, and how many xDSL modules
and which deplodock modules it loaded (session 28: none of xDSL's).

    DEPLODOCK_CACHE_DIR=DIR python warm_api.py   # run twice: the first fills DIR
"""

import gc
import sys
import time

import torch

from deplodock.frontends.models import CausalLMLogits, build_model

lm = build_model("tinyllama-1.1b", device="meta").to_empty(device="cpu")
model = CausalLMLogits(lm).eval()
ids = torch.randint(0, lm.config.vocab_size, (1, 128))
collections = []


def timed(phase, info, started=[0.0]):  # noqa: B006 (the start of the running collection)
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        collections.append((info["generation"], time.perf_counter() - started[0]))


gc.callbacks.append(timed)
before = set(sys.modules)
import deplodock  # noqa: E402

started = time.perf_counter()
deplodock.compile(model, ids, arch="sm_90")
print(f"RESULT {time.perf_counter() - started:.3f} s", end=" ")
print(f"gc {sum(t for _, t in collections):.3f} s in {len(collections)} collections", end=" ")
loaded = set(sys.modules) - before
print(f"xdsl modules {sum(m.split('.')[0] == 'xdsl' for m in loaded)}")
print("deplodock modules:", " ".join(sorted(m for m in loaded if m.startswith("deplodock"))))
