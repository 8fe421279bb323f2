# Session 20, call 4: decode attention's walk with more chunks, threads and bigger blocks (decode.py).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cp docs/bench/h200-2026-12-04-s20/decode.py /tmp/decode.py
cd /tmp
timeout 420 python3 /tmp/decode.py 2>&1 | grep -v "^deplodock from\|warn" | tail -80 | tee $OUT/decode.log
