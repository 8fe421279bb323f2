# Session 34, call 1: session 33's probes cut to one call (device starts were scarce):
# PDL on/off (pdl.py, outputs checked both ways, eager and torch.compile in the run), K
# splits that are not powers of two (splits.py), then the GPU tests nearest the launcher with PDL on.
S33=docs/bench/h200-2026-12-06-s33
S34=docs/bench/h200-2026-12-07-s34
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
timeout 190 python3 $S33/pdl.py layer/tinyllama/S128 model/tinyllama/S128 \
  layer/qwen2.5-7b/S128 layer/tinyllama/S512 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-420
timeout 110 python3 $S34/splits.py > $OUT/splits.log 2>&1
echo "splits rc=$?"; cut -c1-400 $OUT/splits.log
DEPLODOCK_PDL=1 timeout 60 python3 -m pytest -p no:cacheprovider -m gpu -q test/test_pdl.py \
  test/test_cuda_backend.py > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -4 $OUT/gpu_tests.log
