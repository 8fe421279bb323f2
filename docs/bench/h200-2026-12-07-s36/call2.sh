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
# 3. a row staged with one block an SM, two-pass, on more row sizes (is it a rule by size?)
S33=docs/bench/h200-2026-12-06-s33
timeout 120 python3 $S33/copyrate.py softmax_4096x32768 softmax_8192x28000 \
  logsoftmax_odd_4096x50257 > $OUT/copyrate.log 2>&1
echo "copyrate rc=$?"; grep -v "^deplodock from" $OUT/copyrate.log | cut -c1-300
# 4. PDL with the implicit trigger (DEPLODOCK_PDL=1) on whole TinyLlama at S=128
timeout 150 python3 $S33/pdl.py model/tinyllama/S128 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-420
