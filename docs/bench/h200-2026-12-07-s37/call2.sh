# Session 37, call 2: (1) the 16 x 8 tile's K chunk, 8 (planned) against 16 (bk16.py), on
# the bench cases that take it, each beside eager and torch.compile; (2) the sweep of
# issue 19's long-K product (64 x 262147 @ 262147 x 64, 67% of the copy rate in call 1)
# and its batched small products (bmm/small, 76%).
D=docs/bench/h200-2026-12-07-s37
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
F="--filter proj/gate-up/tinyllama/S512,proj/q/tinyllama/S512,proj/down/tinyllama/S512,proj/o/qwen2.5-7b/S128,layer/tinyllama/S512"
for run in bk8 bk16; do
  [ $run = bk8 ] && C="-m deplodock.cli" || C="$D/bk16.py"
  timeout 170 python3 $C bench $F --budget 0.3 --rounds 5 --no-copy --no-gemm \
    > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep -E "^\[" $OUT/$run.log | cut -c1-200
done
timeout 200 python3 -m deplodock.bench.sweep --shape matmul:1x64x64x262147 \
  --shape matmul:8192x32x31x33 --splits 1,32,64,128,256,512 --jobs 16 --out $OUT/sweep \
  > $OUT/sweep.log 2>&1
echo "sweep rc=$?"; grep -A8 "^==" $OUT/sweep/sweep.txt | cut -c1-100
