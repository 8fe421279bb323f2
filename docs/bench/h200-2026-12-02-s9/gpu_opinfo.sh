#!/usr/bin/env bash
# One resumable slice of an OpInfo run through deplodock.compile on the H200 (session 9).
# Run from the repository root on the GPU machine, with the wheels installed:
#   bash docs/bench/h200-2026-12-02-s9/gpu_opinfo.sh TAG DTYPE SAMPLES DEADLINE_S HARD_S [ENTRIES]
# SAMPLES samples (0: every one) of every entry (or of the comma-separated full ENTRIES
# names). Results
# accumulate in $OUT/opinfo-cuda-TAG.jsonl, started from the carried
# docs/bench/h200-2026-12-02-s9/opinfo-cuda-TAG.jsonl when there is one, so a later call
# with the file copied back resumes where it stopped; the log has a line per entry with
# its seconds. No entry starts after DEADLINE_S; at HARD_S the run is killed (the entries
# then running are lost, the file keeps every finished one).
set -uo pipefail
tag=$1 dtype=$2 samples=$3 deadline=$4 hard=$5 names=${6:-}
here=docs/bench/h200-2026-12-02-s9
results=$OUT/opinfo-cuda-$tag.jsonl
if [ -f "$here/opinfo-cuda-$tag.jsonl" ]; then cp "$here/opinfo-cuda-$tag.jsonl" "$results"; fi
touch "$results"
export PYTHONUNBUFFERED=1 DEPLODOCK_CACHE_DIR=/tmp/deplodock-cache
echo "== $tag ($dtype): $(wc -l < "$results") entries before"
timeout -s KILL "$hard" python3 -m deplodock.bench.opinfo --device cuda --dtype "$dtype" \
  --samples "$samples" --jobs 15 --timeout 120 --deadline "$deadline" --results "$results" \
  --entries "$names" -v --out "$OUT/opinfo-cuda-$tag.md" 2> "$OUT/opinfo-cuda-$tag.log"
echo "exit $?; $(wc -l < "$results") entries after"
grep -E "^(failed|refused|pass) " "$OUT/opinfo-cuda-$tag.log" | awk '{print $1}' | sort | uniq -c
grep -E "^failed " "$OUT/opinfo-cuda-$tag.log" | cut -c1-300
