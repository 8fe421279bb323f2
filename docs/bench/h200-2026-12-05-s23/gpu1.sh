# Session 23, call 1 (issue 21; written in session 22, which found no machine): compile time on the H200's host, cold (deplodock's caches
# empty) and warm, for `deplodock run` and `deplodock compile --ir cuda` of whole TinyLlama
# and Qwen2.5-7B at seq 128, beside torch.compile's first call (TinyLlama). The image keeps
# no bytecode of its site-packages (read-only, no __pycache__), so every process compiled
# torch's and transformers' sources again (session 17: 5.7 s of capture's 9.6); a user's pip
# install has that bytecode, so this call keeps it under PYTHONPYCACHEPREFIX, written by a
# first import, and times everything after.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
nproc; python3 -c "import platform; print(platform.processor() or platform.machine())"; grep -m1 "model name" /proc/cpuinfo
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up again %e s" python3 -c "import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
for M in tinyllama qwen2.5-7b; do
  export DEPLODOCK_CACHE_DIR=/tmp/dc-run-$M; rm -rf $DEPLODOCK_CACHE_DIR
  /usr/bin/time -f "$M run cold: wall %e s, %M KB" timeout 200 deplodock run $M --seq 128 --no-bench 2>&1 | grep -E "compiled in|logits|kernels|wall|rror"
  /usr/bin/time -f "$M run warm: wall %e s" timeout 200 deplodock run $M --seq 128 --no-bench 2>&1 | grep -E "compiled in|wall|rror"
  export DEPLODOCK_CACHE_DIR=/tmp/dc-compile-$M; rm -rf $DEPLODOCK_CACHE_DIR
  /usr/bin/time -f "$M compile --ir cuda cold: wall %e s, %M KB" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M.cu
  /usr/bin/time -f "$M compile --ir cuda warm: wall %e s" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/$M-2.cu
  cmp /tmp/$M.cu /tmp/$M-2.cu && echo "$M warm CUDA identical"
done
