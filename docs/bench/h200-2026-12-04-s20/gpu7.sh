# Session 20, call 7: decode attention with its scores kernel read 8 lanes a key (16 floats a lane)
# (cooperation_threads: short contraction rows, many outputs; call 6 had a warp a key), kernel by kernel.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 150 deplodock bench --filter 'attention-shapes/decode/*' --kernels --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/decode 2>&1 | grep -v "^deplodock from" | tail -4
