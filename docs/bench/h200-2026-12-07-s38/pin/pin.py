"""Session 38: do the register prefetch's global loads of the 16 x 8 gate kernel stay where
the emitter puts them (the top of the K chunk) if they are volatile asm? Session 37's SASS
shows them about 250 instructions before their shared stores, of a ~1150-instruction
chunk; cp.async, which cannot move, lost (three buffers: 282.7 against 261.9 us). If the
move is NVVM's (LLVM sinks a load towards its use to shorten its live range), a load in
``asm volatile`` stays; ptxas's own scheduler hoists loads rather than sinks them.

``p_l2`` keeps the loads as generated and adds, at the top of chunk k, a
``prefetch.global.L2`` of each address chunk k + 2 will load, so the late loads find L2.
``p_guard`` loads the next chunk only where there is one (``if (k + 1 < chunks && ..)``,
a branch, instead of the index wrapped round): ptxas schedules within a basic block, and
the branch keeps all four loads at the top of the chunk (SASS), 221 registers.

    python3 pin.py      # writes p_pinned.cu, p_pinned_mem.cu, p_l2.cu, p_guard.cu

Then ``python3 ../../h200-2026-12-07-s37/hand/hand.py g_prefetch.cu p_pinned.cu
p_pinned_mem.cu p_l2.cu p_guard.cu`` times each against the generated kernel (partial sums
alone).
"""

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = (HERE.parent.parent / "h200-2026-12-07-s37" / "hand" / "g_prefetch.cu").read_text()
# the K loop's prefetch loads: guard ? *reinterpret_cast<const float4*>(&buf[index]) : float4{}
LOAD = re.compile(
    r"const float4 (\w+) = \(([^;]*?a2_in_o_next[^;]*?)\) \? "
    r"\*reinterpret_cast<const float4\*>\(&(\w+)\[([^;]*)\]\) : float4\{\};"
)
HELPER = """
__device__ __forceinline__ float4 ldg_pinned(const float* p, bool inside) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (inside)
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) CLOBBER);
  return v;
}
"""


def variant(clobber: str) -> str:
    src, count = LOAD.subn(lambda m: f"const float4 {m[1]} = ldg_pinned(&{m[3]}[{m[4]}], {m[2]});", BASE)
    assert count == 4, count
    head = src.index('extern "C"')
    return src[:head] + HELPER.replace("CLOBBER", clobber) + "\n" + src[head:]


def l2_variant() -> str:
    """Each prefetch load preceded by an L2 prefetch of the same place two chunks later."""

    def ahead(m: re.Match) -> str:
        guard = m[2].replace("a2_in_o_next", "k2")
        index = m[4].replace("a2_in_o_next", "k2")
        return (
            f"{{ const int k2 = a2_in_o + 2; if (k2 < 86 && ({guard})) "
            f'asm volatile("prefetch.global.L2 [%0];" :: "l"(&{m[3]}[{index}])); }}\n      ' + m[0]
        )

    src, count = LOAD.subn(ahead, BASE)
    assert count == 4, count
    return src


def guard_variant() -> str:
    """Each prefetch load under a branch: only where there is a next chunk."""

    def guarded(m: re.Match) -> str:
        return (
            f"float4 {m[1]} = float4{{}};\n      if (a2_in_o + 1 < 86 && ({m[2]})) "
            f"{m[1]} = *reinterpret_cast<const float4*>(&{m[3]}[{m[4]}]);"
        )

    src, count = LOAD.subn(guarded, BASE)
    assert count == 4, count
    return src


if __name__ == "__main__":
    (HERE / "g_prefetch.cu").write_text(BASE)
    (HERE / "p_pinned.cu").write_text(variant(""))
    (HERE / "p_pinned_mem.cu").write_text(variant(': "memory"'))
    (HERE / "p_l2.cu").write_text(l2_variant())
    (HERE / "p_guard.cu").write_text(guard_variant())
    print("wrote g_prefetch.cu p_pinned.cu p_pinned_mem.cu p_l2.cu p_guard.cu")
