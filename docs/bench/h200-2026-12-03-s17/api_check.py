"""Session 17, call 3: ``deplodock.compile`` of transformers decoder stacks deep enough to
be restacked (6 layers of a small Llama and of a small Qwen2 with its attention scores
kept apart), run on the GPU against eager; each compile says whether it was restacked."""

from __future__ import annotations

import torch
import transformers

import deplodock
from deplodock import restack as restack_module
from deplodock.frontends.models import CausalLMLogits

restacked = []
_real = restack_module.restack
restack_module.restack = lambda *a: restacked.append(a[2]) or _real(*a)


def model(family: str):
    small = {
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 128,
        "vocab_size": 1000,
        "max_position_embeddings": 512,
        "num_hidden_layers": 6,
    }
    if family == "llama":
        config = transformers.LlamaConfig(**small, rms_norm_eps=1e-5)
        lm = transformers.LlamaForCausalLM(config)
    else:
        config = transformers.Qwen2Config(**small, rms_norm_eps=1e-6)
        lm = transformers.Qwen2ForCausalLM(config)
    return CausalLMLogits(lm.eval().cuda())


torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
for family in ("llama", "qwen2"):
    for seq in (32, 128):
        m = model(family)
        ids = torch.randint(0, 1000, (1, seq), device="cuda")
        restacked.clear()
        fn = deplodock.compile(m, ids, cache=False)
        with torch.no_grad():
            want = m(ids)
            got = fn(ids)
        rel = ((got - want).abs().max() / want.abs().max()).item()
        verdict = "OK" if rel < 1e-4 else "MISMATCH"
        print(
            f"{family} seq {seq}: restacked to {restacked}, {len(fn.program.kernel_names)} "
            f"kernels, max rel err {rel:.2e} {verdict}",
            flush=True,
        )
