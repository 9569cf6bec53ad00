"""A shard process started ahead of its shard: it waits for its spec, and ends when it gets none."""

from __future__ import annotations

import os

from crawler.launch import ShardProcess


def test_a_process_never_given_a_spec_is_ended_and_leaves_nothing_behind():
    process = ShardProcess()
    folder = os.path.dirname(process.log_path)
    process.close()
    process.close()  # twice is harmless

    assert process._process.poll() is not None and not os.path.exists(folder)


def test_a_process_given_a_spec_it_cannot_read_fails_with_the_reason_in_its_log(tmp_path):
    with ShardProcess() as process:
        code = process.run(str(tmp_path / "missing.json"), timeout_s=120)
        tail = process.log_tail()

    assert code != 0 and "FileNotFoundError" in tail and "missing.json" in tail
