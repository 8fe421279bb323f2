"""How long a whole model takes to compile, cold and warm, through each entry point, beside
torch.compile's first call on the same model (issue 21; session 16's, and with
``DEPLODOCK_STATS=1`` in the environment each deplodock child's stage table printed too).

    python3 docs/bench/h200-2026-12-03-s16/first_call.py MODEL [WHAT ...]

WHAT: ``inductor`` (torch.compile's first call: a fresh Inductor cache, then again in a
new process with that cache warm), ``api`` (``deplodock.compile(model, ids)``, cold then
warm from the program cache), ``backend`` (``torch.compile(model, backend="deplodock")``,
cold then warm). Each measurement runs in a process of its own; the model is built on the
GPU with random weights (its values do not change what is compiled), seq 128, fp32.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time


def child(model_name: str, what: str) -> None:
    import torch

    from deplodock.frontends.models import CausalLMLogits, build_model

    torch.backends.cuda.matmul.allow_tf32 = False
    lm = build_model(model_name, device="meta").to_empty(device="cuda")
    with torch.no_grad():
        for p in lm.parameters():
            p.normal_(0, 0.02)
    model = CausalLMLogits(lm).eval()
    ids = torch.randint(0, lm.config.vocab_size, (1, 128), device="cuda")
    started = time.perf_counter()
    if what == "inductor":
        fn = torch.compile(model)
    elif what == "backend":
        fn = torch.compile(model, backend="deplodock")
    else:
        import deplodock

        fn = deplodock.compile(model, ids)
    compiled = time.perf_counter() - started
    with torch.no_grad():
        fn(ids)
    torch.cuda.synchronize()
    first = time.perf_counter() - started
    print(f"RESULT {what}: compile {compiled:.2f} s, first call done at {first:.2f} s")


def main() -> None:
    model_name, *whats = sys.argv[1:]
    if whats and whats[0] == "child":
        child(model_name, whats[1])
        return
    for what in whats or ["inductor", "api", "backend"]:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "DEPLODOCK_CACHE_DIR": cache}
            for attempt in ("cold", "warm"):
                done = subprocess.run(
                    [sys.executable, __file__, model_name, "child", what],
                    env=env,
                    capture_output=True,
                    text=True,
                )
                lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
                tail = done.stderr.strip().splitlines()[-3:] if done.returncode else []
                print(f"{model_name} {attempt}: {lines[0][7:] if lines else tail}", flush=True)
                err = done.stderr.splitlines()
                tables = [k for k, line in enumerate(err) if line.startswith("deplodock stats")]
                for k in tables:
                    end = next((j for j in range(k + 1, len(err)) if "total" in err[j]), k)
                    print("\n".join("    " + line for line in err[k : end + 1]), flush=True)


if __name__ == "__main__":
    main()
