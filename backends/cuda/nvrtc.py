"""Compile CUDA C++ to a cubin with NVRTC, and report each kernel's resources.

We ask NVRTC for a real cubin (``sm_90``, not ``compute_90``) rather than PTX: the SASS
is then fixed at compile time, ptxas runs here (so its resource report is available
even on a machine without a GPU), and loading the module later needs no JIT.

The resource report comes from ptxas itself: ``--ptxas-options=-v`` makes ptxas write
``Used N registers ... N bytes smem`` and ``N bytes stack frame, N bytes spill stores,
N bytes spill loads`` for every entry function into the NVRTC log, which we parse.

A program is compiled kernel by kernel (``compile_kernels``): each kernel is a unit of its
own (the emitter's helpers and includes, then its function), kernels that read the same
once their own name and their parameters' names are made placeholders (``normalise_kernel``:
the same projection in every decoder layer, differing only in the weight it reads) compile
once, units already in the disk cache (``cache.py``) are read back, and the rest compile on
a thread pool: NVRTC is thread-safe and cuda-bindings releases the GIL around its calls,
so N cores compile N units at once (measured: 2 threads on 2 cores halve the time).

Nothing here needs a GPU or a CUDA driver; only the NVRTC library (the
``nvidia-cuda-nvrtc`` wheel) and the CUDA headers (the ``nvidia-cuda-runtime`` wheel or
a CUDA toolkit) must be installed.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cuda.bindings import nvrtc as _nvrtc

from .cache import CacheEntry, KernelCache, default_cache, unit_key

__all__ = [
    "CompiledKernels",
    "CompiledModule",
    "KernelResources",
    "KernelUnit",
    "NvrtcError",
    "compile_cuda",
    "compile_kernels",
    "compile_options",
    "cuda_include_dir",
    "normalise_kernel",
    "nvrtc_version",
    "parse_ptxas_resources",
]

# Makes ptxas print per-kernel registers, shared memory, stack and spills into the log.
# (`-Xptxas=-v` is its short spelling.) Checked with NVRTC 13.0 and 13.5.
PTXAS_VERBOSE = "--ptxas-options=-v"
NO_CACHE = "--no-cache"


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel: the numbers that decide occupancy and spills."""

    name: str  # kernel function name, as in the cubin (mangled unless `extern "C"`)
    registers: int  # per thread
    shared_bytes: int  # static shared memory per block (dynamic comes at launch)
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    local_bytes: int  # stack frame, bytes per thread

    @property
    def spills(self) -> bool:
        """True when ptxas ran out of registers and spilled to local memory."""
        return self.spill_stores > 0 or self.spill_loads > 0


@dataclass(frozen=True)
class CompiledModule:
    """A cubin plus what produced it: the source, the arch, and the full NVRTC log."""

    source: str
    arch: str  # e.g. "sm_90"
    cubin: bytes
    log: str  # the full NVRTC log (front-end warnings and the ptxas report)
    resources: dict[str, KernelResources]  # per __global__ kernel name


class NvrtcError(Exception):
    """NVRTC rejected a program.

    The message holds the NVRTC log and the offending source lines with their numbers,
    so a failure in generated code reads without opening anything; the whole source is
    also kept on disk at ``source_path`` for a closer look.
    """

    def __init__(self, message: str, log: str = "", source_path: Path | None = None):
        super().__init__(message)
        self.log = log
        self.source_path = source_path


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """The (major, minor) version of the NVRTC library that was loaded."""
    err, major, minor = _nvrtc.nvrtcVersion()
    _check(err, "nvrtcVersion")
    return int(major), int(minor)


@functools.cache
def cuda_include_dir() -> str | None:
    """The directory holding the CUDA headers (cuda_fp16.h, ...), or None if none is found.

    NVRTC has no built-in search path, so kernels that ``#include <cuda_fp16.h>`` need
    ``-I``. We prefer the headers of the pip wheels (they ship with the NVRTC we load,
    so the versions match), then a CUDA toolkit.
    """
    candidates: list[Path] = []
    try:  # cuda-pathfinder knows every layout the wheels and toolkits use.
        from cuda.pathfinder import find_nvidia_header_directory

        found = find_nvidia_header_directory("cudart")
        if found:
            candidates.append(Path(found))
    except Exception:  # older pathfinder lacks it; fall back to our own search
        pass
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        # CUDA 13 wheels share nvidia/cu13; CUDA 12 wheels had one folder per component.
        candidates += [Path(root) / "cu13" / "include", Path(root) / "cuda_runtime" / "include"]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    for directory in candidates:
        if (directory / "cuda_fp16.h").is_file():
            return str(directory)
    return None


def compile_cuda(
    source: str, arch: str = "sm_90", options: Sequence[str] = (), name: str = "kernel.cu"
) -> CompiledModule:
    """Compile CUDA C++ ``source`` to a cubin for ``arch`` (``sm_XX``), with its resources.

    Default options are ``--std=c++17`` (dropped if ``options`` names a standard), the
    ptxas verbose report, ``--no-cache`` (see ``_default_options``), and ``-I`` for the
    CUDA headers. We do not pass
    ``-default-device``: generated kernels mark their device functions explicitly.
    Raises NvrtcError (log plus quoted source lines) if the program does not compile.
    """
    check_arch(arch)
    all_options = _default_options(arch, options) + list(options)

    err, prog = _nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        encoded = [o.encode() for o in all_options]
        (err,) = _nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _program_log(prog)
        if err != _nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _compile_error(source, arch, name, log, err, all_options)
        cubin = _cubin(prog)
    finally:
        _nvrtc.nvrtcDestroyProgram(prog)
    return CompiledModule(
        source=source, arch=arch, cubin=cubin, log=log, resources=parse_ptxas_resources(log)
    )


def check_arch(arch: str) -> None:
    """Raise ValueError unless ``arch`` names a real architecture (``sm_90``, ``sm_90a``)."""
    if not re.fullmatch(r"sm_\d+[af]?", arch):
        raise ValueError(f"arch must be a real architecture such as 'sm_90', got {arch!r}")


def compile_options(arch: str, options: Sequence[str] = ()) -> list[str]:
    """The full NVRTC option list a compile for ``arch`` with ``options`` uses (what the
    kernel cache and the program cache key on)."""
    check_arch(arch)
    return _default_options(arch, options) + list(options)


def _default_options(arch: str, user_options: Sequence[str]) -> list[str]:
    options = [f"--gpu-architecture={arch}", PTXAS_VERBOSE]
    if nvrtc_version() >= (12, 9):
        # NVRTC 12.9+ caches compilations in the driver's compute cache (on disk, across
        # processes, wherever a driver is present); a cache hit skips ptxas and leaves
        # the log empty, so the resource report would silently vanish.
        options.append(NO_CACHE)
    if not any(o.startswith(("--std", "-std")) for o in user_options):
        options.append("--std=c++17")
    include = cuda_include_dir()
    if include:
        options.append(f"-I{include}")
    return options


def _check(err: object, call: str) -> None:
    """Raise for a failed NVRTC API call other than compilation itself (rare: misuse, OOM)."""
    if err != _nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NvrtcError(f"{call} failed: {_error_name(err)}")


def _error_name(err: object) -> str:
    try:
        return _nvrtc.nvrtcGetErrorString(err)[1].decode()
    except Exception:  # a name is only for the message
        return str(err)


def _program_log(prog: object) -> str:
    err, size = _nvrtc.nvrtcGetProgramLogSize(prog)
    _check(err, "nvrtcGetProgramLogSize")
    buf = b" " * size
    (err,) = _nvrtc.nvrtcGetProgramLog(prog, buf)
    _check(err, "nvrtcGetProgramLog")
    return buf.rstrip(b"\0").decode(errors="replace").strip()


def _cubin(prog: object) -> bytes:
    err, size = _nvrtc.nvrtcGetCUBINSize(prog)
    _check(err, "nvrtcGetCUBINSize")
    if size == 0:
        raise NvrtcError("NVRTC produced no cubin: was the arch a virtual one (compute_XX)?")
    buf = b" " * size
    (err,) = _nvrtc.nvrtcGetCUBIN(prog, buf)
    _check(err, "nvrtcGetCUBIN")
    return buf


# --- a program, kernel by kernel, through the cache --------------------------------------

KERNEL_PLACEHOLDER = "@KERNEL@"
"""Stands for the kernel's name in a normalised source (not C: it is replaced before NVRTC)."""
_LOCAL = "_P{}"  # the names the kernel declares (parameters first), in a normalised source

_SIGNATURE = re.compile(
    r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(([^)]*)\)\s*\{'
)
# String and character literals (kept as they are), or an identifier that is not a member
# (``v.w``, ``p->x``) nor qualified (``ns::f``) nor the tail of a number (``1e5f``).
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|(?<![\w.])(?<!->)(?<!::)[A-Za-z_]\w*'
)
_LITERAL_OR_COMMENT = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|//[^\n]*|/\*.*?\*/', re.DOTALL
)
# A declaration: a type's last word, then the declared name, then ``=``, ``[`` or ``;``
# (``const float4 v =``, ``__shared__ __align__(16) float slab[544];``, ``for (int j =``).
_DECLARATION = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s+([A-Za-z_]\w*)\s*(?:=|\[|;)")
_NOT_TYPES = frozenset("return else case goto do typedef sizeof new delete throw".split())


def normalise_kernel(name: str, source: str) -> str:
    """``source`` (one kernel ``name`` and what it needs) with the kernel's name replaced by
    ``KERNEL_PLACEHOLDER`` and every name the kernel declares (its parameters, then its
    locals and shared arrays, in order) renamed ``_P0``, ``_P1``, ...

    Kernels of a program that differ only in names (every decoder layer's q projection,
    each reading its own weight and staging it in a slab named after it) then read the
    same and compile once. The renaming is consistent and confined to the kernel
    function; it skips string literals (inline PTX), members (``v.w``) and qualified
    names, and is left out (only the kernel's name replaced) when the signature is not
    the emitter's or a ``_P<n>`` name is already taken. Names do not reach the cubin (no
    debug info; an ``extern "C"`` kernel's ABI is its name and its parameters' types), so
    the unit's cubin is the one its kernels' own sources give. A declaration this misses
    only costs sharing; a name it wrongly takes for a local and that NVRTC then misses
    fails the unit, which ``compile_kernels`` then compiles from the kernel's own source.
    """
    match = next((m for m in _SIGNATURE.finditer(source) if m.group(1) == name), None)
    if match is None:
        return re.sub(rf"(?<![\w.]){re.escape(name)}\b", KERNEL_PLACEHOLDER, source)
    start = match.start()
    renames = {name: KERNEL_PLACEHOLDER}
    if "_P" not in source or not re.search(r"\b_P\d+\b", source):  # (`in` scans 20x faster)
        declared = [re.findall(r"\w+", p)[-1] for p in match.group(2).split(",") if p.strip()]
        code = _LITERAL_OR_COMMENT.sub(" ", source[match.end() :])
        declared += [m[2] for m in _DECLARATION.finditer(code) if m[1] not in _NOT_TYPES]
        for local in dict.fromkeys(declared):  # first declarations, in order
            if local not in renames:
                renames[local] = _LOCAL.format(len(renames) - 1)

    def rename(token: re.Match[str]) -> str:
        return renames.get(token.group(0), token.group(0))

    return source[:start] + _TOKEN.sub(rename, source[start:])


@dataclass(frozen=True)
class KernelUnit:
    """One NVRTC compile unit, shared by every kernel whose normalised source it is."""

    key: str  # the disk cache's key (cache.unit_key of the normalised source)
    symbol: str  # the function's name in the cubin: the kernel it was first compiled for
    compiled: CompiledModule  # the source as compiled, the cubin, the log, resources
    kernels: tuple[str, ...]  # the program's kernels that run this unit
    cached: bool  # read back from the disk cache rather than compiled now


@dataclass(frozen=True)
class CompiledKernels:
    """A program's kernels compiled one unit each: what ``compile_kernels`` returns."""

    arch: str
    units: tuple[KernelUnit, ...]  # in the order of their first kernel
    unit_of: dict[str, KernelUnit]  # kernel name -> its unit
    resources: dict[str, KernelResources]  # kernel name -> ptxas's report, under that name

    @property
    def cubin(self) -> bytes:
        """The first unit's cubin (each unit has its own: ``units[i].compiled.cubin``)."""
        return self.units[0].compiled.cubin if self.units else b""

    @property
    def compiled_now(self) -> int:
        """How many units NVRTC compiled (the rest came from the disk cache)."""
        return sum(not unit.cached for unit in self.units)


def compile_kernels(
    sources: Mapping[str, str],
    arch: str = "sm_90",
    options: Sequence[str] = (),
    *,
    cache: KernelCache | bool | None = None,
    jobs: int | None = None,
    aliases: Mapping[str, str] | None = None,
    order: Sequence[str] = (),
) -> CompiledKernels:
    """Compile each kernel of ``sources`` (kernel name -> a source holding it, as
    ``emit.emit_kernel_sources`` gives) for ``arch``, one NVRTC unit per distinct
    normalised source, each unit looked up in the disk cache first.

    ``cache``: a ``KernelCache``, False for none, None/True for the environment's
    (``cache.default_cache``: off with ``DEPLODOCK_CACHE=0``). ``jobs``: threads compiling
    the missing units (default: the cores this process may use). A unit that NVRTC rejects
    is compiled again from its kernel's own source, so the NvrtcError names the real
    kernel and parameters, quotes the offending lines and keeps that source on disk.

    ``aliases``: kernels with no source here, each running the unit of the kernel it
    names (which the caller has shown normalises alike: a decoder stack's copies of a
    layer, ``emit.shared_units``); ``order``: every kernel's name in program order, which
    each unit's ``kernels`` then follow (needed with ``aliases``).
    """
    store = default_cache() if cache is None or cache is True else cache or None
    all_options = compile_options(arch, options)
    version = nvrtc_version()

    grouped: dict[str, tuple[str, list[str]]] = {}  # key -> (normalised source, kernels)
    key_of: dict[str, str] = {}  # kernel -> key

    def compile_unit(key: str, text: str, symbol: str) -> CacheEntry:
        try:
            unit = compile_cuda(
                text.replace(KERNEL_PLACEHOLDER, symbol), arch, options, name=f"{symbol}.cu"
            )
        except NvrtcError:  # report it (or, failing that, compile it) with the real names
            unit = compile_cuda(sources[symbol], arch, options, name=f"{symbol}.cu")
        entry = CacheEntry(symbol=symbol, cubin=unit.cubin, log=unit.log)
        if store is not None:
            store.put(key, entry)
        return entry

    # A unit missing from the cache starts compiling as soon as its first kernel is
    # normalised, so NVRTC (which releases the GIL) overlaps the normalising of the rest.
    workers = jobs or _cores()
    pool = ThreadPoolExecutor(workers, thread_name_prefix="nvrtc") if workers > 1 else None
    done: dict[str, tuple[CacheEntry, bool]] = {}
    futures: dict[str, Future[CacheEntry]] = {}
    try:
        for name, source in sources.items():
            text = normalise_kernel(name, source)
            key = key_of[name] = unit_key(text, arch, all_options, version)
            if key in grouped:
                grouped[key][1].append(name)
                continue
            grouped[key] = (text, [name])
            entry = store.get(key) if store is not None else None
            if entry is not None:
                done[key] = (entry, True)
            elif pool is None:
                done[key] = (compile_unit(key, text, name), False)
            else:
                futures[key] = pool.submit(compile_unit, key, text, name)
        for key, future in futures.items():  # in program order: the first failure is reported
            done[key] = (future.result(), False)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    if aliases:
        for name, like in aliases.items():
            grouped[key_of[like]][1].append(name)
        position = {name: k for k, name in enumerate(order)}
        for _, kernels in grouped.values():
            kernels.sort(key=position.__getitem__)
    units: list[KernelUnit] = []
    unit_of: dict[str, KernelUnit] = {}
    resources: dict[str, KernelResources] = {}
    for key, (text, kernels) in grouped.items():
        entry, cached = done[key]
        compiled = CompiledModule(
            source=text.replace(KERNEL_PLACEHOLDER, entry.symbol),
            arch=arch,
            cubin=entry.cubin,
            log=entry.log,
            resources=parse_ptxas_resources(entry.log),
        )
        unit = KernelUnit(key, entry.symbol, compiled, tuple(kernels), cached)
        units.append(unit)
        report = compiled.resources.get(entry.symbol)
        for name in kernels:
            unit_of[name] = unit
            if report is not None:
                resources[name] = dataclasses.replace(report, name=name)
    return CompiledKernels(arch, tuple(units), unit_of, resources)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# --- the ptxas resource report ---------------------------------------------------------

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGISTERS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_resources(log: str) -> dict[str, KernelResources]:
    """Per-kernel resources from a ``ptxas -v`` report (as found in the NVRTC log).

    ptxas reports, for each entry function::

        ptxas info    : Compiling entry function 'k' for 'sm_90'
        ptxas info    : Function properties for k
        ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem

    Non-inlined device functions get "Function properties" lines too; they are read
    but only entry functions (kernels) are returned. Missing numbers count as 0.
    """
    entries: list[str] = []
    fields: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
            if current not in fields:
                entries.append(current)
                fields[current] = {}
        elif m := _PROPERTIES.search(line):
            current = m.group(1)
            fields.setdefault(current, {})
        elif current is not None and (m := _FRAME.search(line)):
            stack, stores, loads = (int(g) for g in m.groups())
            fields[current].update(local_bytes=stack, spill_stores=stores, spill_loads=loads)
        elif current is not None and (m := _REGISTERS.search(line)):
            fields[current]["registers"] = int(m.group(1))
            if s := _SMEM.search(line):
                fields[current]["shared_bytes"] = int(s.group(1))
    return {
        name: KernelResources(
            name=name,
            registers=fields[name].get("registers", 0),
            shared_bytes=fields[name].get("shared_bytes", 0),
            spill_stores=fields[name].get("spill_stores", 0),
            spill_loads=fields[name].get("spill_loads", 0),
            local_bytes=fields[name].get("local_bytes", 0),
        )
        for name in entries
    }


# --- compile errors ----------------------------------------------------------------------

_DIAGNOSTIC = re.compile(r"^(.*?)\((\d+)\): (?:catastrophic )?error\b", re.MULTILINE)
_MAX_QUOTED = 8  # offending lines quoted in the message; the log has the rest
_CONTEXT = 1  # lines of source around each offending line


def _keep_failed(source: str, name: str, log: str) -> Path:
    """Write a source NVRTC rejected, and its log beside it; the source's path."""
    import hashlib

    from deplodock.backends.cuda.cache import default_cache_dir

    stem = Path(name).stem or "kernel"
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    folder = default_cache_dir() / "failed"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}-{digest}{Path(name).suffix or '.cu'}"
    path.write_text(source)
    path.with_suffix(".log").write_text(log)
    return path


def _compile_error(
    source: str, arch: str, name: str, log: str, err: object, options: Sequence[str]
) -> NvrtcError:
    """An NvrtcError that keeps the source and the log in one known place (``failed/``
    under the kernel cache's directory, named by the source's hash, so a failure kept
    twice is one file) and quotes the lines the log blames."""
    path = _keep_failed(source, name, log)
    lines = source.splitlines()
    program = Path(name).name  # the name NVRTC's log gives the source
    blamed = sorted(
        {int(m.group(2)) for m in _DIAGNOSTIC.finditer(log) if Path(m.group(1)).name == program}
    )
    parts = [
        f"NVRTC could not compile {name} for {arch} ({_error_name(err)}).",
        f"Source kept at {path} (the log beside it: {path.with_suffix('.log').name})",
        f"Options: {' '.join(options)}",
        "--- NVRTC log ---",
        log or "(empty)",
    ]
    if blamed:
        parts.append("--- offending source lines ---")
        shown: set[int] = set()
        for lineno in blamed[:_MAX_QUOTED]:
            lo, hi = max(1, lineno - _CONTEXT), min(len(lines), lineno + _CONTEXT)
            if shown and lo - 1 not in shown:
                parts.append("      ...")
            for n in range(lo, hi + 1):
                if n not in shown:
                    shown.add(n)
                    marker = ">" if n in blamed else " "
                    parts.append(f"{marker} {n:5d} | {lines[n - 1]}")
        if len(blamed) > _MAX_QUOTED:
            parts.append(f"  ({len(blamed) - _MAX_QUOTED} more offending lines in the log)")
    return NvrtcError("\n".join(parts), log=log, source_path=path)
