"""Session 38: is a K split combined inside the kernel worth building? TinyLlama's gate at
S=512 (x[512, 2048] @ w[5632, 2048].T, the 16 x 8 tile, K in 3: 528 blocks of 128) runs as
two kernels today, the partial sums (``k_linear_chunks``, 3 x 512 x 5632 floats written)
and their combine (``k_linear``, 11264 blocks: ~15 µs on an H100). This probe derives from
the generated pair (session 37's ``hand/g_prefetch.cu``) three one-kernel variants and
times them against the pair, each output checked against ``x @ w.T``:

- ``order``: the pair with the three splits of a tile on consecutive blocks (the order a
  cluster needs), to tell the order's effect from the cluster's;
- ``global``: an sm_90 cluster of the three splits (``__cluster_dims__(3, 1, 1)``): each
  block stores its partial as before, one cluster barrier (release / acquire), then rank r
  adds the three partials of a third of the tile (from L2, float4, in split order: the
  pair's sums bit for bit) and stores the output;
- ``ticket``: the pair's block order; each block stores its partial, fences, and takes a
  ticket from its tile's counter (``atomicAdd``); the block that draws the last ticket
  adds the three partials of its tile (from L2, float4, in split order) and stores the
  output, then resets the counter for the next launch (CUDA's threadFenceReduction);
- ``ticket_unroll``: ``ticket`` with the tail loop unrolled 8 (24 loads in flight a thread);
- ``ticket_own``: ``ticket`` whose last block, when it is split 2 (as it nearly always is),
  adds the two other partials at its own register tile's places (64 float4 loads, all
  independent) to its own sums still in registers: ((0 + p0) + p1) + own, the same order;
- ``wait_own``: split 2 of each tile stores no partial: splits 0 and 1 store theirs, fence
  and count themselves in; split 2 (a later block, so never holding an SM the others
  need) waits for the count of 2, resets it, and adds the two partials to its own sums in
  registers as ``ticket_own`` does;
- ``vec``: the pair with the partial sums stored four floats at a time (``float4``: a
  thread's four consecutive columns, 32 stores instead of 128);
- ``dsmem``: the same cluster, the partials kept in each block's shared memory (66 KB,
  dynamic) and read by the other ranks through distributed shared memory
  (``mapa`` + ``ld.shared::cluster``): no partial reaches L2; a second cluster barrier
  keeps a block's shared memory until the others have read it.

    python3 cluster.py            # writes the variants' CUDA beside it
"""

import re
import statistics
import sys
from pathlib import Path

import torch

from deplodock.backends.cuda.driver import LoadedModule
from deplodock.backends.cuda.nvrtc import compile_cuda

HERE = Path(__file__).resolve().parent
BASE = (HERE.parent.parent / "h200-2026-12-07-s37" / "hand" / "g_prefetch.cu").read_text()
STORE = re.compile(r"part_b\[c \* 2883584 \+ a0_r(\d+) \* 5632 \+ a1_c(\d+)\] = (linear_r\d+c\d+);")
ORDER = [
    ("const int c = bid / 176;", "const int c = bid % 3;"),
    ("const int a0_g_b = bid / 44 % 4;", "const int a0_g_b = bid / 3 / 44 % 4;"),
    ("const int a1_g_b = bid % 44;", "const int a1_g_b = bid / 3 % 44;"),
]
HEAD = "extern \"C\" __global__ void __launch_bounds__(128, 1) k_linear_chunks(\n    const float* __restrict__ x_b,\n    const float* __restrict__ x1_b,\n    float* __restrict__ part_b) {"
CLUSTER_HEAD = HEAD.replace("__global__ void", "__global__ void __cluster_dims__(3, 1, 1)").replace(
    "float* __restrict__ part_b) {", "float* __restrict__ part_b,\n    float* __restrict__ linear_b) {"
)
SYNC = '  asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");\n  asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");\n'
# rank c adds a third of the tile's 4096 float4s, in split order (0 + p0 + p1 + p2, as k_linear)
GLOBAL_COMBINE = SYNC + """  for (int q = c * 4096 / 3 + tid; q < (c + 1) * 4096 / 3; q += 128) {
    const int at = (a0_g_b * 128 + (q >> 5)) * 5632 + a1_g_b * 128 + (q & 31) * 4;
    const float4 p0 = __ldcg((const float4*)&part_b[at]);
    const float4 p1 = __ldcg((const float4*)&part_b[2883584 + at]);
    const float4 p2 = __ldcg((const float4*)&part_b[2 * 2883584 + at]);
    float4 s;
    s.x = ((0.0f + p0.x) + p1.x) + p2.x; s.y = ((0.0f + p0.y) + p1.y) + p2.y;
    s.z = ((0.0f + p0.z) + p1.z) + p2.z; s.w = ((0.0f + p0.w) + p1.w) + p2.w;
    *(float4*)&linear_b[at] = s;
  }
}
"""
LD = 'asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(P.x), "=f"(P.y), "=f"(P.z), "=f"(P.w) : "r"(R + off) : "memory");'
DSMEM_COMBINE = SYNC + """  {
    const unsigned base = (unsigned)__cvta_generic_to_shared(red);
    unsigned r0, r1, r2;
    asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(r0) : "r"(base));
    asm volatile("mapa.shared::cluster.u32 %0, %1, 1;" : "=r"(r1) : "r"(base));
    asm volatile("mapa.shared::cluster.u32 %0, %1, 2;" : "=r"(r2) : "r"(base));
    for (int q = c * 4096 / 3 + tid; q < (c + 1) * 4096 / 3; q += 128) {
      const unsigned off = ((q >> 5) * 132 + (q & 31) * 4) * 4;
      float4 p0, p1, p2;
      """ + LD.replace("P.", "p0.").replace("R ", "r0 ") + """
      """ + LD.replace("P.", "p1.").replace("R ", "r1 ") + """
      """ + LD.replace("P.", "p2.").replace("R ", "r2 ") + """
      float4 s;
      s.x = ((0.0f + p0.x) + p1.x) + p2.x; s.y = ((0.0f + p0.y) + p1.y) + p2.y;
      s.z = ((0.0f + p0.z) + p1.z) + p2.z; s.w = ((0.0f + p0.w) + p1.w) + p2.w;
      *(float4*)&linear_b[(a0_g_b * 128 + (q >> 5)) * 5632 + a1_g_b * 128 + (q & 31) * 4] = s;
    }
  }
""" + SYNC + "}\n"
TICKET_HEAD = HEAD.replace(
    "float* __restrict__ part_b) {",
    "float* __restrict__ part_b,\n    float* __restrict__ linear_b,\n    unsigned* __restrict__ tickets) {",
)
TICKET_COMBINE = """  __threadfence();
  __shared__ unsigned ticket;
  __syncthreads();
  const int tile = a0_g_b * 44 + a1_g_b;
  if (tid == 0) ticket = atomicAdd(&tickets[tile], 1u);
  __syncthreads();
  if (ticket != 2) return;
  __threadfence();
  for (int q = tid; q < 4096; q += 128) {
    const int at = (a0_g_b * 128 + (q >> 5)) * 5632 + a1_g_b * 128 + (q & 31) * 4;
    const float4 p0 = __ldcg((const float4*)&part_b[at]);
    const float4 p1 = __ldcg((const float4*)&part_b[2883584 + at]);
    const float4 p2 = __ldcg((const float4*)&part_b[2 * 2883584 + at]);
    float4 s;
    s.x = ((0.0f + p0.x) + p1.x) + p2.x; s.y = ((0.0f + p0.y) + p1.y) + p2.y;
    s.z = ((0.0f + p0.z) + p1.z) + p2.z; s.w = ((0.0f + p0.w) + p1.w) + p2.w;
    *(float4*)&linear_b[at] = s;
  }
  if (tid == 0) tickets[tile] = 0;
}
"""
def own_tail() -> str:
    """The last block's sums at its own register tile (split 2's partial in registers)."""
    lines = ["  if (c == 2) {"]
    for r in range(16):
        for c0 in (0, 4):
            at = f"a0_r{r} * 5632 + a1_c{c0}"
            lines.append(f"    {{ const float4 p0 = __ldcg((const float4*)&part_b[{at}]);")
            lines.append(f"      const float4 p1 = __ldcg((const float4*)&part_b[2883584 + {at}]);")
            own = [f"linear_r{r}c{c0 + i}" for i in range(4)]
            comps = ", ".join(f"((0.0f + p0.{x}) + p1.{x}) + {v}" for x, v in zip("xyzw", own))
            lines.append(f"      *(float4*)&linear_b[{at}] = make_float4({comps}); }}")
    lines.append("    if (tid == 0) tickets[tile] = 0;")
    lines.append("    return;")
    lines.append("  }")
    return "\n".join(lines) + "\n"


WAIT_TAIL = """  if (c != 2) {
    __threadfence();
    __syncthreads();
    if (tid == 0) atomicAdd(&tickets[tile], 1u);
    return;
  }
  if (tid == 0) {
    while (atomicAdd(&tickets[tile], 0u) < 2u) __nanosleep(64);
    tickets[tile] = 0;
  }
  __syncthreads();
  __threadfence();
"""


RED_BYTES = 128 * 132 * 4


def chunks_kernel(src: str) -> str:
    """The partial-sums kernel alone (the text up to the combine kernel)."""
    return src[: src.index("// grid (11264")]


def variant(kind: str) -> str:
    src = BASE
    if kind == "vec":
        def four(m):
            r, c0 = m[1], int(m[2])
            vals = ", ".join(f"linear_r{r}c{c0 + i}" for i in range(4))
            return f"*(float4*)&part_b[c * 2883584 + a0_r{r} * 5632 + a1_c{c0}] = make_float4({vals});"
        src = re.sub(r"part_b\[c \* 2883584 \+ a0_r(\d+) \* 5632 \+ a1_c([04])\] = linear_r\d+c\d+;", four, src)
        return re.sub(r"\n  part_b\[c \* 2883584 \+ a0_r\d+ \* 5632 \+ a1_c[123567]\] = linear_r\d+c\d+;", "", src)
    if kind.startswith(("ticket", "wait")):
        body = chunks_kernel(src).replace(HEAD, TICKET_HEAD)
        tail = TICKET_COMBINE
        if kind == "ticket_unroll":
            tail = tail.replace("  for (int q = tid;", "  #pragma unroll 8\n  for (int q = tid;")
        if kind == "wait_own":
            stores = body.index("  part_b[c * 2883584")
            body = body[:stores] + "  const int tile = a0_g_b * 44 + a1_g_b;\n  if (c != 2) {\n" + body[stores:]
            body = body.rstrip().rstrip("}").rstrip() + "\n  }\n}\n"
            tail = WAIT_TAIL + own_tail().replace("  if (c == 2) {\n", "").rsplit("  }", 1)[0].replace(
                "    if (tid == 0) tickets[tile] = 0;\n", "") + "}\n"
            return body[: len(body.rstrip().rstrip("}").rstrip())] + "\n" + tail
        if kind == "ticket_own":
            tail = tail.replace("  for (int q = tid;", own_tail() + "  for (int q = tid;")
        return body[: len(body.rstrip().rstrip("}").rstrip())] + "\n" + tail
    for old, new in ORDER:
        assert old in src, old
        src = src.replace(old, new)
    if kind == "order":
        return src
    body = chunks_kernel(src).replace(HEAD, CLUSTER_HEAD)
    body = body[: body.rstrip().rstrip("}").rstrip().__len__()] + "\n"  # drop the final brace
    if kind == "global":
        return body + GLOBAL_COMBINE
    body = STORE.sub(
        lambda m: f"red[(a0_g_t * 16 + {m[1]}) * 132 + a1_g_t * 4 + {int(m[2]) if int(m[2]) < 4 else int(m[2]) + 60}] = {m[3]};",
        body,
    )
    body = body.replace("  const int tid = threadIdx.x;", "  extern __shared__ __align__(16) float red[];\n  const int tid = threadIdx.x;")
    return body + DSMEM_COMBINE


def occupancy(fn, name: str) -> str:
    """Blocks an SM the driver will keep resident, and for a cluster kernel the clusters
    the whole GPU runs at once (``cuOccupancyMaxActiveClusters``)."""
    from cuda.bindings import driver as cu

    try:
        shared = RED_BYTES if name == "dsmem" else 0
        if shared:
            cu.cuFuncSetAttribute(
                fn._handle, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared
            )
        err, blocks = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn._handle, 128, shared)
        text = f"{blocks} blocks an SM"
        if name in ("global", "dsmem"):
            config = cu.CUlaunchConfig()
            config.gridDimX, config.gridDimY, config.gridDimZ = 528, 1, 1
            config.blockDimX, config.blockDimY, config.blockDimZ = 128, 1, 1
            config.sharedMemBytes = shared
            err, clusters = cu.cuOccupancyMaxActiveClusters(fn._handle, config)
            text += f", {clusters} clusters of 3 at once ({err})"
        return text
    except Exception as exc:  # a probe: report, do not stop
        return f"occupancy query failed: {exc}"


def main() -> None:
    srcs = {"pair": BASE, **{k: variant(k) for k in ("order", "vec", "ticket", "ticket_unroll", "ticket_own", "wait_own", "global", "dsmem")}}
    for name, src in srcs.items():
        (HERE / f"{name}.cu").write_text(src)
    if not torch.cuda.is_available():
        for name, src in srcs.items():
            res = compile_cuda(src).resources["k_linear_chunks"]
            print(f"{name}: {res.registers} registers, {res.shared_bytes} B static shared, spills {res.spill_stores} (no GPU to run on)")
        return
    torch.manual_seed(0)
    x = torch.randn(512, 2048, device="cuda")
    w = torch.randn(5632, 2048, device="cuda") / 2048**0.5
    want = x @ w.T
    p = torch.empty(3, 512, 5632, device="cuda")
    runs = {}
    for name, src in srcs.items():
        compiled = compile_cuda(src)
        res = compiled.resources["k_linear_chunks"]
        mod = LoadedModule(compiled)
        part = mod.function("k_linear_chunks")
        print(f"{name}: {res.registers} registers, {res.shared_bytes} B static shared, spills {res.spill_stores}")
        if name in ("pair", "order", "vec"):
            comb = mod.function("k_linear")

            def run(y, part=part, comb=comb):
                part.launch((528, 1, 1), (128, 1, 1), [x, w, p])
                comb.launch((11264, 1, 1), (256, 1, 1), [p, y])
        elif name.startswith(("ticket", "wait")):
            tickets = torch.zeros(176, dtype=torch.int32, device="cuda")

            def run(y, part=part, tickets=tickets):
                part.launch((528, 1, 1), (128, 1, 1), [x, w, p, y, tickets])
        else:
            shared = RED_BYTES if name == "dsmem" else 0

            def run(y, part=part, shared=shared):
                part.launch((528, 1, 1), (128, 1, 1), [x, w, p, y], shared_bytes=shared)
        runs[name] = run
        print(f"{name}: {occupancy(part, name)}")
    ref = None
    for name, run in runs.items():
        y = torch.full((512, 5632), float("nan"), device="cuda")
        p.fill_(float("nan"))
        run(y)
        torch.cuda.synchronize()
        err = ((y - want).abs().max() / want.abs().max()).item()
        ref = y if ref is None else ref
        same = torch.equal(y, ref)
        print(f"{name}: max rel err {err:.2e}, bit-identical to the pair: {same}")
    times = {n: [] for n in runs}
    times["cuBLAS"] = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    y = torch.empty(512, 5632, device="cuda")
    for _ in range(9):
        for name in times:
            run = runs.get(name) or (lambda y: torch.mm(x, w.T, out=y))
            for _ in range(3):
                run(y)
            start.record()
            for _ in range(20):
                run(y)
            end.record()
            torch.cuda.synchronize()
            times[name].append(start.elapsed_time(end) * 1000 / 20)
    for name, ts in times.items():
        print(f"{name}: median {statistics.median(ts):.1f} us (min {min(ts):.1f}, max {max(ts):.1f})")


if __name__ == "__main__":
    sys.exit(main())
