"""The schedule planners: one function per kernel kind that chooses its schedule from the
shape and the target (``matmul.plan_matmul``, ``fill.plan_fill``)."""
