# Session 18, call 2: the GPU tests of the fused attention (batched walks against eager),
# then the batched walk's variants (attention.py) at TinyLlama's and Qwen's shapes.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
# (the GPU tests ran in the first try of this call: 4 passed, gpu_tests.log)
cd /tmp
LANES=1,2,4 timeout 280 python3 $R/docs/bench/h200-2026-12-03-s18/attention.py tinyllama_S512 tinyllama_S128 2>&1 | tee $OUT/variants_tinyllama.log
LANES=2,4,8 timeout 250 python3 $R/docs/bench/h200-2026-12-03-s18/attention.py qwen_S512 qwen_S128 2>&1 | tee $OUT/variants_qwen.log
