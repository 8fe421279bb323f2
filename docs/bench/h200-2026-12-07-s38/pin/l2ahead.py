"""Session 38: run a deplodock command with every register-prefetch K loop's global loads
preceded by an L2 prefetch of the same address two chunks ahead (``prefetch.global.L2``),
so one build times it against the planner's kernels on the bench cases. A text rewrite of
the CUDA as NVRTC receives it (``nvrtc.compile_cuda``), for the hand probe's finding
(``pin.py``: ptxas then issues three of the gate kernel's four loads at the top of the
chunk). Kernels without such a loop are compiled as they are. Use a cache directory of its
own (the program cache is keyed before this rewrite):

    DEPLODOCK_CACHE_DIR=/tmp/l2 python3 docs/bench/h200-2026-12-07-s38/pin/l2ahead.py bench ..
    python3 l2ahead.py --check FILE.cu     # print how many loads it would prefetch
"""

import re
import sys

from deplodock.backends.cuda import nvrtc

NEXT = re.compile(r"const int (\w+)_next = \(\1 \+ 1\) % (\d+);")
GUARDED = re.compile(
    r"const float4 (\w+) = \(([^;]*?)\) \? \*reinterpret_cast<const float4\*>\(&(\w+)\[([^;]*)\]\) : float4\{\};"
)
PLAIN = re.compile(r"const float4 (\w+) = \*reinterpret_cast<const float4\*>\(&(\w+)\[([^;]*)\]\);")


def with_l2_prefetch(source: str) -> tuple[str, int]:
    """``source`` with an L2 prefetch before each load of a prefetch loop's next chunk."""
    loops = dict(NEXT.findall(source))
    count = 0

    def ahead(var: str, text: str) -> str:
        return text.replace(f"{var}_next", f"{var}_ahead")

    def prefetch(var: str, guard: str | None, buf: str, index: str, load: str) -> str:
        nonlocal count
        count += 1
        cond = f"{var}_ahead < {loops[var]}" + (f" && ({ahead(var, guard)})" if guard else "")
        return (
            f"{{ const int {var}_ahead = {var} + 2; if ({cond}) asm volatile("
            f'"prefetch.global.L2 [%0];" :: "l"(&{buf}[{ahead(var, index)}])); }}\n      {load}'
        )

    def loop_of(text: str) -> str | None:
        return next((v for v in loops if f"{v}_next" in text), None)

    def guarded(m: re.Match) -> str:
        var = loop_of(m[0])
        return prefetch(var, m[2], m[3], m[4], m[0]) if var else m[0]

    def plain(m: re.Match) -> str:
        var = loop_of(m[0])
        return prefetch(var, None, m[2], m[3], m[0]) if var else m[0]

    source = GUARDED.sub(guarded, source)
    source = PLAIN.sub(plain, source)
    return source, count


_compile = nvrtc.compile_cuda


def compile_cuda(source: str, *args, **kwargs):
    return _compile(with_l2_prefetch(source)[0], *args, **kwargs)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        text = open(sys.argv[2]).read()
        print(f"{sys.argv[2]}: {with_l2_prefetch(text)[1]} loads prefetched two chunks ahead")
        sys.exit(0)
    nvrtc.compile_cuda = compile_cuda
    from deplodock.cli import main  # noqa: E402

    sys.exit(main(sys.argv[1:]))
