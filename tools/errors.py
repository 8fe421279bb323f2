"""The error type for bad user input.

Raised for anything the user can fix (a malformed expression, an unsupported operation in
their model, a file that does not parse). Its message is written for people and is the
whole story: the CLI prints it without a traceback and exits with status 1. Bugs in
deplodock itself stay ordinary exceptions, so their tracebacks are not hidden.
"""


class UserInputError(Exception):
    """Bad user input; `str(error)` is a complete message for the user."""
