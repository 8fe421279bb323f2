"""The write-up's command lines, as a user pastes them.

``shared/seed/article.txt`` is the write-up this project grew from; people read it with a
terminal beside it. Every command it prints runs here through bash, verbatim (with its
line breaks and pipes; the ``--ir tensor|loop|tile|kernel|cuda`` it writes as one line is
five commands), with this environment's ``deplodock`` first on PATH. A ``run`` gets
``--no-gpu-ok`` where there is no GPU, and is run as printed where there is one. Each
test checks that the output is what the write-up shows, in kind: the per-pass markers it
filters with awk, the one fused kernel with its warp shuffles and shared memory, every
level printed, the whole model's CUDA.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deplodock.backends.cuda.driver import gpu_available
from deplodock.backends.cuda.nvrtc import compile_cuda
from deplodock.passes import PIPELINE

BIN = Path(sys.executable).parent  # this environment's deplodock

STAGE_INPUTS = """deplodock compile \\
  -c "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))" \\
  --ir tile -vv \\
  | awk '/^>>> t:007/,/^<<< t:007/'"""

RMSNORM_SM120 = """deplodock compile \\
  -c "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))" \\
  --target sm_120 --ir cuda"""

MATMUL = (
    'deplodock compile -c "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), '
    'torch.randn(64,16)))" --ir {level}'
)

SOFTMAX_BENCH = 'deplodock run --bench -c "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))"'

QWEN = "deplodock compile Qwen/Qwen2.5-7B"

# The write-up's tile passes: [001] tileify ... [016] mark_unroll.
WRITEUP_TILE_PASSES = {
    "tileify": 1,
    "chunk-matmul-k": 2,
    "split-matmul-k": 3,
    "cooperative-reduce": 4,
    "blockify-launch": 5,
    "chunk-reduce": 6,
    "stage-inputs": 7,
    "register-tile": 8,
    "permute-register-tile": 9,
    "split-inner-for-swizzle": 12,
    "pad-smem": 14,
    "mark-unroll": 16,
}


def _sh(command: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """``command`` through bash (pipefail, so a failing deplodock is not hidden by awk),
    with this environment's bin first on PATH and a fresh cache directory."""
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DEPLODOCK_CACHE_DIR": str(tmp_path / "cache"),
    }
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )


def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return done.stdout


def test_the_commands_are_the_write_ups() -> None:
    """The commands below are the write-up's own (a typo here would test something else)."""
    article = Path(__file__).resolve().parents[1] / ".." / "shared" / "seed" / "article.txt"
    if not article.exists():
        pytest.skip("the write-up is not beside this checkout")
    flat = " ".join(article.read_text().split())
    for command in (STAGE_INPUTS, RMSNORM_SM120):
        assert " ".join(command.split()) in flat, command
    for command in (SOFTMAX_BENCH, QWEN, MATMUL.format(level="tensor|loop|tile|kernel|cuda")):
        assert command in flat, command


def test_stage_inputs_diff_between_its_markers(tmp_path: Path) -> None:
    """The write-up's awk line prints the tile level's pass 7, stage-inputs, and nothing
    else. For this RMSNorm (x: 256 KB) the pass keeps x in global memory: re-read from L2
    it was faster on the H200 than a copy and a barrier (``stage_inputs.stage_pays``), and
    the block says so, naming x and its two reads."""
    out = _ok(_sh(STAGE_INPUTS, tmp_path))
    lines = out.splitlines()
    assert lines[0] == ">>> t:007_stage-inputs" and lines[-1] == "<<< t:007_stage-inputs"
    assert out.count(">>> ") == 1 and out.count("<<< ") == 1
    assert "# k_rms_norm: x is read at 2 places a block, not staged" in out
    assert "256 KB stay in L2" in out and "min_source_bytes=0" in out


def test_stage_inputs_stages_x_past_l2(tmp_path: Path) -> None:
    """The same awk line on an RMSNorm past L2 (x: 64 MB) shows what the write-up's does:
    a slab of x's row staged in shared memory and both loads reading it."""
    command = STAGE_INPUTS.replace(
        "RMSNorm(2048)(torch.randn(1,32,2048))", "RMSNorm(4096)(torch.randn(1,4096,4096))"
    )
    out = _ok(_sh(command, tmp_path))
    assert out.startswith(">>> t:007_stage-inputs\n")
    added = [line for line in out.splitlines() if line.startswith("+ ")]
    assert any(re.search(r"%x_smem = tile\.stage %x_b\[0, %a0, 0\]", a) for a in added), out
    assert sum("loop.load %x_smem[" in a for a in added) == 2, out
    removed = [line for line in out.splitlines() if line.startswith("- ")]
    assert sum("loop.load %x_b[" in r for r in removed) == 2, out


def test_tile_passes_keep_the_write_ups_numbers() -> None:
    """The numbers are stable and unique in each level; the tile passes the write-up names
    keep its numbers; fill-k-loop has double_buffer's (10); 11, 13 and 15 (tma_copy,
    async_copy, pipeline_k_outer, folded into fill-k-loop) are retired."""
    numbers = {(level, name): number for level, number, name, _ in PIPELINE}
    for level in {level for level, _ in numbers}:
        used = [n for (at, _), n in numbers.items() if at == level]
        assert len(used) == len(set(used)), level
    tile = {name: n for (level, name), n in numbers.items() if level == "tile"}
    assert {name: tile[name] for name in WRITEUP_TILE_PASSES} == WRITEUP_TILE_PASSES
    assert tile["fill-k-loop"] == 10
    assert not {11, 13, 15} & set(tile.values())
    assert all(
        n > 16 for name, n in tile.items() if name not in WRITEUP_TILE_PASSES | {"fill-k-loop": 0}
    )


def test_rmsnorm_cuda_for_sm_120(tmp_path: Path) -> None:
    """One fused kernel, as the write-up prints: the sum of squares by warp shuffles, the
    warps' partials through shared memory, then the normalised row; NVRTC compiles it for
    sm_120 (the RTX 5090) with no spill."""
    source = _ok(_sh(RMSNORM_SM120, tmp_path))
    assert source.count("__global__") == 1
    assert re.search(r"__shared__ [^;]*float \w+\[8\];", source)  # a partial a warp
    assert source.count("__shfl_xor_sync(0xffffffff") == 5  # 16, 8, 4, 2, 1
    assert "__syncthreads();" in source and "rsqrtf(" in source
    compiled = compile_cuda(source, arch="sm_120")
    assert compiled.arch == "sm_120" and compiled.cubin[:4] == b"\x7fELF"
    assert compiled.resources and not any(r.spills for r in compiled.resources.values())


@pytest.mark.parametrize("level", ["tensor", "loop", "tile", "kernel", "cuda"])
def test_matmul_every_level(level: str, tmp_path: Path) -> None:
    """``--ir tensor|loop|tile|kernel|cuda``: each level, with what the write-up shows of it:
    the broadcasts, product and sum at the tensor level, then one kernel in which the bias
    add (prologue), the K reduction and the relu (epilogue) are fused."""
    out = _ok(_sh(MATMUL.format(level=level), tmp_path))
    if level == "tensor":
        assert out.count("ten.index_map") == 3 and "ten.reduce add" in out
        assert "arith.mulf" in out and "loop." not in out
    elif level == "cuda":
        assert out.count("__global__") == 1
        assert re.search(r"for \(int \w+ = 0; \w+ < 64; \+\+\w+\)", out)  # K
        assert " + in_1;" in out and "maximumf(" in out  # bias add and relu, fused
    else:
        assert out.count(f"{level}.kernel @") == 1, out
        assert "reduce(add)" in out and "arith.addf" in out and "arith.maximumf" in out
        if level in ("tile", "kernel"):
            assert "= thread" in out or "kernel.thread_id" in out


def test_softmax_run_bench(tmp_path: Path) -> None:
    """Compiled with NVRTC; on a GPU also run, checked against PyTorch and timed against
    eager and torch.compile. Without one the command says so (``--no-gpu-ok``: exit 0)."""
    if gpu_available():
        done = _sh(SOFTMAX_BENCH, tmp_path)
        out = _ok(done)
        assert "OK" in out and "GPU time per call" in out
        for candidate in ("deplodock", "eager", "torch.compile"):
            assert re.search(rf"^    {re.escape(candidate)} +\d", out, re.M), out
    else:
        done = _sh(SOFTMAX_BENCH + " --no-gpu-ok", tmp_path)
        out = _ok(done)
        assert "no CUDA GPU on this machine: compiled for sm_90 with NVRTC" in done.stderr
    assert "deplodock run: torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))" in out
    assert re.search(r"kernel k_\w+: grid \d+x1x1, block \d+x1x1, \d+ registers", out), out
    assert "no spills" in out


def test_whole_qwen_compiles_to_cuda(tmp_path: Path) -> None:
    """The real Qwen2.5-7B config on the meta device (no weights): its 28 decoder layers
    to CUDA on stdout, one attention kernel a layer among the fused kernels (about 40 s
    on CI's two cores)."""
    pytest.importorskip("transformers")
    source = _ok(_sh(QWEN, tmp_path))
    kernels = re.findall(r"__global__ void (?:__launch_bounds__\([\d, ]+\) )?(\w+)\(", source)
    assert len(kernels) == source.count("__global__") > 28 * 5
    attention = [
        k
        for k in kernels
        if k.startswith("k_scaled_dot_product_attention") and not k.endswith("_chunks")
    ]  # a layer's keys may be split across blocks (its ``_chunks`` kernel) when rows are few
    assert len(attention) == 28, attention
    assert "__shfl_xor_sync" in source and "__shared__" in source  # reductions, slabs
