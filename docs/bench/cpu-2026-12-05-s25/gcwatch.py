"""Python's garbage collections over 10 ms while a script runs (time, generation,
seconds, objects collected), printed at exit.

    python gcwatch.py SCRIPT ARGS...
"""

import gc
import runpy
import sys
import time

start = {}
log = []


def cb(phase, info):
    if phase == "start":
        start["t"] = time.perf_counter()
    else:
        d = time.perf_counter() - start["t"]
        if d > 0.01:
            log.append(
                (
                    round(time.perf_counter() - T0, 2),
                    info["generation"],
                    round(d, 3),
                    info["collected"],
                )
            )


T0 = time.perf_counter()
gc.callbacks.append(cb)
import atexit

atexit.register(
    lambda: print(
        "slow collections (t, gen, s, collected):",
        log,
        "total",
        round(sum(x[2] for x in log), 2),
        file=sys.stderr,
    )
)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
