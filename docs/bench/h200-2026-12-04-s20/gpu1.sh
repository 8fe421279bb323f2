# Session 20, call 1: Hugging Face's layer mask recognised (fold-integers + skip-masked-chunks
# through conjunctions) and the walk's value rows staged (stage_k_chunks._mixed_split):
# the decoder layers kernel by kernel, the attention group (no regression), whole TinyLlama S128.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 240 deplodock bench --filter block --kernels --budget 0.3 --rounds 5 --out $OUT/layers 2>&1 | grep -v "^deplodock from" | tail -8
timeout 120 deplodock bench --filter attention --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/attention 2>&1 | grep -v "^deplodock from" | tail -4
timeout 220 deplodock bench --filter model --kernels --budget 1 --rounds 5 --no-copy --no-gemm --out $OUT/model 2>&1 | grep -v "^deplodock from" | tail -5
