# Session 42, call 4 (for the next session, after call3.sh): the standard report with and
# without matmuls on tensor cores, side by side against eager and torch.compile: the
# projections, the decoder layers (TinyLlama S=512's layer was 0.95x torch.compile because
# of its projections) and whole TinyLlama at S=128.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for label in fma tc; do
  extra=(); [ $label = tc ] && extra=(-p 'mma-contract{precision=tf32x3}')
  timeout 280 python3 -m deplodock.cli bench --filter 'proj/*/tinyllama/S512,layer,model/tinyllama' \
    --budget 0.3 --rounds 5 --no-copy "${extra[@]}" --out $OUT/$label > $OUT/$label.log 2>&1
  echo "$label rc=$?"; grep -E "^\[|geomean" $OUT/$label.log | cut -c1-200
done
