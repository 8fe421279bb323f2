# Session 39, call 3: the hand attention walk with TX lanes a row group (fa.cu's TX: 16 or 32
# lanes share a row group's keys for the scores and its head dim for P V, so a thread keeps
# half or a quarter of the output tile; TX 4 doubles it), each checked against eager.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 200 python3 docs/bench/h200-2026-12-07-s38/fa/fa.py > $OUT/fa.log 2>&1
echo "fa rc=$?"; cut -c1-200 $OUT/fa.log
