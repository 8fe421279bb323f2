# Session 22, call 1: the jam planned (head dims 128-512, rows enough for 8 thread-rows an
# SM) with spilling kernels compiled again asking for one block an SM (kernel.kernel's
# resident) before any split: the walks' GPU tests, attention-shapes, the attention group
# and the decoder layers against eager and torch.compile.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
timeout -s KILL 110 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:logging -rA -W ignore test/test_softmax_sum.py test/test_compile_fitting.py > $OUT/gpu_tests.log 2>&1; tail -2 $OUT/gpu_tests.log
cd /tmp
B="--budget 0.3 --rounds 5 --no-copy --no-gemm"
timeout 170 deplodock bench --filter attention-shapes --kernels $B --out $OUT/attention-shapes 2>&1 | grep -v "^deplodock from" | tail -3
timeout 80 deplodock bench --filter 'attention/*' --kernels $B --out $OUT/attention 2>&1 | grep -v "^deplodock from" | tail -3
timeout 190 deplodock bench --filter block --kernels $B --out $OUT/layers 2>&1 | grep -v "^deplodock from" | tail -6
python3 - <<'PY'
import json, os
for group in ("attention-shapes", "attention", "layers"):
    path = os.path.join(os.environ["OUT"], group, "results.json")
    if not os.path.exists(path):
        print(group, "missing"); continue
    for c in json.load(open(path))["cases"]:
        s = c.get("summary", {})
        med = {k: round(v["median_us"], 1) for k, v in s.items()}
        walk = [(k["name"], k["grid"][0], k["block"][0], k["registers"], k["spill_stores"])
                for k in c.get("kernels", []) if "scaled" in k["name"]]
        prof = [(p["name"], round(p["us"], 1)) for p in c.get("profiles", {}).get("deplodock", []) if "scaled" in p["name"]]
        print(c["name"], c["status"], f"err {c.get('max_rel_err', 0):.1e}", med, walk, prof)
PY
