# Session 20, call 9: decode with its walk chunked by bytes and its partials merged a lane a partial (not vectorised)
# (call 8: the same chunks, the merge one block of one thread a row), kernel by kernel.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 150 deplodock bench --filter 'attention-shapes/decode/*' --kernels --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/decode 2>&1 | grep -v "^deplodock from" | tail -4
