# Session 36, call 4: the planner's picks at HEAD beside eager and torch.compile on the
# cases session 34's K splits of 3 x 2^i changed (never timed) and TinyLlama's layer at
# S=512; then Nsight Compute on the gate at S=512 as now planned (16 x 8 tile, K in 3:
# the partial sums' kernel and the combine) against cuBLAS's.
S32=docs/bench/h200-2026-12-06-s32; R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
F="--filter proj/gate-up/tinyllama/S32,proj/gate-up/tinyllama/S128,mlp/gated/tinyllama/S32,mlp/gated/tinyllama/S128,layer/tinyllama/S128,layer/tinyllama/S512"
timeout 150 python3 -m deplodock.cli bench $F --budget 0.3 --rounds 5 --no-copy --no-gemm \
  --kernels --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$?"; grep "^\[" $OUT/bench.log | cut -c1-230
(cd /tmp && timeout 90 ncu --clock-control none -k regex:'k_linear|gemm' -c 3 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats \
  python3 $R/$S32/ncu_gemm.py > $OUT/ncu_gemm.txt 2>&1)
echo "ncu rc=$?"
grep -E "^  [a-z_]|Duration|Compute \(SM\) Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|No Eligible|Warp Cycles Per Issued|SM Active Cycles|Elapsed Cycles" $OUT/ncu_gemm.txt | head -40
