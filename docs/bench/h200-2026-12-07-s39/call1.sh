# Session 39, call 1: the most important of session 38's call4/call5 in one call (starts are
# scarce): the hand register-tiled attention walk vs eager (fa.py), the compiler's attention on
# the same cases, then planned vs materialize{branched_loads=true} on the gate-up S512 and the
# TinyLlama layer S512 (own cache dirs), eager and torch.compile in the same runs.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
S=docs/bench/h200-2026-12-07-s38
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 120 python3 $S/fa/fa.py > $OUT/fa.log 2>&1
echo "fa rc=$?"; cut -c1-200 $OUT/fa.log
F="--filter proj/gate-up/tinyllama/S512,layer/tinyllama/S512"
for run in planned branched; do
  C="$S/pin/$run.py"; [ $run = planned ] && C="-m deplodock.cli"
  DEPLODOCK_CACHE_DIR=/tmp/cache-$run timeout 130 python3 $C bench $F --budget 0.3 --rounds 5 \
    --no-copy --no-gemm --out /tmp/$run > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep -E "^\[|geomean overall" $OUT/$run.log | cut -c1-200
done
F=attention-shapes/d128/S2048/causal,attention-shapes/d64/S1000/full,attention-shapes/d64/S4096/causal,attention/tinyllama/S512
timeout 170 python3 -m deplodock.cli bench --filter $F --budget 0.3 --rounds 3 --no-copy \
  --no-gemm --out /tmp/att > $OUT/bench.log 2>&1
echo "bench rc=$?"; grep -E "^\[" $OUT/bench.log | cut -c1-220
