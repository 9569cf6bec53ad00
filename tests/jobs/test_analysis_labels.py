"""Label files: valid files load, bad ones name the file, line and field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crawler.errors import InputError
from jobs.analysis.labels import load_correctness_labels, load_human_labels, load_system_metadata


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_human_labels(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "h.csv",
        "query_id,url,annotator,semantic_relevance,authority,authority_justification\n"
        "007,https://Example.com/a#x,ann1,5,,\n"
        "7,https://example.com/b,ann1,3,4,gov site\n",
    )
    labels = load_human_labels(path)
    assert labels["query_id"].tolist() == ["7", "7"]
    assert labels["url_canonical"].tolist() == ["https://example.com/a", "https://example.com/b"]
    assert np.isnan(labels.loc[0, "authority"]) and labels.loc[1, "authority"] == 4.0
    assert labels.loc[1, "authority_justification"] == "gov site"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("query_id,url,semantic_relevance\n1,https://a.com,6\n", "line 2, field 'semantic_relevance'"),
        ("query_id,url,semantic_relevance\n1,https://a.com,2.5\n", "not an integer 1-5"),
        ("query_id,url,semantic_relevance\n1,ftp://a.com,2\n", "line 2, field 'url'"),
        ("query_id,url\n1,https://a.com\n", "no dimension columns"),
        ("query_id,semantic_relevance\n1,2\n", "missing column(s) url"),
        ("query_id,url,authority\n1,https://a.com/,2\n1,https://A.com,3\n", "line 3, field 'url': duplicate"),
    ],
)
def test_bad_human_labels(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        load_human_labels(_write(tmp_path, "bad.csv", text))
    assert message in str(info.value) and "bad.csv" in str(info.value)


def test_correctness_labels(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.csv", "system,query_id,correct\na,1,yes\na,2,0\nb,1,0.25\n")
    assert load_correctness_labels(path)["correct"].tolist() == [1.0, 0.0, 0.25]
    with pytest.raises(InputError, match="line 2, field 'correct'"):
        load_correctness_labels(_write(tmp_path, "bad.csv", "system,query_id,correct\na,1,maybe\n"))
    with pytest.raises(InputError, match="line 3: duplicate"):
        load_correctness_labels(_write(tmp_path, "dup.csv", "system,query_id,correct\na,1,1\na,01,0\n"))


def test_system_metadata_csv_and_yaml(tmp_path: Path) -> None:
    csv = load_system_metadata(
        _write(tmp_path, "m.csv", "system,model,tool\nx,chat,gensee\ny,reasoner,tavily\n")
    )
    yml = load_system_metadata(
        _write(tmp_path, "m.yaml", "x: {model: chat, tool: gensee}\ny: {model: reasoner, tool: tavily}\n")
    )
    assert csv.to_dict("records") == yml.to_dict("records")
    with pytest.raises(InputError, match="listed twice"):
        load_system_metadata(_write(tmp_path, "d.csv", "system,model\nx,a\nx,b\n"))
    with pytest.raises(InputError, match="expected a mapping"):
        load_system_metadata(_write(tmp_path, "l.yaml", "- x\n- y\n"))
