"""The target (``deplodock.target``): every described arch gets the schedules its
features and sizes allow, compiles NVRTC-clean, and an unknown arch is refused first."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from deplodock.backends.cuda.emit import emit_kernel_sources
from deplodock.backends.cuda.nvrtc import compile_kernels
from deplodock.cli import main
from deplodock.frontends.capture import export_module
from deplodock.frontends.export import import_program
from deplodock.passes.tile.schedule.matmul import matmul_plan
from deplodock.pipeline import lower
from deplodock.target import TARGETS, UnknownTarget, target_for

ARCHS = [a for a in TARGETS if a != "sm_90a"]


class _Block(torch.nn.Module):
    """torch.matmul's operands stored both ways (the mixed rotation: cp.async where the
    target has it), then a softmax (a cooperative row reduction)."""

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.matmul(x, w), dim=-1)


def _lowered(arch: str, to: str = "kernel"):
    args = (torch.randn(512, 512), torch.randn(512, 512))
    module = import_program(export_module(_Block(), args, "block")).module
    return lower(module, to=to, arch=arch)


def test_an_unknown_arch_is_an_error_naming_the_known_ones() -> None:
    """sm_103 (B300) is one NVRTC 13 knows and deplodock has no numbers for."""
    known = "sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_120"
    with pytest.raises(UnknownTarget, match=known):
        target_for("sm_103")
    assert target_for(None) is TARGETS["sm_90"]


def test_the_cli_refuses_an_unknown_arch(capsys) -> None:
    assert main(["compile", "-c", "torch.relu(torch.randn(8))", "--arch", "sm_61"]) == 1
    assert "unknown CUDA architecture 'sm_61'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["compile", "run"])
def test_target_is_arch_and_refused_alike(command, capsys, monkeypatch) -> None:
    """``--target`` (the write-up's spelling) is ``--arch``: an unknown one is refused
    before any work (the expression is never evaluated), a known one reaches the passes."""
    import deplodock.frontends.expression as expression

    def never(*_):
        raise AssertionError("the program was captured before the arch was checked")

    monkeypatch.setattr(expression, "capture_expression", never)
    assert main([command, "-c", "torch.relu(torch.randn(8))", "--target", "sm_103"]) == 1
    err = capsys.readouterr().err
    assert "unknown CUDA architecture 'sm_103'" in err and "Traceback" not in err
    monkeypatch.undo()
    program = ["compile", "-c", "torch.relu(torch.randn(8))", "--ir", "cuda", "--resources"]
    assert main([*program, "--target", "sm_120"]) == 0
    assert "deplodock resources (sm_120, NVRTC)" in capsys.readouterr().err


def test_every_arch_nvrtc_knows_and_deplodock_describes_is_a_datasheet_part() -> None:
    """Each target names the part its numbers are from; the new ones have the features of
    their arch: TMA on sm_100 and sm_120, wgmma on sm_90a alone."""
    b200, rtx5090, orin = (target_for(a) for a in ("sm_100", "sm_120", "sm_87"))
    assert "B200" in b200.part and "5090" in rtx5090.part and "Orin" in orin.part
    assert b200.tma and rtx5090.tma and not orin.tma and orin.cp_async
    assert not b200.wgmma and not rtx5090.wgmma
    assert rtx5090.sm_count == 170 and rtx5090.shared_bytes == 99 * 1024
    assert rtx5090.l2_bytes == 96 << 20 and b200.shared_bytes == 227 * 1024


def test_a_pass_option_names_an_unknown_arch(tmp_path) -> None:
    found = Path(sys.executable).parent / "deplo-opt"
    tool = str(found) if found.exists() else shutil.which("deplo-opt")
    source = tmp_path / "m.mlir"
    source.write_text("func.func @forward() {\n  func.return\n}\n")
    done = subprocess.run(
        [tool, str(source), "-p", "fill-k-loop{arch=sm_7}"], capture_output=True, text=True
    )
    assert done.returncode == 1, done.stderr
    assert "fill-k-loop: unknown CUDA architecture 'sm_7'" in done.stderr


def test_features_follow_the_arch() -> None:
    t75, t80, t90, t90a = (target_for(a) for a in ("sm_75", "sm_80", "sm_90", "sm_90a"))
    assert not t75.cp_async and t80.cp_async and not t80.tma and t90.tma
    assert t90a.wgmma and not t90.wgmma
    assert t75.shared_bytes < t80.shared_bytes < t90.shared_bytes
    t100, t120 = target_for("sm_100"), target_for("sm_120")
    assert t100.cp_async and t100.tma and t120.cp_async and t120.tma
    assert not t100.wgmma and not t120.wgmma


def test_the_matmul_plan_follows_the_sm_count() -> None:
    """A product of few output tiles splits K to fill the SMs: fewer splits on the T4's
    40 SMs than on the H200's 132."""
    for shape in ((32, 2048, 5632), (256, 256, 8192), (512, 512, 4096)):
        on_h200 = matmul_plan(*shape, target=target_for("sm_90"))
        on_t4 = matmul_plan(*shape, target=target_for("sm_75"))
        assert on_h200 is not None and on_t4 is not None
        assert on_t4[1] < on_h200[1], shape


def test_sm_75_has_no_async_copies_and_no_mixed_double_buffer() -> None:
    """Without cp.async a loop whose slabs are stored both ways would be all register
    prefetch, measured a loss: it stays single-buffered. sm_80 and sm_90 double it and
    fill the source-order slab with cp.async."""
    old = str(_lowered("sm_75", to="tile"))
    new = str(_lowered("sm_80", to="tile"))
    assert "async" not in old and "buffers 2" not in old
    assert "async" in new and "buffers 2" in new


@pytest.mark.parametrize("arch", ARCHS)
def test_every_target_compiles_nvrtc_clean(arch) -> None:
    sources = emit_kernel_sources(_lowered(arch))
    text = "".join(sources.values())
    assert ("cp.async" in text) == target_for(arch).cp_async
    compiled = compile_kernels(sources, arch=arch, cache=False)
    assert compiled.resources and not any(r.spills for r in compiled.resources.values())


def test_run_refuses_an_arch_newer_than_the_gpu(monkeypatch, capsys) -> None:
    """On an H200 (sm_90) a program planned for sm_120 would not load: run says so before
    any work; an older arch runs there (compiled for the GPU present)."""
    from deplodock.backends.cuda import driver

    monkeypatch.setattr(driver, "gpu_available", lambda: True)
    monkeypatch.setattr(driver, "current_arch", lambda device=None: "sm_90")
    assert main(["run", "-c", "torch.relu(torch.randn(8))", "--target", "sm_120"]) == 1
    err = capsys.readouterr().err
    assert "--arch sm_120 is newer than this machine's GPU (sm_90)" in err
    assert "Traceback" not in err
    from deplodock.cli import _check_gpu_runs

    _check_gpu_runs("sm_80")  # no error: planned for sm_80, compiled for sm_90
