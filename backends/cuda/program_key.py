"""The program cache's key, and the output cache: light enough to answer a warm command.

A warm ``deplodock compile`` is a key and a file read; computing the key must not load
what the compile itself needs (torch: about 2 s to import on the 2-core machine, xDSL and
the passes: about 1 s). So the key reads the versions from the installed packages'
metadata, NVRTC's from the NVRTC library, and the compiler's own sources as files
(``compiler_hash``); ``program_cache.py`` (the whole programs, which do need torch)
imports it from here. See ``program_cache.py``'s docstring for what the key covers.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from .cache import DiskCache, cache_enabled, default_cache_dir
from .nvrtc import compile_options, nvrtc_version

PROGRAM_CACHE_FORMAT = 3  # 2: each step's tensor maps (TMA); 3: its dynamic shared bytes
"""Bump when the key's recipe or the file layout changes (the compiler hash covers this
file too, so any edit here already misses; the number says so on purpose)."""

# The package and the folders mapped into it (pyproject.toml's package-dir); a plain
# install holds them all under the first, an editable one beside it.
_PACKAGES = (
    "deplodock",
    "deplodock.dialects",
    "deplodock.frontends",
    "deplodock.backends",
    "deplodock.passes",
)


def _version(package: str) -> str:
    """The installed version of ``package`` (from its metadata: no import), else its
    ``__version__``."""
    try:
        return version(package)
    except PackageNotFoundError:
        return str(__import__(package).__version__)


@functools.cache
def compiler_hash() -> str:
    """sha256 of every .py file of the deplodock package (path and bytes), computed once
    per process (about 100 files: milliseconds)."""
    files: dict[Path, str] = {}
    for package in _PACKAGES:
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            for path in Path(root).rglob("*.py"):
                files.setdefault(path.resolve(), f"{package}/{path.relative_to(root).as_posix()}")
    digest = hashlib.sha256()
    for path, name in sorted(files.items(), key=lambda item: item[1]):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def program_key(identity: Any, arch: str, options: Sequence[str] = ()) -> str:
    """The cache key of the program ``identity`` (JSON-able) compiled for ``arch`` with
    NVRTC ``options`` (hex sha256; see the module docstring)."""
    recipe = json.dumps(
        {
            "format": PROGRAM_CACHE_FORMAT,
            "compiler": compiler_hash(),
            "torch": _version("torch"),
            "xdsl": _version("xdsl"),
            "nvrtc": list(nvrtc_version()),
            "options": compile_options(arch, options),
            "arch": arch,
            "program": identity,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(recipe.encode()).hexdigest()


class OutputCache(DiskCache):
    """What a command printed, by what it was computed from: ``deplodock compile``'s IR
    or CUDA (the key: ``program_key`` of the input's identity, the level, the options);
    also the list of ops the capture keeps whole (``api._lowered_targets``), which a warm
    ``deplodock.compile`` reads instead of importing the decompositions.
    The file: magic, sha256 of key + text, the UTF-8 text; anything else is a miss."""

    FOLDER, SUFFIX, LABEL = "outputs", ".txt", "deplodock output cache"
    MAGIC = b"DPDKOUT1"

    def _encode(self, key: str, entry: str) -> bytes:
        body = entry.encode()
        return self.MAGIC + hashlib.sha256(key.encode() + body).digest() + body

    def _decode(self, key: str, data: bytes) -> str | None:
        magic, digest, body = data[:8], data[8:40], data[40:]
        if magic != self.MAGIC or hashlib.sha256(key.encode() + body).digest() != digest:
            return None
        return body.decode()


def default_output_cache() -> OutputCache | None:
    """The output cache (the kernel cache's root and switch), or None when off."""
    return OutputCache(default_cache_dir()) if cache_enabled() else None
