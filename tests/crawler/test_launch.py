"""Shard processes forked from this process's zygote: each runs one spec, the log says why one failed,
and none outlives the process that started the zygote."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from crawler.launch import ShardProcess, zygote


def test_a_process_never_given_a_spec_leaves_nothing_behind():
    process = ShardProcess()
    folder = os.path.dirname(process.log_path)
    process.close()
    process.close()  # twice is harmless

    assert not process.running() and not os.path.exists(folder)


def test_a_process_given_a_spec_it_cannot_read_fails_with_the_reason_in_its_log(tmp_path):
    with ShardProcess() as process:
        code = process.run(str(tmp_path / "missing.json"), timeout_s=120)
        tail = process.log_tail()

    assert code != 0 and "FileNotFoundError" in tail and "missing.json" in tail


def test_processes_are_forks_of_one_warm_zygote_and_a_dead_one_is_replaced(tmp_path):
    codes = []
    for _ in range(2):
        with ShardProcess() as process:
            codes.append(process.run(str(tmp_path / "missing.json"), timeout_s=120))
    first = zygote()
    assert codes == [1, 1] and first.ready is not None and first.ready["warm_up_cpu_s"] > 0.5

    first._process.kill()
    first._process.wait()
    with ShardProcess() as process:
        assert process.run(str(tmp_path / "missing.json"), timeout_s=120) == 1
    assert zygote() is not first and not first.alive()


_OWNER = """
import sys, time
from crawler.launch import ShardProcess
process = ShardProcess()
print(process._zygote._process.pid, flush=True)
process._zygote.fork(sys.argv[1], process.log_path)
time.sleep(600)
"""


def test_the_zygote_and_its_children_end_with_the_process_that_started_it(tmp_path):
    """A Ray worker killed with SIGKILL: its zygote sees its stdin close and ends (its children die with
    it, ``PR_SET_PDEATHSIG``: ``test_politeness`` kills a runner while its shard crawls)."""
    spec = tmp_path / "spec.json"
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(spec)], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    zygote_pid = int(owner.stdout.readline())
    owner.kill()
    owner.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(zygote_pid):
        time.sleep(0.1)
    assert not _alive(zygote_pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_process_runs_in_the_working_directory_of_the_process_that_asks(tmp_path, monkeypatch):
    zygote()  # started before the change of directory
    (tmp_path / "spec.json").write_text("{not json")
    monkeypatch.chdir(tmp_path)
    with ShardProcess() as process:
        code = process.run("spec.json", timeout_s=120)
        tail = process.log_tail()

    assert code == 1 and "JSONDecodeError" in tail, tail
