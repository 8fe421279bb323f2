# Session 38, call 2 (if call 1 lands on an H200): issue 19's `shapes` group at HEAD on the
# H200 (its bars are the H200's; sessions 36-37 had only H100 hosts), then the attention
# group (issue 20's first bar), each beside eager and torch.compile in the same run.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 430 python3 -m deplodock.cli bench --filter shapes --budget 0.3 --rounds 3 \
  --out $OUT/shapes > $OUT/shapes.log 2>&1
echo "shapes rc=$?"; grep -E "^\[|geomean" $OUT/shapes.log | cut -c1-230
timeout 130 python3 -m deplodock.cli bench --filter 'attention/*' --budget 0.3 --rounds 5 \
  --no-copy --no-gemm --out /tmp/att > $OUT/attention.log 2>&1
echo "attention rc=$?"; grep -E "^\[|geomean" $OUT/attention.log | cut -c1-230
