# Session 36, call 5 (written, not run: too little device time was left to start a machine): Nsight Compute's memory tables and
# instruction mix of the gate at S=512 as now planned (16 x 8 tile, K in 3), for the
# per-SM rate (80% of issue slots against cuBLAS's 85%); PDL on whole TinyLlama a second
# time (call 2: 1.008x). Few files under $OUT (the tool returns a limited number).
S32=docs/bench/h200-2026-12-06-s32; S33=docs/bench/h200-2026-12-06-s33; R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
(cd /tmp && timeout 70 ncu --clock-control none -k regex:'k_linear_chunks' -c 1 \
  --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section WarpStateStats \
  --section SourceCounters --print-details all \
  python3 $R/$S32/ncu_gemm.py > $OUT/ncu_16x8.txt 2>&1)
echo "ncu rc=$?"; grep -E "Bank|bank|sector|Stall|stall|Executed Instructions|wavefront" $OUT/ncu_16x8.txt | cut -c1-200 | head -40
timeout 130 python3 $S33/pdl.py model/tinyllama/S128 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-420
