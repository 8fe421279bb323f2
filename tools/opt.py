"""``deplo-opt``: xDSL's opt driver with deplodock's dialects, passes and targets.

Everything upstream ``xdsl-opt`` offers stays (``--print-between-passes``,
``--split-input-file``, ``--verify-diagnostics``, pass options as ``-p name{opt=v}``);
added are the five project dialects, every project pass, and the ``cuda`` target.
Bad input ends with a message and exit status 1, never a traceback: a parse error as
``file:line:col: error: ...`` with the offending line, an unknown pass with the list of
known ones.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from deplodock.dialects import project_dialects
from deplodock.frontends.errors import UserInputError
from deplodock.passes import all_passes


def _cuda_target(module: ModuleOp, output: IO[str]) -> None:
    from deplodock.backends.cuda.emit import cuda_target

    cuda_target(module, output)


class DeploOptMain(xDSLOptMain):
    """xDSLOptMain plus the project's dialects, passes and the ``cuda`` target."""

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for dialect in project_dialects():
            self.ctx.register_dialect(dialect.name, lambda d=dialect: d)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets["cuda"] = _cuda_target


def format_parse_error(error: ParseError, filename: str) -> str:
    """``file:line:col: error: message`` followed by the source line and its caret.

    xDSL renders a parse error as ``name:line:col``, the source line, a caret line and the
    message; this puts the message on the first line as compilers do.
    """
    header, *snippet, message = str(error).splitlines()
    if header.startswith("<unknown>"):
        header = filename + header[len("<unknown>") :]
    return "\n".join([f"{header}: error: {message.strip()}", *snippet])


def _known_passes_message(bad: str) -> str:
    return f"deplo-opt: unknown pass '{bad}'; known passes: " + ", ".join(sorted(all_passes()))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        opt = DeploOptMain(description="deplodock's modular optimizer driver", args=args)
    except Exception as error:  # an unknown pass or a malformed pipeline spec
        text = str(error)
        if "Unrecognized pass" in text or "unknown pass" in text.lower():
            name = re.sub(r"[\[\]'\"]", "", text.split(":")[-1]).strip()
            print(_known_passes_message(name), file=sys.stderr)
        else:
            print(f"deplo-opt: {text}", file=sys.stderr)
        return 1
    filename = opt.args.input_file or "<stdin>"
    try:
        opt.run()
    except ParseError as error:
        print(format_parse_error(error, filename), file=sys.stderr)
        return 1
    except UserInputError as error:  # e.g. decompose listing unsupported ops
        print(f"deplo-opt: error: {error}", file=sys.stderr)
        return 1
    except (VerifyException, DiagnosticException) as error:
        print(f"{filename}: error: {error}", file=sys.stderr)
        return 1
    except FileNotFoundError as error:
        print(f"deplo-opt: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
