# Session 21, call 8: session 18's hand-written probe (flash_probe.py: R query rows a
# thread, U lanes) at the shapes the walk misses most (d128 S=2048, S=1000): does keeping
# several rows a thread, each staged key read once for all of them, pay where ncu found the
# shared-memory pipe 93% busy? (Its deplodock column fails as in session 18; the
# compiler's figures are call 5's.)
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 400 python3 $R/docs/bench/h200-2026-12-03-s18/flash_probe.py d128_S2048 d64_S1000 qwen_S512 2>&1 | grep -v "^deplodock from" | tee $OUT/probe.log
