# Session 38, call 3: (1) the in-kernel combine of the gate's K split, by a ticket with the
# tail unrolled, with the last block's own sums in registers, and with split 2 waiting for
# splits 0 and 1 and storing no partial (cluster/cluster.py); (2) every GPU test with
# programmatic dependent launch on by default (no DEPLODOCK_PDL set).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
unset DEPLODOCK_PDL
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 100 python3 docs/bench/h200-2026-12-07-s38/cluster/cluster.py > $OUT/cluster.log 2>&1
echo "cluster rc=$?"; grep -E "median|identical" $OUT/cluster.log | cut -c1-200
python3 -c "from deplodock.backends.cuda.driver import programmatic_launch_enabled as p; print('PDL on:', p())"
timeout 330 python3 -m pytest -p no:cacheprovider -m gpu -q -x test/ > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; tail -5 $OUT/gpu_tests.log | cut -c1-300
