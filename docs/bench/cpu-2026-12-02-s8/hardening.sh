#!/usr/bin/env bash
# Issue 17's reproductions, each re-run with its command (session 8): what each prints now.
#   bash docs/bench/cpu-2026-12-02-s8/hardening.sh > docs/bench/cpu-2026-12-02-s8/hardening.txt 2>&1
# Needs the venv of the README's set-up; no GPU.
set -u
work=$(mktemp -d)
export DEPLODOCK_CACHE_DIR=$work/cache
show() {  # show CMD...: the command, its stderr (and the head of stdout), its exit status
  echo "\$ $*"
  "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  sed 's/^/  /' "$work/err" | head -12
  [ -s "$work/out" ] && head -3 "$work/out" | cut -c1-120 | sed 's/^/  | /'
  echo "  exit $rc"
  echo
}
cd "$work"
deplodock compile -q -c "torch.nn.RMSNorm(64)(torch.randn(8,64))" --ir loop -o rms.loop.mlir
deplodock compile -q -c "torch.softmax(torch.randn(8,200), -1)" --ir kernel -o sm.kernel.mlir
python3 - <<'PY'
lines = open("rms.loop.mlir").read().splitlines()
i = next(k for k, l in enumerate(lines) if "%in_3 = loop.load" in l)
j = next(k for k, l in enumerate(lines) if "loop.for %a2" in l)
lines.insert(j, lines.pop(i))  # the load above the loop whose index it reads
open("scope.mlir", "w").write("\n".join(lines) + "\n")
text = open("sm.kernel.mlir").read()
open("block33.mlir", "w").write(text.replace("block(256, 1, 1)", "block(33, 1, 1)", 1))
zero = open("rms.loop.mlir").read().replace("loop.for %a0 = 0 to 8", "loop.for %a0 = 0 to 0")
open("zero.mlir", "w").write(zero)
PY
printf 'func.func @f() -> f16 {\n  %%0 = arith.constant 0xff800000 : f16\n  func.return %%0 : f16\n}\n' > f16a.mlir
printf 'func.func @f() -> f16 {\n  %%0 = arith.constant -3.40282347e+38 : f16\n  func.return %%0 : f16\n}\n' > f16b.mlir

echo "## a use outside its definition's scope (a loop.load moved above its loop.for)"
show deplo-opt scope.mlir -t cuda
show deplodock compile scope.mlir --ir cuda
echo "## f16 constants the type cannot hold"
show deplo-opt f16a.mlir
show deplo-opt f16b.mlir
echo "## an unclosed brace in a pass pipeline"
show deplo-opt rms.loop.mlir -p 'tileify,cooperative-reduce{threads=128'
echo "## -t cuda on a loop-level file"
show deplo-opt rms.loop.mlir -t cuda
echo "## block(33,1,1) under warp shuffles"
show deplo-opt block33.mlir -t cuda
echo "## a zero-trip loop.for: legal, lowered to a kernel that does nothing"
show deplo-opt zero.mlir -p tileify,cooperative-reduce,blockify-launch,materialize -t cuda
echo "  and the interpreters run it, at the loop level and lowered to the kernel level:"
python3 - <<'PY'
import numpy as np
from deplodock.boundary import parse_ir
from deplodock.dialects import make_context
from deplodock.dialects.interpreters.run import run_forward
from deplodock.pipeline import lower
text = open("zero.mlir").read()
inputs = [np.ones(64, np.float32), np.ones((8, 64), np.float32)]
for level in ("loop", "kernel"):
    module = parse_ir(make_context(), text, "zero.mlir")
    if level == "kernel":
        lower(module, to="kernel")
    (out,) = run_forward(module, inputs)
    print(f"  {level} level: ran, output {out.shape} (no element written: the loop runs 0 times)")
PY
echo
echo "## an output path that cannot be written: refused before any work"
show deplodock compile -c "torch.nn.RMSNorm(64)(torch.randn(8,64))" -o /nonexistent/dir/out.cu
echo "## an unknown arch"
show deplodock compile rms.loop.mlir --arch banana --ir cuda
echo "## a named tuple result (values and indices)"
show deplodock compile -c "torch.max(torch.randn(4,5), dim=0)" --ir loop
echo "## a loop-level input asked for the torch level"
show deplodock compile rms.loop.mlir --ir torch
echo "## an internal compiler error (a pass made to fail): exit 3, the pass, the op, a reproducer"
cat > ice.py <<'PY'
import sys
from deplodock.dialects import loop
from deplodock.opt import main
from deplodock.passes.tile import tileify

def fail(self, op, rewriter):
    if isinstance(op, loop.KernelOp):
        raise ZeroDivisionError("an injected bug")

tileify.TileifyKernel.match_and_rewrite = fail
sys.exit(main(sys.argv[1:]))
PY
show python3 ice.py rms.loop.mlir -p tileify,mark-unroll
repro=$(ls "$DEPLODOCK_CACHE_DIR"/reproducers/*.mlir)
echo "  the reproducer parses and verifies:"; deplo-opt "$repro" > /dev/null && echo "  ok"
echo
echo "## Ctrl-C during a whole model's compile: exit 130, one line"
python3 - <<'PY'
import signal, subprocess, time
# A background job of a script ignores SIGINT; give the child the default, as a terminal does.
child = subprocess.Popen(
    ["deplodock", "compile", "qwen2.5-7b", "--ir", "kernel", "-q", "-o", "/dev/null"],
    stderr=subprocess.PIPE, text=True,
    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
)
time.sleep(8)
child.send_signal(signal.SIGINT)
err = child.communicate()[1]
print(f"  exit {child.returncode}")
print("\n".join("  " + line for line in err.splitlines()))
PY
echo
echo "## an NVRTC failure keeps its source and log in the cache's failed/, nothing in /tmp"
before=$(ls -d /tmp/deplodock-nvrtc-* 2>/dev/null | wc -l)
python3 -c "
from deplodock.backends.cuda.nvrtc import NvrtcError, compile_cuda
try:
    compile_cuda('extern \"C\" __global__ void k() { undefined_name = 1; }', name='bad.cu')
except NvrtcError as e:
    print('\n'.join(str(e).splitlines()[:2]))
" | sed 's/^/  /'
ls "$DEPLODOCK_CACHE_DIR/failed" | sed 's/^/  failed\//'
after=$(ls -d /tmp/deplodock-nvrtc-* 2>/dev/null | wc -l)
echo "  /tmp/deplodock-nvrtc-* before: $before, after: $after"
rm -rf "$work"
