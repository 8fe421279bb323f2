"""The three seed examples from PyTorch to CUDA, at every level, as a user drives them.

* ``deplodock compile -c ... --ir X`` works for every level;
* the printed form of every level re-parses (``deplo-opt``'s parser) and lowering the rest
  of the way gives byte-for-byte the CUDA of ``--ir cuda``;
* the CUDA compiles with NVRTC for sm_90 with no register spills;
* on a GPU, ``deplodock run`` matches PyTorch eager on fresh random inputs.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from xdsl.parser import Parser

from deplodock.backends.cuda.driver import gpu_available
from deplodock.backends.cuda.emit import emit_cuda
from deplodock.backends.cuda.nvrtc import compile_cuda
from deplodock.cli import main
from deplodock.dialects import make_context
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import pass_tag
from deplodock.pipeline import LEVELS, PASSES_TO, lower, passes_between

RMSNORM = "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
SOFTMAX = "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))"
MATMUL = "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))"
SEEDS = {"rmsnorm": RMSNORM, "softmax": SOFTMAX, "matmul": MATMUL}
TAG = re.compile(r"(ten|l|t|k):\d{3}_[a-z-]+ ")  # a line of -v's list


def _compile(expr: str, level: str, *extra: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["compile", "-c", expr, "--ir", level, *extra]) == 0
    return out.getvalue()


@pytest.fixture(scope="module", params=list(SEEDS), ids=list(SEEDS))
def seed(request) -> tuple[str, str]:
    return request.param, SEEDS[request.param]


@pytest.fixture(scope="module")
def cuda_source(seed) -> str:
    return _compile(seed[1], "cuda")


def test_every_level_prints(seed) -> None:
    for level in LEVELS:
        text = _compile(seed[1], level)
        assert text.strip(), level


def test_one_fused_kernel(seed) -> None:
    loop = _compile(seed[1], "loop")
    assert loop.count("loop.kernel @") == 1, loop
    kernel = _compile(seed[1], "kernel")
    assert kernel.count("kernel.kernel @") == 1


@pytest.mark.parametrize("level", ["torch", "tensor", "loop", "tile", "kernel"])
def test_printed_level_resumes_to_same_cuda(seed, cuda_source, level) -> None:
    text = _compile(seed[1], level)
    module = Parser(make_context(), text).parse_module()
    module.verify()
    lower(module, to="kernel")
    assert emit_cuda(module) == cuda_source


def test_cuda_compiles_without_spills(seed, cuda_source) -> None:
    compiled = compile_cuda(cuda_source, arch="sm_90")
    assert compiled.cubin[:4] == b"\x7fELF"
    assert compiled.resources, compiled.log
    for name, res in compiled.resources.items():
        assert not res.spills, f"{name} spills: {res}"


def test_verbose_lists_passes_and_diffs(capsys) -> None:
    """-v (stderr) lists every pass by the tag its -vv markers (stdout) carry, in run
    order: level mark, number within the level (``passes.PIPELINE``), name."""
    assert main(["compile", "-c", RMSNORM, "--ir", "kernel", "-vv"]) == 0
    captured = capsys.readouterr()
    markers = re.findall(r"^>>> (\S+)$", captured.out, re.M)
    assert markers == re.findall(r"^<<< (\S+)$", captured.out, re.M)
    listed = [line.split()[0] for line in captured.err.splitlines() if TAG.match(line)]
    assert listed == markers
    assert markers == [pass_tag(name) for name in passes_between("torch", "kernel")]
    assert markers[:4] == [
        "ten:001_decompose",
        "ten:002_softmax-sum",
        "l:001_lift-to-loop",
        "l:002_fuse",
    ]
    assert markers[4:8] == [
        "l:005_fold-integers",
        "l:003_online-softmax",
        "l:004_unroll-dots",
        "t:001_tileify",
    ]
    assert markers[-1] == "k:001_materialize" and "t:007_stage-inputs" in markers


def test_deplo_opt_runs_remaining_passes(tmp_path: Path, cuda_source, seed) -> None:
    loop_file = tmp_path / "prog.mlir"
    loop_file.write_text(_compile(seed[1], "loop"))
    local = Path(sys.executable).parent / "deplo-opt"
    opt = str(local) if local.exists() else shutil.which("deplo-opt")
    assert opt, "deplo-opt is not installed"
    result = subprocess.run(
        [
            opt,
            str(loop_file),
            "-p",
            ",".join((*PASSES_TO["tile"], *PASSES_TO["kernel"])),
            "-t",
            "cuda",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == cuda_source.strip()


def test_unsupported_op_is_named_with_source_line(capsys) -> None:
    program = "torch.kthvalue(torch.randn(8, 8), 2, 0).values"
    assert main(["compile", "-c", program, "--ir", "tensor"]) == 1
    err = capsys.readouterr().err
    assert "kthvalue" in err and "<expression>:1" in err and "Traceback" not in err


def test_run_without_gpu_says_so(capsys) -> None:
    if gpu_available():
        pytest.skip("this machine has a GPU")
    assert main(["run", "-c", MATMUL, "--stats"]) == 2
    err = capsys.readouterr().err
    assert "no CUDA GPU" in err
    # --stats: where the compile's time went, NVRTC included, though nothing ran
    for step in ("capture (torch.export)", "lower to kernel", "emit CUDA, NVRTC"):
        assert re.search(rf"^  {re.escape(step)} +\d+\.\d\d s +\d+ MB", err, re.M), step


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_run_matches_pytorch_on_gpu(seed, capsys) -> None:
    assert main(["run", "-c", seed[1]]) == 0, capsys.readouterr().out


def test_capture_is_reproducible() -> None:
    a = import_program(capture_expression(MATMUL).program).module
    b = import_program(capture_expression(MATMUL).program).module
    assert str(a) == str(b)


def test_resources_report(capsys) -> None:
    assert main(["compile", "-c", RMSNORM, "--ir", "cuda", "--resources"]) == 0
    err = capsys.readouterr().err
    assert "k_rms_norm: grid 32x1x1, block 256x1x1" in err
    assert "registers" in err and "no spills" in err
    # its roofline: x (32 x 2048) and the weight read, y written: 0.53 MB at 4.25 TB/s
    assert "traffic 0.5 MB, roofline 0.1 µs" in err
    # and the estimate that the roofline guard compares with it, memory-bound here
    assert re.search(r"estimate [0-9.]+ µs \(memory\)", err)
