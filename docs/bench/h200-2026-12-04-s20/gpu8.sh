# Session 20, call 8: decode attention with its walk chunked by the bytes a step reads (chunks_for step_bytes)
# (call 7: by steps, KV 4096 one block a row), kernel by kernel.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 150 deplodock bench --filter 'attention-shapes/decode/*' --kernels --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/decode 2>&1 | grep -v "^deplodock from" | tail -4
