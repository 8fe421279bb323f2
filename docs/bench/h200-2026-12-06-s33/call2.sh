# Session 33, call 2 (written, not run: the session's device time ran out in refused
# starts): every GPU test with programmatic dependent launch on, then PDL on and off on a
# norm, attention, the decoder layers and whole TinyLlama (pdl.py), eager and
# torch.compile in the same run.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
DEPLODOCK_PDL=1 timeout 280 python3 -m pytest -p no:cacheprovider -m gpu -q test/ > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -4 $OUT/gpu_tests.log
timeout 280 python3 docs/bench/h200-2026-12-06-s33/pdl.py > $OUT/pdl.log 2>&1
echo "pdl rc=$?"; grep -v "^deplodock from" $OUT/pdl.log | cut -c1-400
