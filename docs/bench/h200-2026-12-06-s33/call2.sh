# Session 33, call 2 (one short call: device time ran out in refused starts): the PDL
# tests on the GPU, and whole TinyLlama with PDL on and off (pdl.py).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
DEPLODOCK_PDL=1 timeout 40 python3 -m pytest -p no:cacheprovider -m gpu -q test/test_pdl.py > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -4 $OUT/gpu_tests.log
timeout 110 python3 docs/bench/h200-2026-12-06-s33/pdl.py model/tinyllama/S128 > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-400
