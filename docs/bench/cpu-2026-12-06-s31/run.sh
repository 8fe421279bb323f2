. /work/main/.venv/bin/activate
mkdir -p /tmp/cpu31
cd /tmp/cpu31
for M in tinyllama qwen2.5-7b; do
  export DEPLODOCK_CACHE_DIR=/tmp/cpu31/run-$M; rm -rf $DEPLODOCK_CACHE_DIR
  /usr/bin/time -f "$M run cold: wall %e s, %M KB" deplodock run $M --seq 128 --no-gpu-ok --no-bench 2>&1 | grep -E "compiled in|wall|rror"
  /usr/bin/time -f "$M run warm: wall %e s" deplodock run $M --seq 128 --no-gpu-ok --no-bench 2>&1 | grep -E "compiled in|wall|rror"
  export DEPLODOCK_CACHE_DIR=/tmp/cpu31/compile-$M; rm -rf $DEPLODOCK_CACHE_DIR
  /usr/bin/time -f "$M compile --ir cuda cold: wall %e s, %M KB" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/cpu31/$M.cu
  /usr/bin/time -f "$M compile --ir cuda warm: wall %e s" deplodock compile $M --seq 128 --ir cuda -q -o /tmp/cpu31/$M-2.cu
  cmp /tmp/cpu31/$M.cu /tmp/cpu31/$M-2.cu && echo "$M warm CUDA identical"
  export DEPLODOCK_CACHE_DIR=/tmp/cpu31/api-$M; rm -rf $DEPLODOCK_CACHE_DIR
  for a in cold warm; do DEPLODOCK_STATS=1 python /work/main/docs/bench/cpu-2026-12-05-s23/api_cpu.py ${M/tinyllama/tinyllama-1.1b} 2>&1 | grep -E "RESULT|^  [a-z]|stats"; done
done
export DEPLODOCK_CACHE_DIR=/tmp/cpu31/opt; rm -rf $DEPLODOCK_CACHE_DIR
deplodock compile tinyllama --layers 1 --seq 128 --ir loop -q -o /tmp/cpu31/layer.mlir
for a in cold warm; do /usr/bin/time -f "deplo-opt one layer to kernel $a: wall %e s" deplo-opt /tmp/cpu31/layer.mlir -p tileify,cooperative-reduce,blockify-launch,materialize -t cuda -o /tmp/cpu31/layer.cu; done
rm -rf /tmp/wb; DEPLODOCK_STATS=1 python /work/main/docs/bench/cpu-2026-12-05-s23/warm_backend.py /tmp/wb 2>&1 | grep -E "first call|^  [a-z]|stats"
