# Session 40, call 1: (1) the hand kernel with the generated walk's habits turned on one at
# a time (fa40.py: which of them cost); (2) session 39's call 8: the two S=512 decoder
# layers at HEAD after the keep-off fix, and tile-walk's inner loops unrolled 4 and 8.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 docs/bench/h200-2026-12-07-s40/fa40.py > $OUT/fa40.log 2>&1
echo "fa40 rc=$?"; cat $OUT/fa40.log
bash docs/bench/h200-2026-12-07-s39/call8.sh
