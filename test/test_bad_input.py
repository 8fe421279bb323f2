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
