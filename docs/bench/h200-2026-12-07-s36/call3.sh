# Session 36, call 3: rows that fit one SM's shared memory staged with one block an SM and
# kept two-pass (stage_inputs.LARGE_BLOCKS_PER_SM 1, online_softmax.staged_alone), new
# against old (old_rows.py: the same build with the rule before) on the two bench cases
# whose CUDA it changes (cuda_hash.py), each beside eager and torch.compile; new twice.
S36=docs/bench/h200-2026-12-07-s36
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
F="--filter shapes/loss/cross-entropy,shapes/softmax/odd"
for run in new old new2; do
  [ $run = old ] && C="$S36/old_rows.py" || C="-m deplodock.cli"
  timeout 120 python3 $C bench $F --budget 0.5 --rounds 10 --no-copy --no-gemm \
    --out $OUT/$run > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep "^\[" $OUT/$run.log | cut -c1-260
done
