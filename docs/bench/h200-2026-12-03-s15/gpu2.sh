# Session 15, H200 call 2: GPU tests of the fused attention, then the attention cases with
# chunk-walk (32 keys a chunk), skip-masked-chunks and split-walk-columns against their
# variants, then the
# bench's attention and block groups, then projections whose split-K kernels now read their
# staged slabs as float4 (emit.packed_loads on shared rows).
R=$PWD
python3 -m pytest -q -m gpu -p no:cacheprovider test/test_softmax_sum.py 2>&1 | tail -3
cd /tmp
CHUNKS=1 THREADS=1 timeout 330 python3 $R/docs/bench/h200-2026-12-03-s15/attention.py tinyllama_S128 tinyllama_S512 qwen_S128 qwen_S512 d128_S2048 d64_S4096 d64_S1000
CHUNKS=1 THREADS= BLOCKS= LANES=1 timeout 60 python3 $R/docs/bench/h200-2026-12-03-s15/attention.py decode_kv4096 decode_kv32768 tinyllama_S32
timeout 200 deplodock bench --filter attention --filter block --budget 0.3 --rounds 5 --out $OUT/bench 2>&1 | grep "^\["
cd $R
python3 -m pip install -q --no-index --no-deps --target /tmp/site_old .whl/old/deplodock-*.whl .whl/xdsl-*.whl .whl/immutabledict-*.whl .whl/ordered_set-*.whl 2>&1 | tail -1
cd /tmp
for v in old new; do
  if [ $v = old ]; then P=/tmp/site_old; else P=/tmp/site; fi
  PYTHONPATH=$P timeout 90 python3 $R/docs/bench/h200-2026-12-03-s15/ab.py $v 'proj/*/*/S128' 2>&1 | grep " us"
done
