"""The error boundary of ``deplodock`` and ``deplo-opt``: every failure is one message.

Exit statuses, the same for both commands:

- ``0``: done;
- ``1``: the input is wrong (IR that does not parse or verify, a bad option or path, an
  unknown arch, an unsupported op or type), or ``deplodock run`` found a mismatch with
  PyTorch; the message says what and where (``file:line:col``, the op and the rule);
- ``2``: ``deplodock run`` has no GPU to run on;
- ``3``: an internal compiler error, a bug of deplodock's: the message names the pass and
  the op it was rewriting, and the input IR of that pass is saved as a reproducer
  (``deplo-opt REPRO -p PASS`` fails the same way);
- ``130``: interrupted (Ctrl-C), quietly.

``DEPLODOCK_TRACEBACK=1`` re-raises instead, for the traceback. A pass that raises anything
but a ``UserInputError`` or a diagnostic of its own (``PassRefusal``: the input verified
but the pass cannot lower it, and says why) is wrapped in a ``PassError``, as is IR that
fails to verify after it (``apply_pass``), so the boundary knows which pass failed; the
reproducers go to ``$DEPLODOCK_CACHE_DIR/reproducers`` (the kernel cache's directory,
``backends/cuda/cache.py``).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from deplodock.errors import UserInputError

if TYPE_CHECKING:  # the parser and the builtin dialect load only where used: the CLI's
    # answer from the output cache imports none of them (well under a second)
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation
    from xdsl.passes import ModulePass
    from xdsl.utils.exceptions import ParseError

EXIT_USER_ERROR = 1
EXIT_NO_GPU = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130


class PassError(Exception):
    """A pass, or the verification after it, failed on IR that verified before it."""

    def __init__(self, pass_name: str, op: Operation | None, cause: BaseException):
        self.pass_name = pass_name
        self.op = _describe(op)
        self.cause = cause
        self.reproducer: Path | None = None
        super().__init__(f"pass {pass_name} failed: {type(cause).__name__}: {cause}")


class PassRefusal(UserInputError):
    """A pass declined its input with a diagnostic of its own (``DiagnosticException``:
    IR that verifies but that the pass cannot lower, said why): the user's to change."""

    def __init__(self, pass_name: str, cause: BaseException):
        self.pass_name = pass_name
        self.cause = cause
        super().__init__(str(cause))


def _describe(op: Operation | None) -> str:
    if op is None:
        return ""
    name = op.attributes.get("sym_name") or getattr(op, "sym_name", None)
    label = f" @{name.data}" if name is not None and hasattr(name, "data") else ""
    return f"'{op.name}'{label}"


def culprit(error: BaseException) -> Operation | None:
    """The op the innermost frame of ``error``'s traceback was working on (a local that is
    an op other than the module), or None."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    found = None
    tb = error.__traceback__
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            if isinstance(value, Operation) and not isinstance(value, ModuleOp):
                found = value
                break
        tb = tb.tb_next
    return found


def apply_pass(
    pass_: ModulePass,
    ctx: Context,
    module: ModuleOp,
    verify: Callable[[ModuleOp], None] | None | str = "all",
) -> None:
    """Apply ``pass_``, then ``verify`` its result ("all": ``module.verify()``; None:
    not); a failure that is not the user's is a ``PassError`` naming the pass and the
    op."""
    from xdsl.utils.exceptions import DiagnosticException, VerifyException

    if verify == "all":
        verify = type(module).verify
    try:
        pass_.apply(ctx, module)
    except VerifyException as error:  # an op the pass built is invalid: the pass's bug
        raise PassError(pass_.name, culprit(error), error) from error
    except DiagnosticException as error:
        raise PassRefusal(pass_.name, error) from error
    except (UserInputError, PassError, KeyboardInterrupt):
        raise
    except Exception as error:  # noqa: BLE001 - every other failure is a compiler bug
        raise PassError(pass_.name, culprit(error), error) from error
    try:
        if verify is not None:
            verify(module)
    except (KeyboardInterrupt, PassError):
        raise
    except Exception as error:  # noqa: BLE001 - every other failure is a compiler bug
        raise PassError(pass_.name, culprit(error), error) from error


def save_reproducer(text: str, pass_name: str) -> Path:
    """Keep ``text`` (the failing pass's input) where the kernel cache lives."""
    from deplodock.backends.cuda.cache import default_cache_dir

    folder = default_cache_dir() / "reproducers"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pass_name}-{hashlib.sha1(text.encode()).hexdigest()[:12]}.mlir"
    path.write_text(text)
    return path


def _tracking_parser(ctx: Context, text: str, filename: str):
    """xDSL's parser, remembering the last token it consumed (where a failure that is not
    a ``ParseError`` happened)."""
    from xdsl.parser import Parser

    class TrackingParser(Parser):
        last = None

        def _consume_token(self, expected_kind=None):
            self.last = super()._consume_token(expected_kind)
            return self.last

    return TrackingParser(ctx, text, filename)


def parse_text(ctx: Context, text: str, filename: str) -> ModuleOp:
    """Parse IR text; any failure is a ``ParseError`` at the last token the parser read
    (an attribute whose type cannot hold its value, ``0xff800000 : f16``, raises others)."""
    from xdsl.utils.exceptions import ParseError

    parser = _tracking_parser(ctx, text, filename)
    try:
        return parser.parse_module()
    except ParseError:
        raise
    except Exception as error:  # noqa: BLE001 - a value its attribute cannot hold
        token = parser.last or parser._current_token
        raise ParseError(token.span, f"{type(error).__name__}: {error}") from None


def verify_input(module: ModuleOp) -> None:
    """The verifiers and SSA scope (``dialects/scope.py``) on a module the user gave."""
    from deplodock.dialects.scope import check_scopes

    check_scopes(module)  # first: the verifiers assume every value is defined before use
    module.verify()


def parse_ir(ctx: Context, text: str, filename: str) -> ModuleOp:
    """Parse and verify IR text; every problem is a ``UserInputError`` with its place
    (``file:line:col`` for the parser's, the op and the rule for the verifier's)."""
    from xdsl.utils.exceptions import ParseError, VerifyException

    try:
        module = parse_text(ctx, text, filename)
    except ParseError as error:
        raise UserInputError(format_parse_error(error, filename)) from None
    try:
        verify_input(module)
    except VerifyException as error:
        raise UserInputError(f"{filename}: {error}") from None
    return module


def format_parse_error(error: ParseError, filename: str) -> str:
    """``file:line:col: error: message`` followed by the source line and its caret.

    xDSL renders a parse error as ``name:line:col``, the source line, a caret line and the
    message; this puts the message on the first line as compilers do.
    """
    header, *snippet, message = str(error).splitlines()
    if header.startswith("<unknown>"):
        header = filename + header[len("<unknown>") :]
    return "\n".join([f"{header}: error: {message.strip()}", *snippet])


def check_output_path(path: str | None) -> None:
    """Fail before any work when ``path`` cannot be written."""
    if not path:
        return
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UserInputError(f"cannot write {path}: it is a directory")
    if not folder.is_dir():
        raise UserInputError(f"cannot write {path}: no directory {folder}")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserInputError(f"cannot write {path}: permission denied")


YOUNG_COLLECTION = 100_000
"""Allocations between two collections of Python's youngest generation while compiling
(Python's default: 700)."""


@contextlib.contextmanager
def collect_rarely() -> Iterator[None]:
    """Python's cyclic garbage collector run less often (``YOUNG_COLLECTION``) for the
    duration: the IR is made of millions of small linked objects that live as long as the
    module does, and each young-generation collection walked them all again for nothing
    back (on TinyLlama, a quarter of a cold compile: restacking 3.0 -> 1.5 s, the kernel
    level 2.7 -> 1.9 s, about 0.5 GB peak either way). A decorator too: ``@collect_rarely()``."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@collect_rarely()
def guarded(
    prog: str, body: Callable[[], int], reproduce: Callable[[PassError], str] | None = None
) -> int:
    """Run ``body`` (collecting rarely: ``collect_rarely``) and turn what it raises into a
    message and an exit status (above).

    ``reproduce(error)`` gives the text of the failing pass's input, for the reproducer."""
    if os.environ.get("DEPLODOCK_TRACEBACK"):
        return body()
    try:
        return body()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UserInputError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # `deplodock ... | head`: the reader left
        sys.stderr.close()
        return 0
    except PassError as error:
        where = f" on {error.op}" if error.op else ""
        print(
            f"{prog}: internal compiler error in pass {error.pass_name}{where}: "
            f"{type(error.cause).__name__}: {_first_line(error.cause)}",
            file=sys.stderr,
        )
        if reproduce is not None:
            try:
                path = save_reproducer(reproduce(error), error.pass_name)
                print(
                    f"  its input is saved at {path}\n"
                    f"  (deplo-opt {path} -p {error.pass_name} reproduces it)",
                    file=sys.stderr,
                )
            except Exception as again:  # noqa: BLE001 - the report must still come out
                print(f"  (no reproducer: {type(again).__name__}: {again})", file=sys.stderr)
        _bug_footer(prog)
        return EXIT_INTERNAL_ERROR
    except Exception as error:  # noqa: BLE001 - a compiler bug outside any pass
        from deplodock.backends.cuda.nvrtc import NvrtcError

        kind = "NVRTC failed" if isinstance(error, NvrtcError) else "internal compiler error"
        print(f"{prog}: {kind}: {type(error).__name__}: {error}", file=sys.stderr)
        _bug_footer(prog)
        return EXIT_INTERNAL_ERROR


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def _bug_footer(prog: str) -> None:
    print(
        f"  this is a bug of {prog}'s, not of the input (exit status 3); "
        "DEPLODOCK_TRACEBACK=1 shows the traceback",
        file=sys.stderr,
    )
