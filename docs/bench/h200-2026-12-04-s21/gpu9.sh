# Session 21, call 9: jam-walk-rows (two query rows a thread) against the defaults, the
# walk's shapes of the suite and attention-shapes.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
CALL=9 timeout 500 python3 $R/docs/bench/h200-2026-12-04-s21/attention.py qwen_S512 d128_S2048 tinyllama_S512 d64_S4096 d1024_S512 d64_S1000 2>&1 | grep -v "^deplodock from" | tee $OUT/variants.log
