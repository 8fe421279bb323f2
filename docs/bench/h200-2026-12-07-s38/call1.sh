# Session 38, call 1 (everything of the session in one call: starts are scarce):
# (1) hand-edited and generated fills of the 16 x 8 gate kernel (s37 hand/hand.py);
# (2) six bench cases with the planner's fill and with every cp.async K loop filled three
#     buffers deep (s37 async3.py), eager and torch.compile in the same run;
# (0) cluster/cluster.py: the K split of the gate combined inside the kernel (sm_90 cluster);
# (3) PDL on/off on whole TinyLlama at S=128 (s33 pdl.py).
S37=docs/bench/h200-2026-12-07-s37; R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 60 python3 docs/bench/h200-2026-12-07-s38/cluster/cluster.py > $OUT/cluster.log 2>&1
echo "cluster rc=$?"; cat $OUT/cluster.log | cut -c1-200
(cd $S37/hand && timeout 80 python3 hand.py g_prefetch.cu n_narrow.cu e_narrow_lanes.cu \
  f_three_stages.cu a3_generated.cu > $OUT/hand.log 2>&1; echo "hand rc=$?"; cat $OUT/hand.log | cut -c1-200)
F="--filter proj/gate-up/tinyllama/S512,proj/q/tinyllama/S512,proj/down/tinyllama/S512,proj/o/qwen2.5-7b/S128,proj/gate-up/tinyllama/S128,layer/tinyllama/S512"
for run in planned async3; do
  [ $run = planned ] && C="-m deplodock.cli" || C="$S37/async3.py"
  timeout 190 python3 $C bench $F --budget 0.3 --rounds 5 --no-copy --no-gemm \
    --out /tmp/$run > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep -E "^\[|geomean overall" $OUT/$run.log | cut -c1-200
done
timeout 100 python3 docs/bench/h200-2026-12-06-s33/pdl.py model/tinyllama/S128 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; tail -8 $OUT/pdl.log | cut -c1-200
