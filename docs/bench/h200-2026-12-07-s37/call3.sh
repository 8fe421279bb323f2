# Session 37, call 3: hand-edited fills of the 16 x 8 gate kernel (hand/hand.py: register
# prefetch as generated, stores first, 4-byte cp.async two ways, three stages), then PDL
# on whole TinyLlama at S=128 a second time (session 36: 1.008x, one run).
D=docs/bench/h200-2026-12-07-s37; S33=docs/bench/h200-2026-12-06-s33; R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
(cd $D/hand && timeout 120 python3 hand.py g_prefetch.cu d_store_first.cu n_narrow.cu \
  e_narrow_lanes.cu f_three_stages.cu > $OUT/hand.log 2>&1; echo "hand rc=$?"; cat $OUT/hand.log)
timeout 150 python3 $S33/pdl.py model/tinyllama/S128 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-420
