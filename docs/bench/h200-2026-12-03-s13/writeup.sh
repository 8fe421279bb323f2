#!/bin/bash
# Session 13's third H200 run: every command of the write-up (shared/seed/article.txt),
# verbatim, on the H200 (issue 22's table), each output kept whole under $OUT/writeup/.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
W=$OUT/writeup; mkdir -p $W; cd /tmp
run() {  # name, command: the command through bash, its stdout, stderr and status kept
  local name=$1; shift
  local start=$EPOCHREALTIME
  bash -o pipefail -c "$*" > $W/$name.out 2> $W/$name.err; local rc=$?
  local took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  printf '%-13s rc=%s %6s s  %s\n' "$name" "$rc" "$took" "$*" >> $W/summary.txt
}
run rms_sm120 'deplodock compile -c "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))" --target sm_120 --ir cuda'
run stage_awk "deplodock compile -c \"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))\" --ir tile -vv | awk '/^>>> t:007/,/^<<< t:007/'"
for level in tensor loop tile kernel cuda; do
  run mm_$level "deplodock compile -c \"torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))\" --ir $level"
done
run softmax_bench 'deplodock run --bench -c "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))"'
run qwen 'deplodock compile Qwen/Qwen2.5-7B'
cat $W/summary.txt
