# Session 28, call 2 (what call 1, at its 600 s limit, had no time left for): Qwen2.5-7B through
# `deplodock run` and `deplodock compile --ir cuda`, cold and warm; then warm
# deplodock.compile of both models three times each (the warm path's spread on the host).
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
IMPORTS="import torch, transformers, torch._dynamo, torch.export, torch._inductor, xdsl.dialects.builtin; import deplodock.cli, deplodock.frontends.models, deplodock.torch_backend, deplodock.pipeline; from transformers import LlamaForCausalLM, Qwen2ForCausalLM"
/usr/bin/time -f "bytecode warm-up %e s" python3 -c "$IMPORTS"
for m in qwen2.5-7b; do
  C=$(mktemp -d)
  for t in cold warm; do DEPLODOCK_CACHE_DIR=$C timeout 100 deplodock run $m --seq 128 2>&1 | grep -E "compiled in|match|error" | sed "s/^/$m run $t: /"; done
  C=$(mktemp -d)
  for t in cold warm; do DEPLODOCK_CACHE_DIR=$C /usr/bin/time -f "$m compile --ir cuda $t: wall %e s" timeout 100 deplodock compile $m --seq 128 --ir cuda -q -o /tmp/$m.cu 2>&1 | grep -v DEBUG | tail -1; done
done
cat > /tmp/warm3.py <<'PY'
import os, subprocess, sys, tempfile
script = sys.argv[1]
for model in ("tinyllama-1.1b", "qwen2.5-7b"):
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "DEPLODOCK_CACHE_DIR": cache}
        for attempt in ("cold", "warm", "warm", "warm"):
            done = subprocess.run([sys.executable, script, model, "child", "api"], env=env,
                                  capture_output=True, text=True, timeout=100)
            line = [l for l in done.stdout.splitlines() if l.startswith("RESULT")]
            print(model, attempt, line[0][7:] if line else done.stderr[-300:], flush=True)
PY
timeout 200 python3 /tmp/warm3.py $R/docs/bench/h200-2026-12-03-s16/first_call.py
# the backend's warm first call of TinyLlama (its own part now loads no xDSL)
DEPLODOCK_STATS=1 timeout 150 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b backend 2>&1 | grep -v DEBUG
