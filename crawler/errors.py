"""The error raised for bad user input: it names the file, the line or record, and the field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound="BaseModel")


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


def validate_model(
    model: type[ModelT],
    data: Any,
    source: str,
    *,
    context: dict[str, Any] | None = None,
    prefix: str | None = None,
) -> ModelT:
    """``model.model_validate(data)``, with the first validation error raised as an InputError.

    Args:
        model: The pydantic model class (a config section).
        data: The parsed YAML/JSON/CLI values.
        source: Where ``data`` came from (a file path, ``--set``), named in the error.
        context: Pydantic validation context (the config file's folder, for relative paths).
        prefix: Dotted path of ``data`` inside its file (``report`` for an audit config's section).

    Raises:
        InputError: naming ``source`` and the dotted path of the first bad field.
    """
    from pydantic import ValidationError

    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in [*([prefix] if prefix else []), *error["loc"]]) or None
        if error["type"] == "extra_forbidden":
            raise InputError(source, "unknown key (a typo?)", field=field) from None
        message = error["msg"].removeprefix("Value error, ")
        if field is None:  # a check of the whole model: its input is everything, not worth printing
            raise InputError(source, message) from None
        got = repr(error.get("input"))
        got = got if len(got) <= 80 else got[:77] + "..."
        raise InputError(source, f"{message} (got {got})", field=field) from None
