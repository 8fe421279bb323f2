# Session 20, call 2: the matmul schedule space on the shapes where the layers and the
# whole TinyLlama lose to cuBLAS (lm_head 128x32000x2048: 529 us against ~336; gate/up
# at S=128 and S=512; down at S=512): every variant built, checked and timed beside cuBLAS,
# then the planner's pick checked against the fastest.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 480 python3 -m deplodock.bench.sweep --shape linear:128x32000x2048 --shape linear:128x5632x2048 \
  --shape linear:512x5632x2048 --shape linear:512x2048x5632 --out $OUT/sweep 2>&1 | grep -v "^deplodock from" | tail -30
python3 -m deplodock.bench.sweep --check $OUT/sweep/sweep.json 2>&1 | tail -20
