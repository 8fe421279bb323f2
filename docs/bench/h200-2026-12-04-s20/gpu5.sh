# Session 20, call 5: decode attention kernel by kernel (which of its three kernels is far
# from the roofline), and the whole models (TinyLlama and Qwen2.5-7B at S=128) against
# eager and torch.compile.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 100 deplodock bench --filter 'attention-shapes/decode/*' --kernels --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/decode 2>&1 | grep -v "^deplodock from" | tail -4
timeout 440 deplodock bench --filter model --kernels --budget 1 --rounds 5 --no-copy --no-gemm --out $OUT/model 2>&1 | grep -v "^deplodock from" | tail -6
