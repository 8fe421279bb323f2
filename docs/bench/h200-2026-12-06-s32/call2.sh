# Session 32, call 2 (the same warm H200): torch.compile's (Inductor's) first call beside
# deplodock.compile and the deplodock torch.compile backend, each cold then warm, each in
# a fresh process and cache (first_call.py), stage tables with DEPLODOCK_STATS=1.
R=$PWD
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONPYCACHEPREFIX=/tmp/pyc
cd /tmp
for m in tinyllama-1.1b qwen2.5-7b; do
  DEPLODOCK_STATS=1 timeout 280 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py $m inductor api backend 2>&1 | grep -v DEBUG | tee $OUT/first_call_$m.log
  date
done
