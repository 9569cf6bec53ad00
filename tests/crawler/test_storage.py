import pyarrow as pa
import pytest

from crawler.storage import RunStore


def roundtrip(store: RunStore) -> None:
    table = pa.table({"url_key": ["a", "b"], "n": [1, 2]})
    store.write_table("pages/part-0.parquet", table)
    store.write_table("pages/part-1.parquet", table)
    store.write_json("manifest.json", {"run": "x", "counts": {"pages": 4}})
    store.mark_done("crawl", "shard-00000", {"rows": 2})
    assert store.read_json("manifest.json")["counts"]["pages"] == 4
    assert store.read_table("pages").num_rows == 4
    assert store.listdir("pages", suffix=".parquet") == ["part-0.parquet", "part-1.parquet"]
    assert store.done_tasks("crawl") == {"shard-00000"}
    assert store.is_done("crawl", "shard-00000") and not store.is_done("crawl", "shard-00001")
    assert store.done_info("crawl", "shard-00000") == {"rows": 2}
    store.forget_done("crawl", "shard-00000")
    assert store.done_tasks("crawl") == set()
    assert sum(b.num_rows for b in store.iter_batches("pages")) == 4
    store.drop_rows("pages/part-0.parquet", pa.array([True, False]))
    assert store.read_part("pages/part-0.parquet").to_pylist() == [{"url_key": "b", "n": 2}]
    store.drop_rows("pages/part-1.parquet", pa.array([True, True]))  # nothing left: the part goes
    assert store.listdir("pages", suffix=".parquet") == ["part-0.parquet"]


def test_local_roundtrip(tmp_path):
    roundtrip(RunStore(str(tmp_path / "run")))


def test_local_write_is_atomic(tmp_path, monkeypatch):
    store = RunStore(str(tmp_path / "run"))
    store.write_text("a.txt", "old")

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        store.write_text("a.txt", "new")
    assert store.read_bytes("a.txt") == b"old"
    assert store.listdir("") == ["a.txt"]  # the temporary file is hidden from listings


def test_s3_roundtrip(s3_bucket):
    store = RunStore(f"s3://{s3_bucket}/audits/run1")
    roundtrip(store)
    assert store.uri_of("pages") == f"s3://{s3_bucket}/audits/run1/pages"
    # A second handle (a fresh process would do the same) reads what the first wrote.
    assert RunStore(f"s3://{s3_bucket}/audits/run1").read_table("pages").num_rows == 1
