"""What the command line prints is shown, never obeyed, by the administrator's terminal.

Much of it is text a stranger wrote: a stored mail (``inbox show``), a Subject, an
address, a bounce's reason, an alert.  A terminal obeys what such text may hold:
escape sequences (ESC ``[``, ESC ``]``: clear the screen, retitle the window, rewrite
what was printed before, or, on some terminals, answer back as if typed), carriage
returns that print over a line, C1 controls that some terminals take for ESC, and
bidirectional overrides that show text in another order than it is.  Every one is
printed as a visible escape instead (``\\x1b``, ``\\u202e``).

One place does it: ``escape_output`` wraps standard output and standard error once,
when the ``pbmserv`` group starts, so every command and every log line written to
the terminal goes through it, whatever prints it.  Line ends (CR LF too) and tabs
are kept.
"""

from __future__ import annotations

import io
import re
import sys
from typing import Any, TextIO

#: C0 controls but tab and newline; DEL and the C1 controls; the bidirectional
#: embeddings, overrides and isolates; lone surrogates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every character a terminal would obey written out visibly
    (``\\x1b``); CR LF becomes a plain line end."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _UNSAFE.sub(_escaped, text)


class EscapedStream(io.TextIOBase):
    """A text stream that writes to another with its controls escaped.  It takes text
    only (so that click writes text to it, never bytes past it) and has no binary
    ``buffer`` to write to underneath."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: Any) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() takes text, not {type(text).__name__}")
        self.stream.write(escape_controls(text))
        return len(text)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.stream, "encoding", None) or "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)


def escape_output() -> None:
    """Escape the controls of everything written to standard output and error from now
    on (once: a stream already escaped stays as it is)."""
    if not isinstance(sys.stdout, EscapedStream):
        sys.stdout = EscapedStream(sys.stdout)
    if not isinstance(sys.stderr, EscapedStream):
        sys.stderr = EscapedStream(sys.stderr)
