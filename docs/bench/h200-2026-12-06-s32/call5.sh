# Session 32, call 5: the 16 x 8 candidate in the planner, against the build before it
# (.whl/old: adf44ea) on the bench cases whose CUDA it changes (cuda_hash.py: TinyLlama's
# down projection at S=512, in three cases) and whole TinyLlama at S=128 (its LM head).
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/old .whl/old/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPYCACHEPREFIX=/tmp/pyc
nvidia-smi --query-gpu=name --format=csv,noheader
cd /tmp
F="--filter proj/down/tinyllama/S512 --filter mlp/down-residual/tinyllama/S512 --filter layer/tinyllama/S512 --filter model/tinyllama/S128"
for b in new old; do
  [ $b = new ] && P=/tmp/site || P=/tmp/old:/tmp/site
  PYTHONPATH=$P timeout 240 deplodock bench $F --kernels --budget 0.3 --rounds 5 --out $OUT/$b 2>&1 | grep -v DEBUG | tail -12 | sed "s/^/$b: /"
done
