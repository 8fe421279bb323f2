# Session 21, call 7: TinyLlama's and Qwen's causal S=512 attention around the defaults
# (every block resident at once: split by keys, smaller blocks, smaller chunks, lanes).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
CALL=7 timeout 300 python3 $R/docs/bench/h200-2026-12-04-s21/attention.py tinyllama_S512 qwen_S512 2>&1 | grep -v "^deplodock from" | tee $OUT/variants.log
