"""Query sets for sweeps: language tags, template expansion across languages, stratified sampling.

Template files (YAML or JSON) carry their own translations; nothing is machine-translated::

    version: 1
    languages: [en, de, fr]          # optional default language list (the CLI's --languages wins)
    templates:
      - id: capital                  # query_id stem: "<id>-<lang>", or "<id>.<n>-<lang>" with slots
        query_type: HotpotQA
        text:                        # one text per language (ISO 639-1), {slot} placeholders allowed
          en: "Which river flows through the capital of {country}?"
          de: "Welcher Fluss fließt durch die Hauptstadt von {country}?"
        slots:                       # optional: every combination of values is one query (long tail)
          country:
            - {en: Hungary, de: Ungarn}
            - Peru                   # a plain string is the same in every language

A template without a text (or a slot value without a translation) for a requested language is an
error naming the template and the field, unless missing translations are skipped on request.
"""

from __future__ import annotations

import itertools
import random
import string
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, ValidationError, field_validator

from crawler.base import ConfigModel, InputError, read_data
from jobs.inputs import load_queries
from jobs.schemas import QUERIES_SCHEMA


class QueryTemplate(ConfigModel):
    """One query written in several languages, optionally with slots that multiply it."""

    id: str = Field(..., min_length=1, description="Stem of the query ids this template expands to.")
    query_type: str = Field(..., min_length=1, description="The query intent (e.g. one of QUERY_TYPES).")
    text: dict[str, str] = Field(..., min_length=1, description="Language code -> query text.")
    slots: dict[str, list[str | dict[str, str]]] = Field(
        default_factory=dict, description="Slot name -> values; a value is a string or language -> string."
    )

    @field_validator("id")
    @classmethod
    def _no_separator(cls, value: str) -> str:
        if any(ch.isspace() for ch in value):
            raise ValueError("template id must not contain whitespace")
        return value


class TemplateFile(ConfigModel):
    """A file of query templates."""

    version: int = Field(1, description="Format version (1).")
    languages: list[str] = Field(default_factory=list, description="Default language list.")
    templates: list[QueryTemplate] = Field(..., min_length=1, description="The templates.")


def load_template_file(path: str | Path) -> TemplateFile:
    source = str(path)
    data = read_data(path, "template file")
    try:
        parsed = TemplateFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        raise InputError(source, err["msg"], field=loc or None) from None
    check_templates(source, parsed)
    return parsed


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def check_templates(source: str, parsed: TemplateFile) -> None:
    """Every placeholder has a slot and every slot is used; template ids are unique."""
    seen: set[str] = set()
    for i, template in enumerate(parsed.templates):
        if template.id in seen:
            raise InputError(source, f"duplicate template id {template.id!r}", field=f"templates[{i}].id")
        seen.add(template.id)
        for lang, text in template.text.items():
            try:
                names = placeholders(text)
            except ValueError as exc:
                raise InputError(
                    source, f"bad placeholder: {exc}", field=f"templates[{i}].text.{lang}"
                ) from None
            unknown = names - set(template.slots)
            if unknown:
                raise InputError(
                    source,
                    f"placeholder {{{sorted(unknown)[0]}}} has no slot",
                    field=f"templates[{i}].text.{lang}",
                )
        for slot, values in template.slots.items():
            if not values:
                raise InputError(
                    source, "a slot needs at least one value", field=f"templates[{i}].slots.{slot}"
                )


def expand_templates(
    parsed: TemplateFile,
    languages: list[str] | None = None,
    *,
    source: str = "template",
    skip_missing: bool = False,
) -> pa.Table:
    """Expand every template across the languages into a :data:`QUERIES_SCHEMA` table.

    Args:
        parsed: The template file.
        languages: Languages to expand to; the file's own list when None or empty.
        source: File name for error messages.
        skip_missing: Leave out a (template, language) without a translation instead of failing.
    """
    languages = list(languages or parsed.languages)
    if not languages:
        raise InputError(source, "no languages: give --languages or a 'languages' list", field="languages")
    rows: dict[str, list[Any]] = {name: [] for name in QUERIES_SCHEMA.names}
    for i, template in enumerate(parsed.templates):
        names = sorted(template.slots)
        combos = list(itertools.product(*(template.slots[n] for n in names))) if names else [()]
        for lang in languages:
            if lang not in template.text:
                if skip_missing:
                    continue
                raise InputError(
                    source,
                    f"no {lang!r} text (translations come from the file)",
                    field=f"templates[{i}].text.{lang}",
                )
            for n, combo in enumerate(combos, start=1):
                fills = {}
                for name, value in zip(names, combo, strict=True):
                    if isinstance(value, str):
                        fills[name] = value
                    elif lang in value:
                        fills[name] = value[lang]
                    else:
                        break
                if len(fills) < len(names):
                    if skip_missing:
                        continue
                    raise InputError(
                        source, f"slot value {n} has no {lang!r} translation", field=f"templates[{i}].slots"
                    )
                query_id = f"{template.id}.{n}-{lang}" if names else f"{template.id}-{lang}"
                rows["query_id"].append(query_id)
                rows["query"].append(template.text[lang].format(**fills))
                rows["query_type"].append(template.query_type)
                rows["language"].append(lang)
    return pa.Table.from_pydict(rows, schema=QUERIES_SCHEMA)


def load_query_set(path: str, *, language: str | None = None) -> pa.Table:
    """A queries CSV (see :func:`jobs.inputs.load_queries`); ``language`` fills rows without a tag."""
    table = load_queries(path)
    if language:
        filled = pc.fill_null(table["language"], pa.scalar(language, pa.string()))
        table = table.set_column(
            table.schema.get_field_index("language"), QUERIES_SCHEMA.field("language"), filled
        )
    return table


def stratified_sample(
    table: pa.Table, per_stratum: int, seed: int = 0, by: tuple[str, ...] = ("query_type", "language")
) -> pa.Table:
    """At most ``per_stratum`` queries from every combination of ``by`` values, drawn with a seed.

    The draw depends only on the seed and the query ids (rows are ordered by id before drawing), so the
    same seed picks the same queries whatever the input order. A null value is a stratum of its own.
    The sample keeps the input's row order.
    """
    if per_stratum < 1:
        raise ValueError("per_stratum must be at least 1")
    strata: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    columns = [table[name].to_pylist() for name in by]
    ids = table["query_id"].to_pylist()
    for index in sorted(range(table.num_rows), key=lambda i: ids[i]):
        strata[tuple(col[index] for col in columns)].append(index)
    rng = random.Random(seed)
    chosen: list[int] = []
    for key in sorted(strata, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        members = strata[key]
        chosen += members if len(members) <= per_stratum else rng.sample(members, per_stratum)
    return table.take(sorted(chosen))  # input order
