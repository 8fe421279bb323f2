"""Bad input gets a message for a person and exit status 1, never a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deplodock.cli import main


def _deplo_opt() -> str:
    local = Path(sys.executable).parent / "deplo-opt"
    found = str(local) if local.exists() else shutil.which("deplo-opt")
    assert found, "deplo-opt is not installed"
    return found


def _opt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_deplo_opt(), *args], capture_output=True, text=True)


MALFORMED = """func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = ten.map(%x) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%a: f32):
    %b = arith.mulf %a, %a :
    ten.yield %b : f32
  }
  func.return %y : tensor<4xf32>
}
"""


def test_malformed_mlir_names_file_line_col(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(MALFORMED)
    result = _opt(str(path))
    assert result.returncode == 1
    assert f"{path}:5:" in result.stderr and "error:" in result.stderr
    assert "Traceback" not in result.stderr


def test_verifier_error_names_op_and_rule(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(
        MALFORMED.replace(":\n    ten.yield", ": f32\n    ten.yield")
        .replace("-> tensor<4xf32> {\n  ^bb0", "-> tensor<5xf32> {\n  ^bb0")
        .replace("%y : tensor<4xf32>", "%y : tensor<5xf32>")
        .replace(") -> tensor<4xf32> {\n  %y", ") -> tensor<5xf32> {\n  %y")
    )
    result = _opt(str(path))
    assert result.returncode == 1
    assert "ten.map" in result.stderr and "shape" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_pass_lists_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "ok.mlir"
    path.write_text("func.func @f() {\n  func.return\n}\n")
    result = _opt(str(path), "-p", "tilify")
    assert result.returncode == 1
    assert "tilify" in result.stderr and "tileify" in result.stderr
    assert "Traceback" not in result.stderr


def test_deplodock_reads_malformed_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(MALFORMED)
    assert main(["compile", str(path), "--ir", "loop"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:5:" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "expr, words",
    [
        ("torch.relu(", ["invalid expression", "^"]),
        ("torch.randn(3) @ torch.randn(4)", ["RuntimeError"]),
        ("3 + 4", ["tensor"]),
        ("torch.nonexistent(torch.randn(3))", ["AttributeError"]),
    ],
)
def test_expression_errors(expr: str, words: list[str], capsys) -> None:
    assert main(["compile", "-c", expr, "--ir", "torch"]) == 1
    err = capsys.readouterr().err
    for word in words:
        assert word in err
    assert "Traceback" not in err


def test_two_programs_at_once(tmp_path: Path, capsys) -> None:
    assert main(["compile", str(tmp_path / "x.mlir"), "-c", "torch.randn(2)"]) == 1
    assert "exactly one program" in capsys.readouterr().err


# --- the error boundary (deplodock.boundary) ---------------------------------------------

RMS = "torch.nn.RMSNorm(64)(torch.randn(8,64))"


def test_an_unwritable_output_path_is_refused_before_any_work(capsys, monkeypatch) -> None:
    import deplodock.cli as cli

    def no_work(*args, **kwargs):
        raise AssertionError("the program was loaded before the options were checked")

    monkeypatch.setattr(cli, "_load", no_work)
    assert main(["compile", "-c", RMS, "-o", "/nonexistent/dir/out.cu"]) == 1
    assert "cannot write /nonexistent/dir/out.cu: no directory" in capsys.readouterr().err


def test_an_unknown_arch_is_refused(capsys) -> None:
    assert main(["compile", "-c", RMS, "--arch", "banana", "--ir", "cuda"]) == 1
    assert "unknown CUDA architecture 'banana'" in capsys.readouterr().err


def test_a_lower_level_file_asked_for_a_higher_level(tmp_path: Path, capsys) -> None:
    path = tmp_path / "rms.loop.mlir"
    assert main(["compile", "-q", "-c", RMS, "--ir", "loop", "-o", str(path)]) == 0
    assert main(["compile", str(path), "--ir", "torch"]) == 1
    err = capsys.readouterr().err
    assert "the program is at the loop level, below --ir torch" in err


def test_a_bad_pipeline_spec_is_a_message(tmp_path: Path) -> None:
    path = tmp_path / "rms.loop.mlir"
    assert main(["compile", "-q", "-c", RMS, "--ir", "loop", "-o", str(path)]) == 0
    result = _opt(str(path), "-p", "tileify,cooperative-reduce{threads=128")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "bad pass pipeline" in result.stderr and "Malformed pass arguments" in result.stderr
    result = _opt(str(path), "-t", "cuda")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cannot emit CUDA" in result.stderr and "loop.kernel" in result.stderr


def test_ctrl_c_exits_130_quietly(capsys) -> None:
    from deplodock.boundary import EXIT_INTERRUPTED, guarded

    def interrupted() -> int:
        raise KeyboardInterrupt

    assert guarded("deplodock", interrupted) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "deplodock: interrupted\n"


def test_a_named_tuple_result_is_its_fields(capsys) -> None:
    """torch.max over a dim gives values and indices: two outputs, as a plain tuple does."""
    assert (
        main(["compile", "-q", "-c", "torch.max(torch.randn(4, 5), dim=0)", "--ir", "tensor"]) == 0
    )
    out = capsys.readouterr().out
    assert "-> (tensor<5xf32>, tensor<5xi64>)" in out


@pytest.mark.parametrize(
    ("expr", "rtol"),
    [
        ("torch.randn(4, 4) + 1", 1e-5),
        ("torch.randn(4, 4, dtype=torch.float16) * 2", 1e-3),
        ("torch.randn(4, 4, dtype=torch.bfloat16) + torch.randn(4, 4)", 1e-5),  # f32 result
        ("torch.randn(4, 4, dtype=torch.bfloat16) + 1", 1.6e-2),
    ],
)
def test_run_s_default_tolerance_follows_the_result_dtype(expr: str, rtol: float) -> None:
    from deplodock.cli import expression_rtol
    from deplodock.frontends.export import import_program
    from deplodock.frontends.expression import capture_expression

    module = import_program(capture_expression(expr).program).module
    assert expression_rtol(module) == rtol
