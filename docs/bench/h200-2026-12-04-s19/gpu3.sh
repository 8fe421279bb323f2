# Session 19, call 3: the decoder layers with only the output projection's
# head-major operand staged (the value rows left as before: the mixed split made Qwen's walk spill), kernel by kernel.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 300 deplodock bench --filter block --kernels --budget 0.3 --rounds 5 --out $OUT/layers 2>&1 | grep -v "^deplodock from" | tail -8
