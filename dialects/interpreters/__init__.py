"""Interpreters of the project dialects (numpy values, xDSL interpreter framework)."""
