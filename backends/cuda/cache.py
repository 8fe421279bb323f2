"""The on-disk cache of compiled kernels: NVRTC output (cubin + ptxas report) by source.

A whole model is hundreds of kernels, most of them the same code for every decoder layer,
and NVRTC spends tens of milliseconds on each; this cache makes the second compile of a
program (and every kernel another program already compiled) a file read.

**Key.** ``unit_key`` hashes (sha256) everything that decides the cubin: the unit's
normalised source (``nvrtc.normalise_kernel``: kernel name and parameter names made
placeholders), the arch, the full NVRTC option list, the NVRTC version and
``CACHE_FORMAT``. Anything else changing (the headers of a different CUDA install, say)
comes with a different NVRTC version or ``-I`` option.

**Value.** One file per key, ``<dir>/kernels/<key[:2]>/<key>.cubin``: a fixed header
(magic, format, lengths, sha256 of key + body), then a small JSON (the function's name in
the cubin, the NVRTC log with the ptxas resource report), then the cubin. A file whose
magic, lengths or hash do not check out (truncated, overwritten, bit rot) reads as a miss:
the unit is compiled again and the entry rewritten; a bad entry never raises.

**Writes are atomic.** An entry is written to a temporary file in its own directory,
flushed and fsync'd, then ``os.replace``d onto its name, so a reader sees no file or a
whole one, and two processes compiling the same unit at once both succeed (the last
rename wins; both wrote the same bytes). A temporary file is removed if its write fails;
only a process killed mid-write leaves one (``.*.tmp``, never read).

**Where.** ``$DEPLODOCK_CACHE_DIR``, else ``$XDG_CACHE_HOME/deplodock``, else
``~/.cache/deplodock``. ``DEPLODOCK_CACHE=0`` (or ``off``/``false``/``no``) turns it off;
so does ``cache=False`` where a compile takes one. An unwritable directory is warned about
once and then compiled around. There is no eviction: entries are tens of KB; delete the
directory to reclaim it.

The program cache (``program_cache.py``: whole compiled programs, so a warm compile skips
the lowering too) lives under the same root, in ``programs/``, and obeys the same switch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

__all__ = [
    "CACHE_FORMAT",
    "CacheEntry",
    "DiskCache",
    "KernelCache",
    "atomic_write",
    "cache_enabled",
    "default_cache",
    "default_cache_dir",
    "unit_key",
]

CACHE_FORMAT = 1
"""Bump when the key's recipe or the file layout changes: old entries are then never read."""

_MAGIC = b"DPDKCUBN"
# magic, format, JSON length, cubin length, sha256(key + JSON + cubin)
_HEADER = struct.Struct("<8sIIQ32s")
_OFF = frozenset({"0", "off", "false", "no"})

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheEntry:
    """What NVRTC made of one unit."""

    symbol: str  # the kernel function's name in the cubin
    cubin: bytes
    log: str  # the full NVRTC log, with the ptxas resource report


def cache_enabled() -> bool:
    """False when ``DEPLODOCK_CACHE`` says off (``0``, ``off``, ``false``, ``no``)."""
    return os.environ.get("DEPLODOCK_CACHE", "1").strip().lower() not in _OFF


def default_cache_dir() -> Path:
    """``$DEPLODOCK_CACHE_DIR``, else ``$XDG_CACHE_HOME/deplodock``, else ``~/.cache/deplodock``."""
    if os.environ.get("DEPLODOCK_CACHE_DIR"):
        return Path(os.environ["DEPLODOCK_CACHE_DIR"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "deplodock"
    return Path.home() / ".cache" / "deplodock"


def default_cache() -> KernelCache | None:
    """The cache the environment asks for, or None when it is turned off."""
    return KernelCache(default_cache_dir()) if cache_enabled() else None


def unit_key(source: str, arch: str, options: Sequence[str], nvrtc_version: tuple[int, int]) -> str:
    """The cache key of one compile unit (hex sha256); see the module docstring."""
    recipe = json.dumps(
        [CACHE_FORMAT, list(nvrtc_version), arch, list(options), source], ensure_ascii=False
    )
    return hashlib.sha256(recipe.encode()).hexdigest()


class DiskCache:
    """Entries on disk under ``root``, one file each at ``root/FOLDER/<key[:2]>/<key>SUFFIX``,
    encoded by ``_encode`` and decoded by ``_decode`` (None, or raising, for a file that
    does not check out: a miss, warned about, never an error). Writes are atomic
    (``atomic_write``); an unwritable directory is warned about once and then cached
    around. Thread-safe; the counters (``hits``, ``misses``, ``corrupt``, ``writes``) say
    what this instance did."""

    FOLDER: ClassVar[str]
    SUFFIX: ClassVar[str]
    LABEL: ClassVar[str]  # how the warnings name the cache

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.hits = self.misses = self.corrupt = self.writes = 0
        self._lock = threading.Lock()
        self._warned = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r})"

    def path(self, key: str) -> Path:
        return self.root / self.FOLDER / key[:2] / f"{key}{self.SUFFIX}"

    def get(self, key: str) -> Any:
        """The entry for ``key``, or None when there is none or it does not check out."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:  # no entry (the usual miss), or unreadable: compile it
            self._count("misses")
            return None
        try:
            entry = self._decode(key, data)
        except Exception as error:  # anything off in a file is a miss, never a crash
            log.debug("%s: %s does not decode: %r", self.LABEL, path, error)
            entry = None
        if entry is None:
            log.warning("%s: %s is damaged; compiling it again", self.LABEL, path)
            self._count("corrupt")
            self._count("misses")
            return None
        self._count("hits")
        return entry

    def put(self, key: str, entry: Any) -> bool:
        """Store ``entry`` atomically; False (warned once) when it cannot be written."""
        path = self.path(key)
        try:
            atomic_write(path, self._encode(key, entry), prefix=f".{key[:16]}.")
        except (OSError, TypeError, ValueError, RuntimeError) as error:
            with self._lock:
                warn, self._warned = not self._warned, True
            if warn:
                log.warning("%s: cannot write to %s (%s); not caching", self.LABEL, path, error)
            return False
        self._count("writes")
        return True

    def _count(self, counter: str) -> None:
        with self._lock:
            setattr(self, counter, getattr(self, counter) + 1)

    def _encode(self, key: str, entry: Any) -> bytes:
        raise NotImplementedError

    def _decode(self, key: str, data: bytes) -> Any:
        raise NotImplementedError


class KernelCache(DiskCache):
    """Compiled units on disk under ``root`` (see the module docstring for the layout).
    Units compile on a thread pool and each stores its own entry."""

    FOLDER, SUFFIX, LABEL = "kernels", ".cubin", "deplodock cache"

    def _encode(self, key: str, entry: CacheEntry) -> bytes:
        meta = json.dumps({"symbol": entry.symbol, "log": entry.log}).encode()
        body = meta + entry.cubin
        digest = hashlib.sha256(key.encode() + body).digest()
        return _HEADER.pack(_MAGIC, CACHE_FORMAT, len(meta), len(entry.cubin), digest) + body

    def _decode(self, key: str, data: bytes) -> CacheEntry | None:
        return _decode(key, data)


def atomic_write(path: Path, data: bytes, prefix: str = ".") -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in its directory, flushed
    and fsync'd, then ``os.replace``d onto ``path`` (see the module docstring). Makes the
    directory; raises OSError when it cannot write, leaving no temporary file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _decode(key: str, data: bytes) -> CacheEntry | None:
    """The entry in a file's bytes, or None if anything about them is off."""
    if len(data) < _HEADER.size:
        return None
    magic, version, meta_len, cubin_len, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC or version != CACHE_FORMAT:
        return None
    if _HEADER.size + meta_len + cubin_len != len(data):
        return None
    body = data[_HEADER.size :]
    if hashlib.sha256(key.encode() + body).digest() != digest:
        return None
    try:
        meta = json.loads(body[:meta_len])
        return CacheEntry(symbol=str(meta["symbol"]), cubin=body[meta_len:], log=str(meta["log"]))
    except (ValueError, KeyError, TypeError):
        return None
