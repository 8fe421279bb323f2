"""Runs the lit + FileCheck suite under test/filecheck as part of pytest.

One pytest command then runs every test of the project; a failing FileCheck test shows
lit's own report (the RUN line, the input and FileCheck's diagnostics).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).parent / "filecheck"
BIN = Path(sys.executable).parent  # deplo-opt, lit and filecheck live beside python


def _lit() -> str | None:
    return str(BIN / "lit") if (BIN / "lit").exists() else shutil.which("lit")


@pytest.mark.skipif(_lit() is None, reason="lit is not installed (pip install -e '.[test]')")
def test_filecheck_suite() -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [_lit(), "-q", "-j2", str(SUITE)], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
