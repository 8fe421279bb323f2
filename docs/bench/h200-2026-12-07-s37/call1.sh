# Session 37, call 1: Nsight Compute's memory tables and instruction mix of the 16 x 8
# gate kernel (TinyLlama gate at S=512, K in 3: 80% of issue slots against cuBLAS's 85%),
# then the whole `shapes` group at HEAD (issue 19's table: the README's is sessions 11-13).
S32=docs/bench/h200-2026-12-06-s32; R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
(cd /tmp && timeout 80 ncu --clock-control none -k regex:'k_linear_chunks' -c 1 \
  --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section WarpStateStats \
  --section SourceCounters --print-details all \
  python3 $R/$S32/ncu_gemm.py > $OUT/ncu_16x8.txt 2>&1)
echo "ncu rc=$?"; grep -E "Bank|bank|sector|Stall|stall|Executed Instructions|wavefront" $OUT/ncu_16x8.txt | cut -c1-200 | head -40
timeout 430 python3 -m deplodock.cli bench --filter shapes --budget 0.3 --rounds 3 \
  --out $OUT/shapes > $OUT/shapes.log 2>&1
echo "bench rc=$?"; grep -E "^\[|geomean" $OUT/shapes.log | cut -c1-230
