# Session 32, call 6: Nsight Compute on TinyLlama's gate at S=512, ours against cuBLAS's
# (ncu_gemm.py): the data for the next step on the projections' 0.80-0.85x of cuBLAS.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 200 ncu --clock-control none -k regex:'k_linear|gemm' -c 2 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section InstructionStats \
  --section Occupancy --section LaunchStats --section SchedulerStats \
  python3 $R/docs/bench/h200-2026-12-06-s32/ncu_gemm.py > $OUT/ncu_gemm.txt 2>&1
echo "rc=$?"
grep -E "^  [a-z_]|Duration|Compute \(SM\) Throughput|Memory Throughput|Bank|Issue Slots Busy|Achieved Occupancy|Registers Per|Executed Ipc|No Eligible|One or More|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|Shared Memory" $OUT/ncu_gemm.txt | head -60
