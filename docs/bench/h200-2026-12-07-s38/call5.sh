# Session 38, call 5 (not run; for the next session, about 8 minutes): the bench cases of
# the register-prefetch K loops (1) with each load of the next chunk under its own branch
# (materialize{branched_loads=true} through pin/branched.py: ptxas keeps the loads at the
# chunk's top) and (2) with an L2 prefetch of each load's address two chunks ahead
# (pin/l2ahead.py, a rewrite of the CUDA before NVRTC), each with its own cache directory,
# against the planner's kernels, eager and torch.compile in the same run.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
F="--filter proj/gate-up/tinyllama/S512,proj/q/tinyllama/S512,proj/down/tinyllama/S512,proj/o/qwen2.5-7b/S128,proj/gate-up/tinyllama/S128,layer/tinyllama/S512"
for run in planned branched l2ahead; do
  C="docs/bench/h200-2026-12-07-s38/pin/$run.py"; [ $run = planned ] && C="-m deplodock.cli"
  DEPLODOCK_CACHE_DIR=/tmp/cache-$run timeout 170 python3 $C bench $F --budget 0.3 --rounds 5 \
    --no-copy --no-gemm --out /tmp/$run > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep -E "^\[|geomean overall" $OUT/$run.log | cut -c1-200
done
