# Session 32, call 4: the LM head's tiles (lmhead.py), beside eager and torch.compile.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 500 python3 docs/bench/h200-2026-12-06-s32/lmhead.py "$@" 2>&1 | grep -v DEBUG | tee $OUT/lmhead.log
cd /tmp
timeout 300 python3 -m deplodock.bench.sweep --shape linear:128x32000x2048 --shape linear:512x32000x2048 --splits 1,2,4 --out $OUT/sweep 2>&1 | grep -v DEBUG | tail -5
python3 -m deplodock.bench.sweep --check $OUT/sweep/sweep.json 2>&1 | grep -v DEBUG | tail -12
