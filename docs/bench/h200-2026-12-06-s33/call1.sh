# Session 33, call 1: the every-candidate tile test on the GPU (session 32's, not run yet);
# Nsight Compute on TinyLlama's gate at S=512 (ours vs cuBLAS, session 32's call6) and on
# the shapes group's copy-rate misses (ours and eager).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
timeout 150 python3 -m pytest -p no:cacheprovider -m gpu -q test/test_matmul_schedule.py -k every_candidate > $OUT/gpu_tests.log 2>&1
tail -3 $OUT/gpu_tests.log
timeout 330 python3 docs/bench/h200-2026-12-06-s33/copyrate.py > $OUT/copyrate.log 2>&1
cat $OUT/copyrate.log
cd /tmp
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats"
timeout 150 ncu --clock-control none -k regex:'k_linear|gemm' -c 2 $S \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section InstructionStats \
  python3 $R/docs/bench/h200-2026-12-06-s32/ncu_gemm.py > $OUT/ncu_gemm.txt 2>&1
echo "gemm rc=$?"
for c in softmax/odd; do
  f=$OUT/ncu_$(echo $c | tr / _).txt
  timeout 70 ncu --clock-control none -c 12 $S python3 $R/docs/bench/h200-2026-12-06-s33/ncu_cases.py $c > $f 2>&1
  echo "$c rc=$?"
done
grep -E "^  [a-zA-Z_]|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|No Eligible|Block Limit|Theoretical Occ|Waves Per SM" $OUT/ncu_*.txt | cut -c1-160 | head -150
