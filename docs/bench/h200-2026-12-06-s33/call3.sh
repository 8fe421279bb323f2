# Session 33, call 3 (written, not run): the copy-rate variants (copyrate.py) and Nsight Compute on
# TinyLlama's gate at S=512 (ours against cuBLAS) and on shapes/softmax/odd.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
timeout 330 python3 docs/bench/h200-2026-12-06-s33/copyrate.py > $OUT/copyrate.log 2>&1
echo "copyrate rc=$?"; cat $OUT/copyrate.log
cd /tmp
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats"
timeout 150 ncu --clock-control none -k regex:'k_linear|gemm' -c 2 $S \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section InstructionStats \
  python3 $R/docs/bench/h200-2026-12-06-s32/ncu_gemm.py > $OUT/ncu_gemm.txt 2>&1
echo "gemm rc=$?"
timeout 70 ncu --clock-control none -c 12 $S python3 $R/docs/bench/h200-2026-12-06-s33/ncu_cases.py softmax/odd \
  > $OUT/ncu_softmax_odd.txt 2>&1
echo "softmax rc=$?"
grep -E "^  [a-zA-Z_]|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|No Eligible|Block Limit|Theoretical Occ|Waves Per SM|Issue Slots|Bank" $OUT/ncu_*.txt | cut -c1-160 | head -80
