# Session 23, call 2 (issue 21): torch.compile's first call (fresh Inductor cache, then warm),
# deplodock.compile(model, ids) and torch.compile(backend="deplodock"), cold then warm, on
# whole TinyLlama and Qwen2.5-7B at seq 128 (random weights on the GPU), each in a process
# of its own; bytecode kept under PYTHONPYCACHEPREFIX as in gpu1.sh.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc DEPLODOCK_STATS=1
cd /tmp
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "import torch, transformers, torch._dynamo, torch.export, torch._inductor; import deplodock.cli, deplodock.frontends.models; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
for M in tinyllama-1.1b qwen2.5-7b; do timeout 280 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py $M inductor api backend; done
