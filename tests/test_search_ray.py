"""lt-tune on Ray (lt_mlir/search/measure.py, docs/CLUSTER.md): the cores a
machine has, the measuring actors planned on them (one a physical core,
nodes of one machine sharing its cores, a wide actor a machine for the
parallel candidates), a Ray address that answers nothing (one line, quickly),
and a cluster of two Ray nodes on this machine that a search measures on,
one of its candidates crashing its actor."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from lt_mlir import compile, programs
from lt_mlir.errors import LtError
from lt_mlir.schedule import Schedule
from lt_mlir.search import cli
from lt_mlir.search.measure import Slot, check_ray_address, has_parallel_loop, physical_cores, plan_slots

# -- cores and the plan (no Ray) ---------------------------------------------------


def _sysfs(root: Path, siblings: dict[int, str]) -> str:
    for cpu, text in siblings.items():
        d = root / f"cpu{cpu}" / "topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(text + "\n")
    return str(root)


def test_physical_cores_from_the_sibling_lists(tmp_path):
    sysfs = _sysfs(tmp_path, {0: "0,4", 1: "1,5", 2: "2-3", 3: "2-3", 4: "0,4", 5: "1,5"})
    assert physical_cores(range(6), sysfs=sysfs) == [(0, 4), (1, 5), (2, 3)]
    assert physical_cores([0, 1, 4], sysfs=sysfs) == [(0, 4), (1,)]  # the threads this process may use


def test_physical_cores_from_cpuinfo_then_one_a_cpu(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("".join(f"processor\t: {p}\nphysical id\t: {p // 4}\ncore id\t\t: {p % 2}\n\n" for p in range(8)))
    assert physical_cores(range(8), sysfs=str(tmp_path / "none"), cpuinfo=str(cpuinfo)) == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert physical_cores([3, 1], sysfs=str(tmp_path / "none"), cpuinfo=str(tmp_path / "none")) == [(1,), (3,)]


def test_physical_cores_here():
    cores = physical_cores()
    cpus = [c for core in cores for c in core]
    assert sorted(cpus) == sorted(os.sched_getaffinity(0)) and len(set(cpus)) == len(cpus)


def _node(node_id, machine, cores, cpus, ip="10.0.0.1"):
    return {"node_id": node_id, "ip": ip, "machine": machine, "cores": cores, "cpus": cpus}


def test_plan_two_nodes_of_one_machine_share_its_cores():
    # two raylets of one CPU each on one 2-core machine (the test cluster below)
    slots = plan_slots([_node("b" * 8, "m", [(0,), (1,)], 1.0), _node("a" * 8, "m", [(0,), (1,)], 1.0)])
    assert slots == [
        Slot("a" * 8, "10.0.0.1/aaaaaaaa", "m", (0,), 1.0),
        Slot("b" * 8, "10.0.0.1/bbbbbbbb", "m", (1,), 1.0),
        Slot("a" * 8, "10.0.0.1/aaaaaaaa", "m", (0, 1), 0.0, wide=True),
    ]


def test_plan_one_actor_a_physical_core_within_the_nodes_cpus():
    smt = [(0, 4), (1, 5), (2, 6), (3, 7)]  # 4 cores of 2 threads
    slots = plan_slots([_node("n1", "m1", smt, 8.0)])
    assert [(s.cpus, s.num_cpus, s.wide) for s in slots] == [(c, 2.0, False) for c in smt] + [(tuple(range(8)), 0.0, True)]
    slots = plan_slots([_node("n1", "m1", smt, 3.0)])  # ray start --num-cpus 3: what Ray may use
    assert [(s.cpus, s.num_cpus, s.wide) for s in slots] == [((0, 4), 2.0, False), ((1, 5), 1.0, False), ((0, 1, 4, 5), 0.0, True)]
    # two machines: each its own actors and its own wide one; a one-core machine has no wide one
    slots = plan_slots([_node("n1", "m1", [(0,), (1,)], 2.0), _node("n2", "m2", [(0,)], 4.0, "10.0.0.2")])
    assert [(s.node_id, s.cpus, s.wide) for s in slots] == [("n1", (0,), False), ("n1", (1,), False), ("n2", (0,), False),
                                                             ("n1", (0, 1), True)]
    assert plan_slots([_node("n1", "m1", [(0,)], 0.0)]) == []  # a node without CPUs for Ray


def test_parallel_loops_are_recognised():
    start = programs.matmul(8, 8, 8)
    assert not has_parallel_loop(start)
    assert has_parallel_loop(Schedule(start).parallel(0).text)
    assert not has_parallel_loop(Schedule(start).split(0, 2).text)


# -- addresses ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_that_answers_nothing_is_one_line_quickly(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ray", reason="Ray is not installed")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LtError, match=r"^error: bad Ray address 'nonsense': expected HOST:PORT"):
        check_ray_address("nonsense")
    port = _free_port()  # nothing listens there
    t0 = time.monotonic()
    assert cli.main(["matmul:8,8,8", "--ray-address", f"127.0.0.1:{port}", "--budget", "2", "--quiet"]) == 1
    assert time.monotonic() - t0 < 15.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"lt-tune: error: cannot reach the Ray cluster at 127.0.0.1:{port}: ")
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_port_that_is_not_ray_is_one_line(capsys):
    pytest.importorskip("ray", reason="Ray is not installed")
    with socket.socket() as server:  # accepts connections, never speaks gRPC
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        t0 = time.monotonic()
        with pytest.raises(LtError) as e:
            check_ray_address(f"127.0.0.1:{server.getsockname()[1]}")
    assert time.monotonic() - t0 < 40.0
    assert "is not answering as a Ray cluster" in str(e.value) or "did not answer as a Ray cluster" in str(e.value)
    assert "\n" not in str(e.value)


# -- a cluster of two nodes on this machine --------------------------------------------

RAY = Path(sys.executable).with_name("ray")


def _start_node(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    """``ray start ... --block``: the node's processes in a session of their own, down with it."""
    return subprocess.Popen([str(RAY), "start", "--block", "--disable-usage-stats", *args], stdout=log.open("w"),
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def _wait_started(node: subprocess.Popen, log: Path, what: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "Ray runtime started" in text:
            return text
        if node.poll() is not None:
            break
        time.sleep(0.2)
    tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
    pytest.skip(f"a Ray {what} node cannot start on this machine: {tail}")


def _wait_nodes(address: str, env: dict, count: int, timeout: float = 30.0) -> None:
    """Until ``ray status`` lists ``count`` live nodes (a node says it started before the GCS lists it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = subprocess.run([str(RAY), "status", "--address", address], env=env, capture_output=True, text=True, timeout=30)
        active = status.stdout.split("Active:", 1)[-1].split("Pending:", 1)[0]
        if active.count("node_") >= count:
            return
        time.sleep(0.5)
    raise AssertionError(f"the cluster at {address} did not list {count} nodes in {timeout:g} s:\n{status.stdout}{status.stderr}")


def _cpus(worker: str) -> set[int]:
    """The CPUs a logged worker name says it is pinned to (``...:cpu0-1,4``)."""
    out = set()
    for part in worker.rsplit(":cpu", 1)[1].split(","):
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def _stop_node(node: subprocess.Popen) -> None:
    """SIGTERM (Ray stops the node's processes), then SIGKILL to what is left of its session."""
    if node.poll() is None:
        node.send_signal(signal.SIGTERM)
        try:
            node.wait(20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(node.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    node.wait()


def test_a_cluster_of_two_nodes_tunes_and_logs_who_measured(tmp_path):
    """``ray start --head`` and ``ray start --address`` on this machine (one
    CPU each: their actors share its two cores out), then ``lt-tune
    --ray-address``; the first candidate measured kills its actor."""
    pytest.importorskip("ray", reason="Ray is not installed")
    if not RAY.exists():
        pytest.skip(f"no `ray` command beside {sys.executable}")
    if len(physical_cores()) < 2:
        pytest.skip("one physical core here: the second node would have none to measure on")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0",
               RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))  # docs/CLUSTER.md: a token on every node
    roots = [tempfile.mkdtemp(prefix="ltray", dir="/tmp") for _ in range(2)]  # short: Ray's socket paths must fit
    nodes = []
    try:
        port = _free_port()
        head_log, worker_log = tmp_path / "head.log", tmp_path / "worker.log"
        nodes.append(_start_node(["--head", "--port", str(port), "--num-cpus", "1", "--include-dashboard", "false",
                                  "--dashboard-agent-listen-port", str(_free_port()), "--temp-dir", roots[0]], head_log, env))
        said = _wait_started(nodes[0], head_log, "head")
        found = re.search(r"ray start --address='([^']+)'", said)
        address = found.group(1) if found else f"127.0.0.1:{port}"
        nodes.append(_start_node(["--address", address, "--num-cpus", "1", "--dashboard-agent-listen-port", str(_free_port()),
                                  "--temp-dir", roots[1]], worker_log, env))
        _wait_started(nodes[1], worker_log, "second")
        _wait_nodes(address, env, 2)

        (tmp_path / "small.mlir").write_text(programs.matmul(48, 48, 48))
        out, log = tmp_path / "best.mlir", tmp_path / "log.jsonl"
        env.update(LT_SEARCH_DIE_ON="*", LT_SEARCH_DIE_ONCE="1", LT_SEARCH_DIE_DIR=str(tmp_path),
                   LT_MLIR_TUNING_DB=str(tmp_path / "tuning.sqlite"))
        run = subprocess.run([sys.executable, "-m", "lt_mlir.search.cli", "small.mlir", "--ray-address", address,
                              "--budget", "10", "--quiet", "-o", str(out), "--log", str(log), "--plot", str(tmp_path / "p.png")],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, run.stderr[-2000:]
        assert "Traceback" not in run.stderr
    finally:
        for node in reversed(nodes):
            _stop_node(node)
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)

    records = [json.loads(line) for line in log.read_text().splitlines()]
    evaluations = [r for r in records if "moves" in r]
    assert len(evaluations) == 10
    # who measured: actor, node (ip/node id) and cores, in every record; both nodes, a core each
    workers = {e["worker"] for e in evaluations if not e["error"]}
    assert all(re.fullmatch(r"ray-[0-9a-f]{8}@[^/]+/[0-9a-f]{8}:cpu[0-9,-]+", w) for w in workers), workers
    cpus = {w: _cpus(w) for w in workers}
    wide = {w for w in workers if any(cpus[v] < cpus[w] for v in workers)}  # pinned to the others' cores together
    narrow = workers - wide
    assert len({w.split("@")[1].split(":")[0] for w in narrow}) == 2, workers  # two nodes
    assert len(narrow) == 2 and not set.intersection(*(cpus[w] for w in narrow)), workers  # on different cores
    for e in evaluations:  # a parallel candidate is timed on the wide actor
        if has_parallel_loop(e["text"]) and not e["error"]:
            assert e["worker"] in wide, e["worker"]
    # the crash: logged once, with its schedule, never retried
    died = [e for e in evaluations if e["error"].startswith("worker died: ")]
    assert len(died) == 1, [e["error"] for e in evaluations]
    assert died[0]["speedup"] is None and died[0]["text"] and died[0]["pipeline"].startswith("builtin.module(")
    assert sum(e["text"] == died[0]["text"] for e in evaluations) == 1
    assert all(e["error"] == "" or e is died[0] for e in evaluations), [e["error"] for e in evaluations]
    # the winner: its figure as logged, and the module computes the matmul
    best = re.search(r"best: ([0-9.]+)x the start", run.stdout)
    assert best and float(best.group(1)) >= 1.0, run.stdout
    kernel = compile(Schedule(out.read_text()).text)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((48, 48), np.float32), rng.standard_normal((48, 48), np.float32)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)
