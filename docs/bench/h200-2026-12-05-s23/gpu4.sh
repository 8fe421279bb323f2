# Session 23, call 4: the least of gpu3.sh that four minutes of GPU time could hold (call 3
# was taken back before it finished): Python writing its bytecode, TinyLlama's run cold,
# then the backend's GPU tests.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
env | grep -i "^PYTHON" ; unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
python3 -c "import sys; print('dont_write_bytecode', sys.dont_write_bytecode, 'pycache_prefix', sys.pycache_prefix)"
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export; import deplodock.cli, deplodock.frontends.models; from transformers import LlamaForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
/usr/bin/time -f "bytecode warm-up again %e s" python3 -c "$IMPORTS"
export DEPLODOCK_CACHE_DIR=/tmp/dc-run; rm -rf $DEPLODOCK_CACHE_DIR
/usr/bin/time -f "tinyllama run cold: wall %e s, %M KB" timeout 100 deplodock run tinyllama --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|wall|rror"
cd $R
timeout -s KILL 60 python3 -m pytest -q -m gpu -p no:cacheprovider -rA -W ignore test/test_torch_backend.py 2>&1 | tail -4
