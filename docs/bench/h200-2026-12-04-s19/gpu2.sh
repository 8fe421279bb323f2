# Session 19, call 2: the decoder layers again after staging the output projection's
# head-major operand and the grouped value rows (stage-inputs' mixed split), kernel by kernel.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 300 deplodock bench --filter block --kernels --budget 0.3 --rounds 5 --out $OUT/layers 2>&1 | grep -v "^deplodock from" | tail -8
timeout 200 deplodock bench --filter attention --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/attention 2>&1 | grep -v "^deplodock from" | tail -9
