"""python -m ascendgrad dump-check at cluster scale: an 8-rank msprobe dump (tests_py/cluster_dump.py,
one real dump laid out as step0/rank0..rank7) with rank 5's recorded gradients corrupted, judged by
this process (--jobs 1), a forkserver pool (--jobs 2) and Dask (--scheduler local:2, and a
LocalCluster one of whose workers is killed mid-run): the same verdicts, in the same order, and
exactly rank 5's calls fail; the rank x API table, summary.by_rank, ranks.png; command-line errors."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections import Counter

import pytest

pytest.importorskip("msprobe", reason="the dump tests need mindstudio-probe (the test extra)")
pytest.importorskip("torch")
pytest.importorskip("distributed", reason="--scheduler needs Dask's distributed (the cluster extra)")

from ascendgrad import dump_check  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import cluster_dump  # noqa: E402

RANKS, BAD = 8, 5


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    return cluster_dump.make(str(tmp_path_factory.mktemp("cluster")), RANKS, size=8, steps=1, corrupt_rank=BAD)


@pytest.fixture(scope="module")
def serial(dump):
    return dump_check.check_dump(dump, jobs=1)


def cli(dump, cwd, *args):
    return subprocess.run([sys.executable, "-m", "ascendgrad", "dump-check", str(dump), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_jobs_and_scheduler_agree_and_only_rank_5_fails(dump, tmp_path):
    runs = {}
    ways = {"jobs1": ["--jobs", "1"], "jobs2": ["--jobs", "2"], "local2": ["--scheduler", "local:2"]}
    for name, args in ways.items():
        r = cli(dump, tmp_path, *args, "--json", tmp_path / f"{name}.json")
        assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
        assert "Traceback" not in r.stderr, r.stderr
        runs[name] = (json.loads((tmp_path / f"{name}.json").read_text()), r.stdout)
    (ref, ref_text), *others = runs.values()
    for data, text in others:
        assert data["calls"] == ref["calls"]
        assert {k: v for k, v in data["summary"].items() if k != "seconds"} == \
            {k: v for k, v in ref["summary"].items() if k != "seconds"}
        timing = re.compile(r"MB of tensors in [0-9.]+ s\)")
        assert timing.sub("", text) == timing.sub("", ref_text)
        assert len(timing.findall(text)) == 1

    calls = ref["calls"]
    assert {c["rank"] for c in calls} == set(range(RANKS))
    failed = [c for c in calls if c["verdict"] == "fail"]
    assert failed and all(c["rank"] == BAD for c in failed)
    assert {c["api"] for c in failed} == {c["api"] for c in calls if c["rank"] == 0 and c["verdict"] == "pass"}
    by_rank = ref["summary"]["by_rank"]
    assert [(e["step"], e["rank"]) for e in by_rank] == [(0, r) for r in range(RANKS)]
    assert all(set(e) == {"step", "rank", "pass", "fail", "not comparable"} for e in by_rank)
    assert [e["fail"] for e in by_rank] == [len(failed) if r == BAD else 0 for r in range(RANKS)]
    assert sum(e["pass"] + e["fail"] + e["not comparable"] for e in by_rank) == len(calls)

    lines = ref_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("failures per step/rank and API"))
    assert f"rank {BAD} (1 of 8 step/rank pairs fail)" in lines[start]
    rows = {line.split()[0]: line.split()[1:] for line in lines[start + 2:start + 2 + RANKS]}
    assert list(rows) == [f"0/{r}" for r in range(RANKS)]
    assert rows[f"0/{BAD}"][-1] == str(len(failed)) and all(v != "." for v in rows[f"0/{BAD}"])
    assert all(set(v[:-1]) == {"."} and v[-1] == "0" for k, v in rows.items() if k != f"0/{BAD}")
    first = [line for line in lines if line.startswith("first failure of ")]
    assert len(first) == 1 and first[0].startswith(f"first failure of 0/{BAD}: {failed[0]['api']}: "), first


@pytest.fixture
def environ():
    """os.environ as it was, after the test: a LocalCluster sets its workers' variables here."""
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


def test_a_killed_dask_worker_loses_no_call(dump, serial, environ):
    import dask
    from distributed import Client, LocalCluster

    # the scheduler's log of task transitions, long enough to show every task's: it tells which ran twice
    with dask.config.set({"distributed.admin.low-level-log-length": 100_000}), \
            LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        pids = client.run(os.getpid)
        victim = sorted(pids.values())[0]
        killed = []

        def kill_one(call, res, p, score, nbytes, k):
            # at the first verdict back, the other tasks' results still lie on the workers (or
            # are being computed): the killed worker's share must be computed again elsewhere
            if not killed:
                os.kill(victim, signal.SIGKILL)
                killed.append(k)

        res = dump_check.check_dump(dump, scheduler=cluster.scheduler_address, on_call=kill_one)
        assert killed == [0]
        client.wait_for_workers(2, timeout=60)  # the nanny restarted it
        assert victim not in client.run(os.getpid).values()
        runs = Counter(t.key for t in cluster.scheduler.transition_log
                       if t.finish == "processing" and str(t.key).startswith("run_task-"))
        assert runs and max(runs.values()) > 1  # the lost worker's tasks ran again
    assert [(c.step, c.rank, c.api) for c in res.calls] == [(c.step, c.rank, c.api) for c in serial.calls]
    assert res.calls == serial.calls
    assert res.summary()["by_rank"] == serial.summary()["by_rank"]


def test_command_line_errors(dump, tmp_path):
    port = free_port()
    r = cli(dump, tmp_path, "--scheduler", f"tcp://127.0.0.1:{port}")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--scheduler" in r.stderr and "Traceback" not in r.stderr
    r = cli(dump, tmp_path, "--jobs", "0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--jobs" in r.stderr, r.stderr
    r = cli(dump, tmp_path, "--jobs", "2", "--scheduler", "local:2")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_plots_with_jobs(dump, serial, tmp_path):
    pytest.importorskip("matplotlib")
    plots = tmp_path / "plots"
    r = cli(dump, tmp_path, "--jobs", "2", "--plots", plots)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert (plots / "ranks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    failed = [c.api for c in serial.calls if c.verdict == "fail"]
    want = {f"step0_rank{BAD}_{api}.png" for api in failed}
    assert {p.name for p in plots.iterdir()} == want | {"ranks.png"}
    for name in want:
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    listed = [line[len("plot: "):] for line in r.stdout.splitlines() if line.startswith("plot: ")]
    assert sorted(os.path.basename(p) for p in listed) == sorted(want | {"ranks.png"})


def test_a_local_cluster_leaves_the_environment_as_it_was(dump):
    before = dict(os.environ)
    dump_check.check_dump(dump, scheduler="local:1", api="Functional.softmax.0")
    assert dict(os.environ) == before


def test_check_dump_jobs_1_equals_jobs_2(dump, serial):
    two = dump_check.check_dump(dump, jobs=2)
    assert two.calls == serial.calls
    assert two.nbytes == serial.nbytes
    assert two.summary()["by_rank"] == serial.summary()["by_rank"]
