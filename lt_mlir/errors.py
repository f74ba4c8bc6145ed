"""Project exceptions.  Every user mistake surfaces as one of these, with a
one-line message that starts with its location when there is one."""

from __future__ import annotations

import re

_LOC = re.compile(r'loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)')


class LtError(Exception):
    """Base class of every error lt_mlir reports to its users."""


class ParseError(LtError):
    """Malformed textual IR."""


class VerifyError(LtError):
    """IR that parses but breaks an op's invariants."""


class PipelineError(LtError):
    """Unknown pass, bad pass option, or malformed pipeline string."""


class PassError(LtError):
    """A pass refused to transform the IR (it would change the result)."""


class CompileError(LtError):
    """Lowering or code generation failed."""


class ArgumentError(LtError, ValueError):
    """A compiled kernel was called with arrays of the wrong shape/dtype."""


def format_location(loc, filename: str | None = None) -> str:
    """``file:line:col`` for a file location, '' for an unknown one."""
    m = _LOC.search(str(loc))
    if not m:
        return ""
    file = m.group("file")
    if filename is not None and file in ("-", ""):
        file = filename
    return f"{file}:{m.group('line')}:{m.group('col')}"


def from_mlir_error(exc, cls=LtError, filename: str | None = None) -> LtError:
    """Turn an ``ir.MLIRError`` into one located, one-line project error."""
    diags = list(getattr(exc, "error_diagnostics", []) or [])
    if diags:
        d = diags[0]
        where = format_location(d.location, filename)
        msg = " ".join(str(d.message).split())
        return cls(f"{where}: error: {msg}" if where else f"error: {msg}")
    text = str(exc).strip().splitlines()
    body = [ln for ln in text if ln.strip().startswith("error:")] or text[-1:] or ["unknown error"]
    msg = body[0].strip()
    if filename is not None:
        msg = msg.replace('"-":', f"{filename}:")
    return cls(msg)


def with_filename(exc: LtError, filename: str) -> LtError:
    """The same error with a leading ``-:line:col`` (IR parsed from a string)
    naming ``filename`` instead."""
    msg = str(exc)
    if filename not in ("-", "") and msg.startswith("-:"):
        return type(exc)(filename + msg[1:])
    if filename not in ("-", "") and msg.startswith("error:") and isinstance(exc, PassError):
        return type(exc)(f"{filename}: {msg}")  # about the module as a whole (no loop L9 in it)
    return exc


class CudaError(LtError):
    """The CUDA driver is missing, has no device, or failed a call."""


def read_module_file(path: str, tool: str) -> tuple[str, str]:
    """(text, name to cite) of an MLIR file, or of stdin for ``-``, as the
    command-line tools read their input: an unreadable or binary file is
    one located ``LtError`` naming ``tool``, not a traceback."""
    import sys

    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as e:
        raise LtError(f"error: cannot read '{path}': {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LtError(f"{name}: error: not a text file (byte {e.start} is not UTF-8); {tool} reads MLIR modules (.mlir)") from None
    if "\0" in text:
        raise LtError(f"{name}: error: not a text file (it holds NUL bytes); {tool} reads MLIR modules (.mlir)")
    return text, name


class InvalidAction(LtError, ValueError):
    """An environment was given an action outside its action space."""


_INTERRUPT = re.compile(r"^KeyboardInterrupt\b", re.MULTILINE)


def is_interrupt(e: BaseException) -> bool:
    """Whether ``e`` is a Ctrl-C: a ``KeyboardInterrupt``, or the
    ``RuntimeError`` MLIR's Python bindings make of one raised in a Python
    callback they called (an IR walk's: "Exception raised in callback: ...
    KeyboardInterrupt")."""
    return isinstance(e, KeyboardInterrupt) or (isinstance(e, RuntimeError) and bool(_INTERRUPT.search(str(e))))
