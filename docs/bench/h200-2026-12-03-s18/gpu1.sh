# Session 18, call 1: the SIMT attention structures (flash_probe.py) beside eager,
# torch.compile and deplodock's walk, then ncu's view of deplodock's kernel and of the
# probe's R4 U4 kernel at TinyLlama S512.
R=$PWD
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$R/docs/bench/h200-2026-12-03-s18
cd /tmp
python3 $R/docs/bench/h200-2026-12-03-s18/flash_probe.py tinyllama_S512 qwen_S512 tinyllama_S128 qwen_S128 odd_S131 d64_S4096 2>&1 | tee $OUT/probe.log
