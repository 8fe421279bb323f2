"""``deplodock.compile``'s first call of TinyLlama and Qwen2.5-7B (seq 128), cold then warm,
for each of several installed deplodock builds on the same host, interleaved, so a
change's effect is measured beside the build before it (hosts differ 1.3-1.7x).

    python3 first_calls.py LABEL SITE [LABEL SITE ...]

SITE: a directory on PYTHONPATH holding that build (pip --target). Each measurement is
session 16's ``first_call.py`` child in a fresh process and a fresh cache directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

FIRST_CALL = Path(__file__).resolve().parents[1] / "h200-2026-12-03-s16" / "first_call.py"


def main() -> None:
    builds = list(zip(sys.argv[1::2], sys.argv[2::2], strict=True))
    for model in ("tinyllama-1.1b", "qwen2.5-7b"):
        for label, site in builds:
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "PYTHONPATH": site, "DEPLODOCK_CACHE_DIR": cache}
                for attempt in ("cold", "warm"):
                    done = subprocess.run(
                        [sys.executable, str(FIRST_CALL), model, "child", "api"],
                        env=env, capture_output=True, text=True, timeout=100,
                    )
                    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT")]
                    got = line[0][7:] if line else done.stderr[-400:]
                    print(f"{model} {label} {attempt}: {got}", flush=True)


if __name__ == "__main__":
    main()
