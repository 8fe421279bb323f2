# Session 32, call 3 (the same warm H200): a 16 x 8 thread tile against the planner's on
# the decoder layers' projections at S=512 (bigtile.py), beside eager and torch.compile.
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD PYTHONPYCACHEPREFIX=/tmp/pyc
timeout 560 python3 docs/bench/h200-2026-12-06-s32/bigtile.py "$@" 2>&1 | grep -v DEBUG | tee $OUT/bigtile.log
