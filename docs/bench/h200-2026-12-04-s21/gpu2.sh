# Session 21, call 2: the variants again, the chunk kernel's value columns stacked in one
# output (chunk-reduce) so split-walk-columns deals them to lanes as in the whole walk.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 500 python3 $R/docs/bench/h200-2026-12-04-s21/attention.py 2>&1 | grep -v "^deplodock from" | tee $OUT/variants.log
