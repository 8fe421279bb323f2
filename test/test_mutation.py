"""Mutation test of the command-line boundary (issue: hardening): broken IR never ends in
a traceback.

Four programs printed at the five IR levels are mutated (a line deleted, swapped or
duplicated, a number or an element type changed, a value renamed) and each mutant goes
through ``deplo-opt`` in-process: parsed and printed, lowered to the kernel level, or
emitted as CUDA (``deplodock.bench.mutate``). Every run must end in a documented exit status
with a message; an exception escaping ``deplo-opt``'s ``main`` or a traceback on stderr
fails the test and is shown.
"""

from __future__ import annotations

from deplodock.bench import mutate

MUTANTS_PER_TEXT = 30  # x 4 programs x 5 levels = 600 mutants (3000 before session 13)


def test_six_hundred_mutants_end_without_a_traceback(jobs: int) -> None:
    report = mutate.run(MUTANTS_PER_TEXT, seed=2026, jobs=jobs)
    assert len(report.outcomes) == 600
    shown = "\n\n".join(
        f"{o.seed} ({o.mode}):\n{o.escaped or o.stderr}" for o in report.tracebacks[:5]
    )
    assert not report.tracebacks, f"{len(report.tracebacks)} tracebacks:\n{shown}"
    statuses = {o.status for o in report.outcomes}
    assert statuses <= {0, 1, 3}, statuses
    # The mutants must reach every stage: most are refused, some still compile.
    assert sum(o.status == 0 for o in report.outcomes) > 20
    assert sum(o.status == 1 for o in report.outcomes) > 200


def test_a_traceback_is_caught(monkeypatch) -> None:
    """The harness itself: a driver that raises is reported as an escaped traceback."""

    def broken(argv):
        raise RuntimeError("boom")

    monkeypatch.setattr("deplodock.opt.main", broken)
    status, _, escaped = mutate.run_deplo_opt(["x.mlir"])
    assert status is None and "RuntimeError: boom" in escaped


def test_an_internal_error_names_the_pass_and_keeps_a_reproducer(tmp_path, monkeypatch) -> None:
    """A pass that fails on valid IR: exit 3, the pass and the op named, the input saved
    where ``deplo-opt REPRO -p PASS`` fails again the same way."""
    from deplodock.dialects import loop
    from deplodock.passes.tile import tileify

    def fail(self, op, rewriter):
        if isinstance(op, loop.KernelOp):
            raise ZeroDivisionError("a bug")

    source = tmp_path / "rms.mlir"
    source.write_text(mutate.printed_levels({"rms": mutate.PROGRAMS["rmsnorm"]})["rms.loop"])
    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tileify.TileifyKernel, "match_and_rewrite", fail)
    status, stderr, escaped = mutate.run_deplo_opt([str(source), "-p", "tileify,mark-unroll"])
    assert not escaped and status == 3, stderr
    assert "internal compiler error in pass tileify on 'loop.kernel' @k_rms_norm" in stderr
    assert "ZeroDivisionError: a bug" in stderr and "Traceback" not in stderr
    (repro,) = (tmp_path / "reproducers").iterdir()
    assert str(repro) in stderr and repro.read_text().strip() == source.read_text().strip()
