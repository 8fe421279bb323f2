# Session 18, call 3: split-walk-columns deals the head dim out to lanes four elements
# at a time round the lanes (no bank conflicts between a row's lanes); the batched walk's
# variants again, with decode and a long sequence.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
LANES=2,4 timeout 200 python3 $R/docs/bench/h200-2026-12-03-s18/attention.py tinyllama_S512 tinyllama_S128 2>&1 | grep -v "^deplodock from" | tee $OUT/variants_tinyllama.log
LANES=4,8 timeout 200 python3 $R/docs/bench/h200-2026-12-03-s18/attention.py qwen_S512 qwen_S128 2>&1 | grep -v "^deplodock from" | tee $OUT/variants_qwen.log
LANES=2 BLOCKS=64,128 timeout 150 python3 $R/docs/bench/h200-2026-12-03-s18/attention.py d64_S4096 decode_kv32768 2>&1 | grep -v "^deplodock from" | tee $OUT/variants_long.log
