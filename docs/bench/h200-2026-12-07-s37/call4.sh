# Session 37, call 4 (the device time left after refused starts: the kernel-level part of
# call 3 alone): hand-edited and generated fills of the 16 x 8 gate kernel (hand/hand.py).
D=docs/bench/h200-2026-12-07-s37
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cd $D/hand && timeout 80 python3 hand.py g_prefetch.cu e_narrow_lanes.cu f_three_stages.cu \
  a3_generated.cu n_narrow.cu 2>&1 | tee $OUT/hand.log
