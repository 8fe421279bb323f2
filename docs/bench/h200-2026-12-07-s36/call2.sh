# Session 36, call 2: the cost model's refit (the 16 x 8 tile at 0.95 two blocks an SM,
# K_EDGE_COST 1.0) on one machine:
# 1. the sweep of the shapes whose new pick no sweep has timed: Qwen o/q at S=128 (16 x 8 in
#    8 splits), Qwen gate/up at S=32 (3 splits), square 1024 (3 splits), Qwen's LM head (16 x 8
#    in 2 splits, last: 3 ms a run);
# 2. the 11 bench cases whose CUDA the change alters (cuda_hash.py), new picks and old
#    (old.py: the same build with the constants before), each beside eager and torch.compile.
S36=docs/bench/h200-2026-12-07-s36
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
timeout 130 python3 -m deplodock.bench.sweep --shape linear:128x3584x3584 \
  --shape linear:32x18944x3584 --shape matmul:1x1024x1024x1024 --shape linear:128x152064x3584 \
  --splits 1,2,3,4,6,8 --jobs 16 --out $OUT/sweep > $OUT/sweep.log 2>&1
echo "sweep rc=$?"; head -2 $OUT/sweep.log
grep -A4 "^==" $OUT/sweep/sweep.txt | cut -c1-90
F="--filter proj/q/tinyllama/S512,proj/o/tinyllama/S512,proj/gate-up/tinyllama/S512,proj/gate-up/qwen2.5-7b/S32,proj/q/qwen2.5-7b/S128,proj/o/qwen2.5-7b/S128,mlp/gated/tinyllama/S512,mlp/gated/qwen2.5-7b/S32,square/1024,layer/tinyllama/S512,layer/qwen2.5-7b/S128"
for run in new old; do
  [ $run = new ] && C="-m deplodock.cli" || C="$S36/old.py"
  timeout 150 python3 $C bench $F --budget 0.3 --rounds 5 --no-copy --no-gemm \
    --out $OUT/$run > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep "^|" $OUT/$run/results.md 2>/dev/null | cut -c1-160 | head -14
done
