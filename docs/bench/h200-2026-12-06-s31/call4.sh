# Session 31, call 4 (the same H200 host): issue 21's bar, `deplodock run MODEL --seq 128`
# with a cold cache (--stats: each step), logits against eager; then torch.compile's
# (Inductor's) first call of TinyLlama, cold and warm (call 5: of Qwen2.5-7B).
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
R=$PWD; cd /tmp
for m in tinyllama qwen2.5-7b; do
  C=$(mktemp -d)
  DEPLODOCK_CACHE_DIR=$C timeout 170 deplodock run $m --seq 128 --no-bench --stats > $OUT/run_$m.log 2>&1
  grep -E "compiled in|logits|^  [a-z(]|error" $OUT/run_$m.log | grep -v DEBUG | sed "s/^/$m: /"
done
timeout 80 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b inductor 2>&1 | grep -v DEBUG | tee $OUT/inductor.log
# call 5:
# timeout 150 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py qwen2.5-7b inductor 2>&1 | grep -v DEBUG | tee $OUT/inductor_qwen.log
