"""Query sets for sweeps: language tags, template expansion across languages, stratified sampling."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from crawler.errors import InputError
from jobs.collectors import expand_templates, load_query_set, load_template_file, stratified_sample

TEMPLATE = """
version: 1
languages: [en, de]
templates:
  - id: capital
    query_type: HotpotQA
    text:
      en: "Which river flows through the capital of {country}?"
      de: "Welcher Fluss fließt durch die Hauptstadt von {country}?"
      fr: "Quel fleuve traverse la capitale de {country} ?"
    slots:
      country:
        - {en: Hungary, de: Ungarn, fr: Hongrie}
        - Peru
  - id: vote
    query_type: DebateQA
    text:
      en: "Should voting be compulsory?"
      de: "Sollte Wählen Pflicht sein?"
"""


def write(tmp_path: Path, text: str, name: str = "t.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_expansion_uses_the_file_languages_and_slot_translations(tmp_path):
    table = expand_templates(load_template_file(write(tmp_path, TEMPLATE)))
    rows = {r["query_id"]: r for r in table.to_pylist()}
    assert list(rows) == [
        "capital.1-en",
        "capital.2-en",
        "capital.1-de",
        "capital.2-de",
        "vote-en",
        "vote-de",
    ]
    assert rows["capital.1-de"]["query"] == "Welcher Fluss fließt durch die Hauptstadt von Ungarn?"
    assert rows["capital.2-de"]["query"].endswith("von Peru?")
    assert rows["vote-de"] == {
        "query_id": "vote-de",
        "query": "Sollte Wählen Pflicht sein?",
        "query_type": "DebateQA",
        "language": "de",
    }


def test_missing_translation_is_an_error_naming_the_field_or_skipped(tmp_path):
    parsed = load_template_file(write(tmp_path, TEMPLATE))
    with pytest.raises(InputError) as err:
        expand_templates(parsed, ["en", "fr"], source="t.yaml")
    assert err.value.field == "templates[1].text.fr" and "t.yaml" in str(err.value)
    table = expand_templates(parsed, ["fr"], skip_missing=True)
    assert table["query_id"].to_pylist() == ["capital.1-fr", "capital.2-fr"]


@pytest.mark.parametrize(
    "text,field",
    [
        ("templates:\n  - {id: a, query_type: X, text: {en: 'about {thing}'}}\n", "templates[0].text.en"),
        ("templates:\n  - {id: a, query_type: X, text: {en: q}, extra: 1}\n", "templates[0].extra"),
        (
            "templates:\n  - {id: a, query_type: X, text: {en: q}}\n"
            "  - {id: a, query_type: X, text: {en: r}}\n",
            "templates[1].id",
        ),
        ("templates: []\n", "templates"),
    ],
)
def test_bad_template_files_name_the_field(tmp_path, text, field):
    with pytest.raises(InputError) as err:
        load_template_file(write(tmp_path, text))
    assert err.value.field == field


def test_no_languages_anywhere_is_an_error(tmp_path):
    parsed = load_template_file(write(tmp_path, "templates:\n  - {id: a, query_type: X, text: {en: q}}\n"))
    with pytest.raises(InputError, match="no languages"):
        expand_templates(parsed, [])


def test_query_set_language_tag_fills_only_untagged_rows(tmp_path):
    path = write(tmp_path, "query_id,query,query_type,language\n1,a,VACOS,de\n2,b,VACOS,\n", "q.csv")
    table = load_query_set(str(path), language="en")
    assert table["language"].to_pylist() == ["de", "en"]
    assert load_query_set(str(path))["language"].to_pylist() == ["de", None]


def test_stratified_sample_is_seeded_capped_and_order_independent(shared_data):
    queries = load_query_set(
        str(shared_data / "sourcebench/sourcebench_public_queries_v1.csv"), language="en"
    )
    sample = stratified_sample(queries, 3, seed=1)
    assert Counter(sample["query_type"].to_pylist()) == {t: 3 for t in set(queries["query_type"].to_pylist())}
    shuffled = queries.take(list(reversed(range(queries.num_rows))))
    assert set(stratified_sample(shuffled, 3, seed=1)["query_id"].to_pylist()) == set(
        sample["query_id"].to_pylist()
    )
    others = {tuple(stratified_sample(queries, 3, seed=s)["query_id"].to_pylist()) for s in range(2, 6)}
    assert len(others | {tuple(sample["query_id"].to_pylist())}) > 1
    assert stratified_sample(queries, 100, seed=0).num_rows == queries.num_rows


def test_stratified_sample_by_type_and_language(tmp_path):
    template = (
        Path(__file__).resolve().parents[2]
        / "jobs/collectors/templates/sourcebench_public_v1_multilingual.yaml"
    )
    table = expand_templates(load_template_file(template), ["en", "de", "fr", "es"])
    assert table.num_rows == 40
    sample = stratified_sample(table, 1, seed=3)
    strata = Counter(zip(sample["query_type"].to_pylist(), sample["language"].to_pylist(), strict=True))
    assert len(strata) == 20 and set(strata.values()) == {1}
