"""Loom's errors as Python exceptions.

Every failure inside Loom carries one of a few codes (what a caller can act
on: fix its input, look for a file, give up) and a message naming what is
wrong. Each code is a subclass of :class:`Error`; those with an obvious
Python counterpart derive from it too, so ``except ValueError`` catches a
bad argument and ``except OSError`` a file that cannot be read.
"""


class Error(Exception):
    """A failure reported by Loom; ``code`` names its kind."""

    code = "internal"


class InvalidArgumentError(Error, ValueError):
    """The caller's input: shapes, dtypes, options, ids, text."""

    code = "invalid argument"


class NotFoundError(Error, LookupError):
    """A file, an entry point, a tensor by name."""

    code = "not found"


class IoError(Error, OSError):
    """Reading or writing a file failed."""

    code = "i/o"


class CorruptError(Error):
    """A file exists but is damaged or of another format."""

    code = "corrupt"


class UnsupportedError(Error):
    """This runtime or machine cannot run it (a CPU feature, a device)."""

    code = "unsupported"


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed."""

    code = "out of memory"


class InternalError(Error):
    """An invariant Loom itself broke: a bug to report."""

    code = "internal"


class CompileError(Error):
    """The compiler refused the model or its options (its diagnostics, with
    their locations, went to stderr)."""

    code = "compile"


# By the runtime's ErrorCode values (abi/Error.h), for the extension modules.
BY_CODE = {
    1: InvalidArgumentError,
    2: NotFoundError,
    3: IoError,
    4: CorruptError,
    5: UnsupportedError,
    6: OutOfMemoryError,
    7: InternalError,
}
