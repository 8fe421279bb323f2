# Session 31, call 3 (the H200 host of call 2, still warm, its /tmp/site and /tmp/old as
# gpu2.sh installed them): the backend's cold first call of TinyLlama, 0217aee (exports
# dynamo's whole graph) and this build (exports only the four-layer cut), interleaved.
export PATH=/tmp/site/bin:$PATH PYTHONPYCACHEPREFIX=/tmp/pyc
R=$PWD; cd /tmp
for i in 1 2; do for b in old:/tmp/old new:/tmp/site; do
  PYTHONPATH=${b#*:} DEPLODOCK_STATS=1 timeout 60 python3 $R/docs/bench/h200-2026-12-03-s16/first_call.py tinyllama-1.1b backend 2>&1 \
    | grep -E "cold|export|lower|total" | head -6 | sed "s/^/${b%%:*} $i: /"
done; done 2>&1 | tee $OUT/backend_ab.log
