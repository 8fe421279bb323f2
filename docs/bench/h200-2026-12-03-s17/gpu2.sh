# Session 17, call 2: Qwen2.5-7B now restacks (call 1 fell back to every layer: its
# k_scores_<i> kernels carry no node name); where capture's 11 s go on this host; the
# first calls of torch.compile, deplodock.compile and the torch.compile backend.
set -x
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
cd /tmp
for M in qwen2.5-7b tinyllama; do
  export DEPLODOCK_CACHE_DIR=/tmp/dcache2-$M
  rm -rf $DEPLODOCK_CACHE_DIR
  /usr/bin/time -f "$M compile cold %e s, %M KB" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M.cu
  /usr/bin/time -f "$M compile warm %e s" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M-2.cu
done
deplodock compile qwen2.5-7b --seq 128 --ir cuda -q --no-cache --stats -o /tmp/qwen-every.cu > /dev/null 2>&1
cmp /tmp/qwen2.5-7b.cu /tmp/qwen-every.cu && echo "qwen2.5-7b restacked CUDA byte-identical to every layer lowered"
rm -rf $DEPLODOCK_CACHE_DIR
deplodock run tinyllama --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|kernels"
python3 - <<'PY'
import cProfile, pstats, time
t = time.time()
import torch, transformers
print(f"import torch, transformers {time.time() - t:.2f} s")
from deplodock.frontends.models import capture_model
pr = cProfile.Profile(); pr.enable(); t = time.time()
capture_model("tinyllama", seq=128, device="cpu", module_device="meta")
pr.disable(); print(f"capture {time.time() - t:.2f} s")
pstats.Stats(pr).sort_stats("cumulative").print_stats(30)
PY
python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b inductor api backend
python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py qwen2.5-7b api
