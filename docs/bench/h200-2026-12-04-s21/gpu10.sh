# Session 21, call 10 (the jam as planned): the GPU tests of the walks; attention-shapes,
# the attention group and the decoder layers against eager and torch.compile.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
timeout -s KILL 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:logging -rA -W ignore test/test_softmax_sum.py > $OUT/gpu_tests.log 2>&1; tail -2 $OUT/gpu_tests.log
cd /tmp
timeout 200 deplodock bench --filter attention-shapes --kernels --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/attention-shapes 2>&1 | grep -v "^deplodock from" | tail -3
timeout 100 deplodock bench --filter 'attention/*' --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/attention 2>&1 | grep -v "^deplodock from" | tail -3
timeout 200 deplodock bench --filter block --kernels --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/layers 2>&1 | grep -v "^deplodock from" | tail -6
