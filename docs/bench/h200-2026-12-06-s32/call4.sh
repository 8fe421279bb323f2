# Session 32, call 4: the LM head's tiles (lmhead.py), beside eager and torch.compile.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 500 python3 docs/bench/h200-2026-12-06-s32/lmhead.py "$@" 2>&1 | grep -v DEBUG | tee $OUT/lmhead.log
