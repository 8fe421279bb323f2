"""``deplodock compile`` answers from the output cache when nothing it was computed from
changed (the program's identity, the level, ``--debuginfo``, ``-p``, the compiler, the
versions, the arch), and compiles again when anything did; a warm answer imports neither
torch nor the passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deplodock import cli
from deplodock.backends.cuda.program_key import OutputCache

EXPR = "torch.relu(torch.randn(3, 4)) * 2.0"


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DEPLODOCK_CACHE", raising=False)
    return tmp_path / "cache"


def _compile(args: list[str], capsys) -> str:
    assert cli.main(["compile", *args]) == 0
    return capsys.readouterr().out


def _no_compiling(monkeypatch) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("compiled although the output was cached")

    monkeypatch.setattr(cli, "_load", refuse)


def test_second_compile_is_read_back(cache_dir: Path, capsys, monkeypatch) -> None:
    first = _compile(["-c", EXPR, "--ir", "loop"], capsys)
    assert "loop.kernel" in first
    assert len(list((cache_dir / "outputs").rglob("*.txt"))) == 1
    with monkeypatch.context() as patch:
        _no_compiling(patch)
        assert _compile(["-c", EXPR, "--ir", "loop"], capsys) == first
    # another level, another expression, --no-cache: compiled
    assert "tile.kernel" in _compile(["-c", EXPR, "--ir", "tile"], capsys)
    assert "2.000000e+00" not in _compile(
        ["-c", EXPR.replace(" * 2.0", ""), "--ir", "loop"], capsys
    )
    _compile(["-c", EXPR, "--ir", "loop", "--no-cache"], capsys)
    assert len(list((cache_dir / "outputs").rglob("*.txt"))) == 3


def test_a_changed_file_is_compiled_again(cache_dir: Path, tmp_path: Path, capsys) -> None:
    path = tmp_path / "p.mlir"
    path.write_text(_compile(["-c", EXPR, "--ir", "loop"], capsys))
    lowered = _compile([str(path), "--ir", "kernel"], capsys)
    path.write_text(_compile(["-c", EXPR.replace("2.0", "3.0"), "--ir", "loop"], capsys))
    again = _compile([str(path), "--ir", "kernel"], capsys)
    assert "3.000000e+00" in again and again != lowered


def test_a_damaged_entry_is_a_miss(cache_dir: Path, capsys) -> None:
    first = _compile(["-c", EXPR, "--ir", "loop"], capsys)
    (entry,) = (cache_dir / "outputs").rglob("*.txt")
    entry.write_bytes(entry.read_bytes()[:-3] + b"xyz")
    assert OutputCache(cache_dir).get(entry.stem) is None
    assert _compile(["-c", EXPR, "--ir", "loop"], capsys) == first


def test_a_warm_answer_loads_neither_torch_nor_the_passes(cache_dir: Path) -> None:
    command = [sys.executable, "-m", "deplodock.cli", "compile", "-c", EXPR, "--ir", "loop"]
    subprocess.run(command, check=True, capture_output=True)
    probe = (
        "import sys, runpy; sys.argv = " + repr(command[2:]).replace("'-m', ", "") + ";\n"
        "try:\n    runpy.run_module('deplodock.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('torch' in sys.modules, 'deplodock.pipeline' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    assert "loop.kernel" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "False False"


def test_deplo_opt_reads_a_pipeline_it_ran_back(cache_dir: Path, tmp_path: Path, capsys) -> None:
    from deplodock import opt

    path = tmp_path / "p.mlir"
    path.write_text(_compile(["-c", EXPR, "--ir", "loop"], capsys))
    argv = [str(path), "-p", "tileify,blockify-launch"]
    assert opt.main(argv) == 0
    first = capsys.readouterr().out
    assert "tile.kernel" in first

    def refuse(self, prog):
        raise AssertionError("the passes ran although the output was cached")

    original = opt.DeploOptMain.apply_passes
    opt.DeploOptMain.apply_passes = refuse
    try:
        assert opt.main(argv) == 0
        assert capsys.readouterr().out == first
        assert opt.main([str(path), "-p", "tileify"]) != 0  # another pipeline: it runs
    finally:
        opt.DeploOptMain.apply_passes = original


def test_deplo_opt_time_passes_shows_each_pass_on_stderr(
    cache_dir: Path, tmp_path: Path, capsys
) -> None:
    """``--time-passes``: the stage table (parse, each pass, print; seconds and peak RSS)
    on stderr, the IR alone on stdout, and the output cache neither read nor written."""
    from deplodock import opt

    path = tmp_path / "p.mlir"
    path.write_text(_compile(["-c", EXPR, "--ir", "loop"], capsys))
    assert opt.main([str(path), "-p", "tileify,blockify-launch", "--time-passes"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("builtin.module") and "stats" not in captured.out
    table = captured.err.splitlines()
    assert table[0] == f"deplodock stats: deplo-opt {path}"
    steps = [line.split()[0] for line in table[2:-1]]
    assert steps == ["parse", "tileify", "blockify-launch", "print"], table
    assert all(line.endswith(" MB") for line in table[2:-1]) and table[-1].split()[0] == "total"
    assert opt.main([str(path), "-p", "tileify,blockify-launch", "--time-passes"]) == 0
    assert "blockify-launch" in capsys.readouterr().err  # ran again: not from the cache
