# Session 39, call 4: the attention and attention-shapes groups at HEAD (PDL on by default),
# eager and torch.compile in the same run: the table issue 20's bars are read from.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 500 python3 -m deplodock.cli bench --filter attention,attention-shapes --budget 0.3 \
  --rounds 3 --no-copy --no-gemm --out $OUT/att > $OUT/att.log 2>&1
echo "bench rc=$?"; grep -E "^\[|geomean" $OUT/att.log | cut -c1-230
