# Session 34, call 2: the bench cases whose CUDA the K splits of 3 x 2^i change (cuda_hash.py:
# TinyLlama's gate/up and gated MLP at S=32 and S=128, its layer at S=128), the build before
# (.whl/old) and after (.whl/new) on one machine, each beside eager and torch.compile.
python3 -m pip install -q --no-index --no-deps --target /tmp/deps .whl/*.whl
python3 -m pip install -q --no-index --no-deps --target /tmp/old .whl/old/*.whl
python3 -m pip install -q --no-index --no-deps --target /tmp/new .whl/new/*.whl
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
F="--filter proj/gate-up/tinyllama/S32 --filter proj/gate-up/tinyllama/S128 --filter layer/tinyllama/S128"
for run in old1 new1; do
  build=${run%?}
  PYTHONPATH=/tmp/$build:/tmp/deps timeout 85 python3 -m deplodock.cli bench $F \
    --budget 0.3 --rounds 5 --no-copy --no-gemm --out $OUT/$run > $OUT/$run.log 2>&1
  echo "$run rc=$?"; grep "^|" $OUT/$run/results.md 2>/dev/null | cut -c1-200 | head -9
done
