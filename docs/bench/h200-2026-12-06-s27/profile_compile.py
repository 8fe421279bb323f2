"""Where a whole model's deplodock.compile spends its time, cold and warm (issue 21):
each in a fresh process (as a user's first call), under cProfile, the top of the
cumulative table printed (frames of torch, transformers, deplodock and the driver).

    python3 docs/bench/h200-2026-12-06-s27/profile_compile.py MODEL
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile


def child(model_name: str) -> None:
    import cProfile
    import io
    import pstats
    import time

    import torch

    from deplodock.frontends.models import CausalLMLogits, build_model

    lm = build_model(model_name, device="meta").to_empty(device="cuda")
    model = CausalLMLogits(lm).eval()
    ids = torch.randint(0, lm.config.vocab_size, (1, 128), device="cuda")
    torch.cuda.synchronize()
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    import deplodock

    deplodock.compile(model, ids)
    profile.disable()
    print(f"RESULT compile {time.perf_counter() - started:.2f} s (under cProfile)")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(70)
    keep = [line for line in out.getvalue().splitlines() if "{" not in line or "built-in" in line]
    print("\n".join(keep[:110]))


def main() -> None:
    model_name = sys.argv[1]
    if len(sys.argv) > 2:
        child(model_name)
        return
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "DEPLODOCK_CACHE_DIR": cache}
        for attempt in ("cold", "warm"):
            done = subprocess.run(
                [sys.executable, __file__, model_name, "child"], env=env, capture_output=True, text=True
            )
            print(f"===== {model_name} {attempt}\n{done.stdout}\n{done.stderr[-2000:]}", flush=True)


if __name__ == "__main__":
    main()
