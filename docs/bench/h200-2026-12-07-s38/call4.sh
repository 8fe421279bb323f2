# Session 38, call 4: the hand-written register-tiled attention walk (fa/fa.py: several
# block shapes, each checked against eager and timed beside it in the same process).
# (The compiler's own figures for these cases: session 22's H200 table; the device time
# left after refused starts did not cover a bench run beside it.)
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 120 python3 docs/bench/h200-2026-12-07-s38/fa/fa.py > $OUT/fa.log 2>&1
echo "fa rc=$?"; cut -c1-200 $OUT/fa.log
