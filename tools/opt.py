"""``deplo-opt``: xDSL's opt driver with deplodock's dialects, passes and targets.

Everything upstream ``xdsl-opt`` offers stays (``--print-between-passes``,
``--split-input-file``, ``--verify-diagnostics``, pass options as ``-p name{opt=v}``);
added are the five project dialects, every project pass, and the ``cuda`` target.

Its errors go through ``deplodock.boundary`` (exit statuses there): bad input ends with a
message and exit 1, never a traceback: a parse error as ``file:line:col: error: ...`` with
the offending line (a constant its type cannot hold too), a verifier error with the op and
the rule (SSA scope included, ``dialects/scope.py``), an unknown pass with the list of
known ones, a malformed pipeline spec, IR at a level the ``cuda`` target cannot emit. A
pass that fails on IR that verified is an internal compiler error (exit 3): the message
names the pass and the op, and the pass's input is saved as a reproducer.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from deplodock.boundary import (
    EXIT_USER_ERROR,
    PassError,
    apply_pass,
    check_output_path,
    culprit,
    format_parse_error,
    guarded,
    parse_text,
    verify_input,
)
from deplodock.dialects import project_dialects
from deplodock.errors import UserInputError
from deplodock.passes import all_passes, decides_from_hardware
from deplodock.stages import Stages
from deplodock.target import DEFAULT_ARCH, TARGETS, UnknownTarget, target_for

__all__ = ["DeploOptMain", "format_parse_error", "main"]


def _cuda_target(module: ModuleOp, output: IO[str]) -> None:
    from deplodock.backends.cuda.emit import EmitError, cuda_target

    try:
        cuda_target(module, output)
    except EmitError as error:  # IR the emitter cannot take: not lowered far enough
        raise UserInputError(f"cannot emit CUDA: {error}") from None
    except Exception as error:  # noqa: BLE001 - the emitter failing on verified IR
        raise PassError("cuda target", culprit(error), error) from error


class DeploOptMain(xDSLOptMain):
    """xDSLOptMain plus the project's dialects, passes and the ``cuda`` target, with each
    pass applied through ``boundary.apply_pass`` so a failure names its pass."""

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for dialect in project_dialects():
            self.ctx.register_dialect(dialect.name, lambda d=dialect: d)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["mlir"] = self._parse_mlir

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets["cuda"] = _cuda_target

    def register_all_arguments(self, arg_parser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--arch",
            default=None,
            help="the target of every pass that decides from the hardware "
            f"(deplodock.target: {', '.join(TARGETS)}); a pass's own "
            "{arch=..} other than the default sm_90 wins (-t/--target is xdsl-opt's output "
            "format: -t cuda)",
        )

    def _for_arch(self, pass_):
        """``pass_`` for ``--arch`` when it decides from the hardware and was not given an
        arch of its own (``deplodock.target``)."""
        arch = self.args.arch
        if arch is None or not decides_from_hardware(pass_) or pass_.arch != DEFAULT_ARCH:
            return pass_
        return dataclasses.replace(pass_, arch=arch)

    def run(self) -> None:
        """xDSL's run, answered from the output cache when this file went through this
        pipeline before (``_output_key``); a single module's output is stored."""
        from deplodock.backends.cuda.program_key import default_output_cache

        key = self._output_key()
        store = default_output_cache() if key is not None else None
        text = store.get(key) if store is not None else None
        if text is not None:
            stream = self.prepare_output()
            stream.write(text)
            if stream is not sys.stdout:
                stream.close()
            return
        self.printed: list[str] = []
        self.stages = Stages(f"deplo-opt {self.args.input_file or '<stdin>'}")
        try:
            super().run()
        finally:
            if self.args.time_passes:  # on stderr: stdout holds the IR
                self.stages.print(sys.stderr)
        if store is not None and len(self.printed) == 1:
            store.put(key, self.printed[0])

    def output_resulting_program(self, prog: ModuleOp) -> str:
        with self.stages.step("print"):
            text = super().output_resulting_program(prog)
        self.printed.append(text)
        return text

    def _output_key(self) -> str | None:
        """The output cache's key: the input file's path and bytes and every option but
        the output's; None for standard input and for runs that print more than the
        result (timings, IR between passes, diagnostics, shrinking, split inputs)."""
        import hashlib
        import json
        from pathlib import Path

        from deplodock.backends.cuda.program_key import program_key

        args = self.args
        noisy = ("time_passes", "print_between_passes", "split_input_file", "shrink")
        noisy += ("verify_diagnostics", "parsing_diagnostics")
        if not args.input_file or any(getattr(args, name, False) for name in noisy):
            return None
        try:
            data = Path(args.input_file).read_bytes()
        except OSError:
            return None
        options = {k: v for k, v in vars(args).items() if k not in ("input_file", "output_file")}
        spelled = json.loads(json.dumps(options, sort_keys=True, default=repr))
        where = str(Path(args.input_file).resolve())
        program = ["deplo-opt", where, hashlib.sha256(data).hexdigest(), spelled]
        return program_key(program, args.arch or DEFAULT_ARCH)

    def _parse_mlir(self, io: IO[bytes]) -> ModuleOp:
        with self.stages.step("parse"):
            data = io.read()
            self.text = data.decode() if isinstance(data, bytes) else data
            return parse_text(self.ctx, self.text, self.get_input_name())

    def apply_passes(self, prog: ModuleOp) -> None:
        verify = not self.args.disable_verify
        if verify:
            verify_input(prog)  # the input: its errors are the user's
        if self.args.arch is not None:
            try:
                target_for(self.args.arch)
            except UnknownTarget as e:
                raise UserInputError(f"--arch: {e}") from None
        passes = [self._for_arch(p) for p in self.pipeline.passes]
        for i, pass_ in enumerate(passes):
            self.failed_at = i
            with self.stages.step(pass_.name):
                apply_pass(pass_, self.ctx, prog, **({} if verify else {"verify": None}))
            if self.args.print_between_passes and i + 1 < len(passes):
                print(f"IR after {pass_.name}:")
                Printer(stream=sys.stdout).print_op(prog)
                print("\n\n\n")
        self.failed_at = len(passes)  # the target's input: every pass applied

    def reproduce(self, error: PassError) -> str:
        """The failing pass's input: the input again, through the passes before it."""
        module = parse_text(self.ctx, self.text, self.get_input_name())
        for pass_ in self.pipeline.passes[: self.failed_at]:
            self._for_arch(pass_).apply(self.ctx, module)
        return str(module) + "\n"


def _known_passes_message(bad: str) -> str:
    return f"deplo-opt: unknown pass '{bad}'; known passes: " + ", ".join(sorted(all_passes()))


def _options(args: list[str]) -> DeploOptMain | int:
    """The driver for ``args``, or the exit status of a bad command line."""
    try:
        return DeploOptMain(description="deplodock's modular optimizer driver", args=args)
    except SystemExit as exit_:  # argparse printed the usage and the problem
        return EXIT_USER_ERROR if exit_.code else 0
    except ArgSpecParseError as error:  # xDSL's: a BaseException, with the place marked
        print(f"deplo-opt: error: bad pass pipeline: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as error:  # noqa: BLE001 - an unknown pass or a malformed pipeline spec
        text = str(error).strip()
        if "Unrecognized pass" in text or "unknown pass" in text.lower():
            name = re.sub(r"[\[\]'\"]", "", text.split(":")[-1]).strip()
            print(_known_passes_message(name), file=sys.stderr)
        else:
            print(f"deplo-opt: error: bad pass pipeline: {text}", file=sys.stderr)
        return EXIT_USER_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    opt = guarded("deplo-opt", lambda: _options(args))
    if isinstance(opt, int):
        return opt
    filename = opt.args.input_file or "<stdin>"

    def run() -> int:
        check_output_path(opt.args.output_file)
        try:
            opt.run()
        except ParseError as error:
            print(format_parse_error(error, filename), file=sys.stderr)
            return EXIT_USER_ERROR
        except (VerifyException, DiagnosticException) as error:
            print(f"{filename}: error: {error}", file=sys.stderr)
            return EXIT_USER_ERROR
        except (FileNotFoundError, IsADirectoryError, PermissionError) as error:
            raise UserInputError(str(error)) from None
        except ValueError as error:
            if "file extension" in str(error):  # xDSL: an input it has no frontend for
                raise UserInputError(str(error)) from None
            raise
        return 0

    return guarded("deplo-opt", run, reproduce=opt.reproduce)


if __name__ == "__main__":
    sys.exit(main())
