"""The schedule planners: the functions that choose a kernel's schedule from its shape and
the target, one module per kind of decision (``matmul.plan_matmul``, ``fill.plan_fill``,
``reduce.cooperation_threads`` and ``reduce.chunks_for``, ``launch.block_threads_for``).
The passes apply what these choose; their options override it."""
