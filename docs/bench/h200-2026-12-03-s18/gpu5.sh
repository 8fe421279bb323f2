# Session 18, call 5: the suite's attention and decoder-layer groups with the session's
# defaults (batched walks, interleaved lanes, small causal blocks), eager and
# torch.compile in the same run.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 470 deplodock bench --filter attention --filter block --budget 0.3 --rounds 5 --out $OUT/bench 2>&1 | grep -v "^deplodock from" | tail -40
