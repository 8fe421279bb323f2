# Session 41, call 7: the tensor-core attention with each K and V chunk split once by the
# block (tc/fatc.py: KVSPLIT=1 beside the FAST kernel of calls 4-5).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 docs/bench/gpu-2026-12-07-s41/tc/fatc.py > $OUT/fatc.log 2>&1
echo "fatc rc=$?"; cut -c1-200 $OUT/fatc.log
