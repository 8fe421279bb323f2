# Session 30: a register tile's rows stored as float4 (emit.packed_stores), this build
# (/tmp/site) beside the session's starting build (7895218, /tmp/start) on the same
# host, interleaved: `deplodock run -c EXPR --bench --no-torch-compile` (CUDA graphs,
# median; eager measured in the same process). Matmuls whose output is most of their
# traffic (tiny K, tall-skinny), square and irregular ones, projections, two layers.
EXPRS=(
  "torch.mm(torch.randn(8192,16), torch.randn(16,8192))"
  "torch.mm(torch.randn(1048576,64), torch.randn(64,64))"
  "torch.mm(torch.randn(3072,3072), torch.randn(3072,3072))"
  "torch.mm(torch.randn(3001,3011), torch.randn(3011,2999))"
  "torch.nn.functional.linear(torch.randn(512,2048), torch.randn(2048,2048))"
  "torch.nn.functional.linear(torch.randn(512,18944), torch.randn(3584,18944))"
)
for e in "${EXPRS[@]}"; do
  for b in start:/tmp/start new:/tmp/site; do
    PYTHONPATH=${b#*:} timeout 60 deplodock run -c "$e" --bench --no-torch-compile 2>&1 \
      | grep -E "^\s+(deplodock|eager) |error|Error" | sed "s|^|${b%%:*} $e: |"
  done
done
for m in "tinyllama --seq 512"; do
  for b in start:/tmp/start new:/tmp/site; do
    PYTHONPATH=${b#*:} timeout 90 deplodock run $m --layers 1 --part layer --no-torch-compile 2>&1 \
      | grep -E "^\s+(deplodock|eager) |logits|max abs|error|Error" | sed "s|^|${b%%:*} layer $m: |"
  done
done
