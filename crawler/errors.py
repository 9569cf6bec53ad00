"""The error raised for bad user input: it names the file, the line or record, and the field."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input, reported so that a user can find and fix it.

    Args:
        source: The file (path or URI) that holds the bad input.
        message: What is wrong.
        line: 1-based line number (text formats) or record index, when known.
        field: The offending column or JSON key, when known.
    """

    def __init__(self, source: str, message: str, *, line: int | None = None, field: str | None = None):
        self.source, self.line, self.field, self.reason = str(source), line, field, message
        where = self.source + (f", line {line}" if line is not None else "")
        where += f", field '{field}'" if field else ""
        super().__init__(f"{where}: {message}")
