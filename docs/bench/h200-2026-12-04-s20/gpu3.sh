# Session 20, call 3: block tiles beyond the planner's candidates (tiles.py), and the
# attention-shapes group (issue 20's new cases) against eager and torch.compile.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cp docs/bench/h200-2026-12-04-s20/tiles.py /tmp/tiles.py
cd /tmp
timeout 300 python3 /tmp/tiles.py $OUT/tiles 2>&1 | grep -v "^deplodock from" | tail -140
timeout 240 deplodock bench --filter attention-shapes --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/attention-shapes 2>&1 | grep -v "^deplodock from" | tail -9
