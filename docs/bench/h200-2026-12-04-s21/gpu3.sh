# Session 21, call 3 (commit 500a9ad): the attention-shapes group kernel by kernel, the
# suite's attention group (its CUDA unchanged: a check of the run), and the variants
# around the new defaults of head dim 1024 and S=1000.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 260 deplodock bench --filter attention-shapes --kernels --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/attention-shapes 2>&1 | grep -v "^deplodock from" | tail -9
CALL=3 timeout 200 python3 $R/docs/bench/h200-2026-12-04-s21/attention.py d1024_S512 d64_S1000 2>&1 | grep -v "^deplodock from" | tee $OUT/variants.log
