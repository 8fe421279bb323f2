# Session 19, call 1: where the decoder layers and the whole TinyLlama lose to
# torch.compile, kernel by kernel (`deplodock bench --kernels`), and the whole model at
# seq 128 re-timed (issue 20's must-show).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
timeout 300 deplodock bench --filter block --kernels --budget 0.3 --rounds 5 --out $OUT/layers 2>&1 | grep -v "^deplodock from" | tail -8
timeout 280 deplodock bench --filter model --kernels --budget 1 --rounds 5 --no-copy --no-gemm --out $OUT/model 2>&1 | grep -v "^deplodock from" | tail -5
