# Session 21, call 6: Nsight Compute on the walk kernels (what bounds them: the shared
# memory pipe, the FMA pipe, latency?), at head dim 128 S=2048, TinyLlama's S=512 and the
# S=1000 chunk kernel.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
for case in d128_S2048 tinyllama_S512 d64_S1000; do
  timeout 150 ncu --clock-control none -k regex:k_scaled_dot_product_attention -c 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section InstructionStats \
    --section Occupancy --section LaunchStats \
    python3 $R/docs/bench/h200-2026-12-04-s21/ncu_walk.py $case > $OUT/ncu_$case.txt 2>&1
  echo "$case rc=$?"; grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Shared|Issue Slots Busy|Achieved Occupancy|Stall|Pipe" $OUT/ncu_$case.txt | head -30
done
