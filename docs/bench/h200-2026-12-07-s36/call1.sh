# Session 36, call 1 (one full call, < 600 s, logs under $OUT), most needed first:
# 1. the matmul sweep of the two S=512 projections the planner gets wrong, with K splits of
#    3 and 6 (K padded as the planner pads it), for refitting the cost model (160 s);
# 2. Nsight Compute on TinyLlama's gate at S=512, ours against cuBLAS's kernel
#    (session 32's ncu_gemm.py): the per-SM rate behind the projections' 0.80-0.85x (120 s);
# 3. session 33's copy-rate variants of issue 19's misses (200 s).
S32=docs/bench/h200-2026-12-06-s32; S33=docs/bench/h200-2026-12-06-s33; R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
timeout 160 python3 -m deplodock.bench.sweep --shape linear:512x5632x2048 \
  --shape linear:512x2048x2048 \
  --splits 1,2,3,4,6 --jobs 16 --out $OUT/sweep > $OUT/sweep.log 2>&1
echo "sweep rc=$?"; head -2 $OUT/sweep.log
grep -A5 "^==" $OUT/sweep/sweep.txt | cut -c1-90
(cd /tmp && timeout 120 ncu --clock-control none -k regex:'k_linear|gemm' -c 2 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section InstructionStats \
  --section Occupancy --section LaunchStats --section SchedulerStats \
  python3 $R/$S32/ncu_gemm.py > $OUT/ncu_gemm.txt 2>&1)
echo "ncu rc=$?"
grep -E "^  [a-z_]|Duration|Compute \(SM\) Throughput|Memory Throughput|Bank|Issue Slots Busy|Achieved Occupancy|Registers Per|Executed Ipc|No Eligible|Warp Cycles Per Issued|Shared Memory" $OUT/ncu_gemm.txt | head -40
timeout 200 python3 $S33/copyrate.py softmax_odd_4096x50257 bmm_small mm_tiny_k > $OUT/copyrate.log 2>&1
echo "copyrate rc=$?"; grep -v "^deplodock from" $OUT/copyrate.log | cut -c1-300
