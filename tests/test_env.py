"""lt_mlir.env: CompilerGym's loop_tool walk-through step by step, every
action space and observation, the action mask, refusals, determinism,
Gymnasium's env checker and a vector env in subprocesses."""

from __future__ import annotations

import time

import gymnasium as gym
import networkx as nx
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import lt_mlir
import lt_mlir.env  # noqa: F401  (registers lt_mlir/LoopTool-v0)
from lt_mlir import programs
from lt_mlir.env import ACTION_SPACES, DATASETS, OBSERVATIONS, LoopToolEnv

FAST = ("loop_tree", "action_state", "loops_tensor", "stride_tensor", "5_prev_actions_tensor")
TEXT = ("loop_tree", "action_state")


def act(env, name):
    return env.step(env.unwrapped.actions.index(name))


def test_compilergym_walk_through():
    """The reference's documented walk-through, with its action_state values."""
    env = LoopToolEnv("benchmark://loop_tool-cpu-v0/1024", "simple", observations=TEXT, reward=None)
    obs, info = env.reset(seed=0)
    tree = obs["loop_tree"].splitlines()
    assert tree[:3] == ["for i in 1024 : L0 [parallel]", " for i' in 1 : L1", "  for i'' in 1 : L2"]
    assert obs["action_state"].tolist() == [0, 1024, 0]
    obs, *_ = act(env, "toggle_thread")  # size mode, cursor on L0: threads off
    assert obs["loop_tree"].splitlines()[0] == "for i in 1024 : L0"
    act(env, "toggle_mode")
    obs, _, _, _, info = act(env, "up")  # select mode: the cursor moves inward
    assert obs["action_state"].tolist() == [1, 1, 0] and "refused" not in info
    obs, *_ = act(env, "toggle_thread")
    assert obs["loop_tree"].splitlines()[1] == " for i' in 1 : L1 [parallel]"
    act(env, "toggle_mode")
    act(env, "up")
    obs, *_ = act(env, "up")  # size mode: L1 grows to 3, taking iterations from L0
    assert obs["loop_tree"].splitlines()[:3] == ["for i in 341 r 1 : L0", " for i' in 3 : L1 [parallel]", "  for i'' in 1 : L2"]
    assert obs["action_state"].tolist() == [1, 3, 0]
    # the program still adds: compiled and checked against NumPy
    A, B = (np.random.default_rng(i).standard_normal(1024).astype(np.float32) for i in (1, 2))
    np.testing.assert_array_equal(lt_mlir.compile(env.unwrapped.schedule.text)(A, B), A + B)


@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
def test_every_action_of_every_space(space):
    env = LoopToolEnv("benchmark://clipped-matmul-v0/8x16x64", space, observations=FAST, reward=None)
    env.reset(seed=1)
    seen_refusal = False
    for _ in range(2):
        for a in range(env.action_space.n):
            obs, reward, terminated, truncated, info = env.step(a)
            assert env.observation_space.contains(obs)
            assert reward == 0.0 and not terminated and not truncated
            if "refused" in info:
                seen_refusal = True
                assert info["refused"].startswith(("error:", "-:")) or "error:" in info["refused"]
    assert seen_refusal  # some actions do not apply somewhere, and say why
    # whatever the agent did, the program computes the same numbers
    A = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    B = np.random.default_rng(4).standard_normal((64, 16)).astype(np.float32)
    got = lt_mlir.compile(env.schedule.text)(A, B)
    np.testing.assert_allclose(got, np.maximum(A[:, :, None] * B[None], 0).sum(1), rtol=1e-4, atol=1e-4)


def test_refused_action_is_a_no_op_with_the_pass_message():
    env = LoopToolEnv("benchmark://matmul-v0/16x16x16", "extended", observations=TEXT, reward=None)
    obs, _ = env.reset()
    before = obs["loop_tree"]
    obs, _, _, _, info = act(env, "up")  # the cursor is on L0 already
    assert "outermost" in info["refused"] and obs["loop_tree"] == before and info["action_had_no_effect"]
    obs, _, _, _, info = act(env, "split_1024")
    assert "lt-split" in info["refused"] and obs["loop_tree"] == before


def test_action_mask_predicts_refusals():
    env = LoopToolEnv("benchmark://clipped-matmul-v0/8x16x64", "extended", observations=("loop_tree",), reward=None)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(12):
        mask = env.action_mask()
        state = (env.schedule.text, env.cursor)
        for a in range(env.action_space.n):
            trial = LoopToolEnv(env.benchmark, "extended", observations=("loop_tree",), reward=None, action_mask=False)
            trial.reset()
            trial.schedule, trial.cursor, trial.size_mode = env.schedule.copy(), env.cursor, env.size_mode
            _, _, _, _, info = trial.step(a)
            # 1 exactly where the action applies and changes something (CompilerGym's action_had_no_effect)
            assert mask[a] == (0 if info["action_had_no_effect"] else 1), (env.actions[a], info.get("refused"))
            if "refused" in info:
                assert mask[a] == 0
        assert (env.schedule.text, env.cursor) == state  # asking changed nothing
        choices = np.flatnonzero(mask)
        env.step(int(rng.choice(choices)))


@pytest.mark.parametrize("name", [o for o in OBSERVATIONS])
def test_every_observation(name):
    env = LoopToolEnv("benchmark://matmul-v0/16x16x16", "extended", observations=(), reward=None, repeat=3)
    env.reset()
    act(env, "down")
    value = env.observe(name)
    if name in ("ir_tree_networkx", "ir_graph_networkx"):
        assert isinstance(value, nx.DiGraph) and value.number_of_nodes() > 3
        assert all("kind" in d for _, d in value.nodes(data=True))
        return
    assert env._space(name).contains(value), (name, value)
    if name == "action_state":
        assert value.tolist() == [1, 16, 0]
    if name in ("runtime", "flops"):
        assert value[0] > 0
    if name == "5_prev_actions_tensor":
        assert value[0, env.actions.index("down")] == 1 and value.sum() == 1
    if name == "ir":
        assert lt_mlir.Schedule(value).loop_tree == env.observe("loop_tree")


def test_reward_is_the_change_in_gflops():
    env = LoopToolEnv("benchmark://matmul-v0/64x64x64", "extended", observations=("flops",), reward="flops", repeat=5, action_mask=False)
    obs, info = env.reset()
    start = info["gflops"]
    assert obs["flops"][0] == pytest.approx(start)
    obs, reward, _, _, info = act(env, "swap_down")  # m <-> n
    assert reward == pytest.approx(info["gflops"] - start)
    assert info["repeat"] == 5
    obs, reward, _, _, info = act(env, "up")  # the cursor only: the same program, reward 0
    assert reward == 0.0 and "refused" not in info


def test_loop_tree_is_deterministic_under_a_seed():
    def episode(seed):
        env = gym.make("lt_mlir/LoopTool-v0", benchmark="benchmark://clipped-matmul-v0/8x16x64", action_space="extended", observations=TEXT,
                       reward=None, action_mask=False)
        env.reset(seed=seed)
        env.action_space.seed(seed)
        trees = []
        for _ in range(15):
            obs, *_ = env.step(env.action_space.sample())
            trees.append(obs["loop_tree"])
        env.close()
        return trees

    assert episode(5) == episode(5)
    assert episode(5) != episode(6)


def test_time_limit_ends_episodes():
    env = gym.make("lt_mlir/LoopTool-v0", benchmark="benchmark://loop_tool-cpu-v0/64", reward=None, action_mask=False, max_episode_steps=3)
    env.reset()
    truncated = [env.step(0)[3] for _ in range(3)]
    assert truncated == [False, False, True]


def test_datasets_are_iterable_and_seedable():
    ds = LoopToolEnv.datasets["loop_tool-cpu-v0"]
    uris = [b.uri for b in ds]
    assert uris[0] == "benchmark://loop_tool-cpu-v0/1" and len(uris) == len(ds)
    assert ds.random_benchmark(7) == ds.random_benchmark(7)
    assert {DATASETS[n].uri for n in DATASETS} >= {"benchmark://loop_tool-cpu-v0", "benchmark://loop_tool-cuda-v0"}
    with pytest.raises(lt_mlir.LtError, match="loop_tool's pointwise add takes 1 <= N"):
        LoopToolEnv.datasets.benchmark(f"benchmark://loop_tool-cpu-v0/{8 * 2**20}")
    with pytest.raises(lt_mlir.LtError, match="unknown dataset"):
        LoopToolEnv("benchmark://nope-v0/3")
    cuda = LoopToolEnv("benchmark://loop_tool-cuda-v0/4096", "simple", observations=TEXT, reward=None)
    obs, _ = cuda.reset()
    assert "[gpu block]" in obs["loop_tree"].splitlines()[0]


def test_user_programs_tensor_and_text():
    s = lt_mlir.SymbolGenerator()
    A = np.ones((4, 8), np.float32)
    t = lt_mlir.Tensor(A).to(s.m, s.k).sum(s.k)
    env = LoopToolEnv(t, "extended", observations=TEXT, reward=None)
    obs, _ = env.reset()
    assert obs["loop_tree"] == t.loop_tree
    env2 = LoopToolEnv(programs.row_sum(4, 8), "split", observations=TEXT, reward=None)
    assert env2.reset()[0]["loop_tree"].startswith("for m in 4 : L0")
    with pytest.raises(lt_mlir.LtError):
        LoopToolEnv("func.func @f( {", "simple")


def test_check_env():
    env = LoopToolEnv("benchmark://clipped-matmul-v0/8x16x64", "extended", observations=FAST, reward=None)
    check_env(env, skip_render_check=True)


def test_vector_env_in_subprocesses_closes():
    def make():
        return gym.make("lt_mlir/LoopTool-v0", benchmark="benchmark://loop_tool-cpu-v0/1024", observations=TEXT, reward=None, action_mask=False)

    envs = gym.vector.AsyncVectorEnv([make, make], shared_memory=False)
    obs, info = envs.reset(seed=[1, 2])
    assert len(obs["loop_tree"]) == 2
    for _ in range(3):
        obs, reward, terminated, truncated, info = envs.step(np.array([1, 3]))
    t0 = time.perf_counter()
    envs.close()
    assert time.perf_counter() - t0 < 30


def test_unroll_is_bounded_by_body_copies():
    """Full unrolling nested in full unrolling multiplies the body: the
    action stops at 256 copies (the compile time grows with them)."""
    env = LoopToolEnv(programs.matmul(8, 48, 64), "extended", reward=None, action_mask=False)
    env.reset()
    env.cursor = 1  # n: 48 iterations
    _, _, _, _, info = act(env, "unroll")
    assert "refused" not in info and "[unroll full]" in env.observe("loop_tree")
    env.cursor = 0  # m: 8 x 48 = 384 copies
    _, _, _, _, info = act(env, "unroll")
    assert "384 copies" in info["refused"]


def test_a_transition_made_before_is_replayed_exactly(monkeypatch):
    """An episode that comes back to a state replays its transitions from
    the env's cache: the same schedule (text, moves that replay to it,
    undo steps), cursor and refusals as making them again, without running
    the actions (a recipe's passes) a second time."""
    from lt_mlir import agent, moves

    env = LoopToolEnv("matmul-v0/48x32x40", "recipes", reward=None)
    names = ["register_tile", "down", "split_8", "swap_up", "up", "unroll", "register_tile", "vectorize"]
    trace = [env.actions.index(n) for n in names if n in env.actions]

    def walk():
        env.reset()
        seen = []
        for a in trace:
            _, _, _, _, info = env.step(a)
            seen.append((env.schedule.text, env.cursor, info.get("refused"), list(env.schedule.moves)))
        return seen

    first = walk()
    calls = []
    real = agent.act
    monkeypatch.setattr(agent, "act", lambda *a, **k: calls.append(a[3]) or real(*a, **k))
    second = walk()
    assert calls == [] and second == first
    assert any(r for _, _, r, _ in first) and any(r is None for _, _, r, _ in first)  # refusals and moves both replayed
    start = lt_mlir.Schedule(env.benchmark.text)
    assert moves.replay(start, env.schedule.moves).text == env.schedule.text
    steps = len(env.schedule.steps)
    env.schedule.undo()
    assert len(env.schedule.steps) == steps - 1  # the replayed steps are the schedule's own, undoable
    env.close()


def test_remeasure_takes_the_median_of_a_schedules_first_visits(monkeypatch):
    """``remeasure=3``: a schedule is measured again on each of its first
    three visits and its figure is the median of those; later visits
    measure nothing.  The default (1) keeps the first figure.  A fork
    carries the figures."""
    import dataclasses

    from lt_mlir.evaluate import Evaluator

    times = iter([3e-3, 1e-3, 2e-3, 9e-3, 8e-3, 7e-3])
    calls = []
    real = Evaluator.measure

    def fake(self, text, *a, **k):
        m = real(self, text, *a, **k)
        calls.append(text)
        return dataclasses.replace(m, runtime_s=next(times)) if m.ok else m

    monkeypatch.setattr(Evaluator, "measure", fake)
    with pytest.raises(lt_mlir.LtError, match="remeasure is a whole number >= 1, got 0"):
        LoopToolEnv("matmul-v0/8x8x8", reward=None, remeasure=0)
    env = LoopToolEnv("matmul-v0/8x8x8", reward=None, observations=(), remeasure=3, repeat=2)
    env.reset()
    seen = [float(env.observe("runtime")[0]) for _ in range(5)]
    assert seen == [3e-3, 2e-3, 2e-3, 2e-3, 2e-3]  # medians of (3), (3, 1), (3, 1, 2), then kept
    assert len(calls) == 3
    flops = env.schedule.flops()
    assert float(env.observe("gflops")[0]) == pytest.approx(flops / 2e-3 / 1e9)
    other = env.fork()
    assert float(other.observe("runtime")[0]) == 2e-3 and len(calls) == 3
    env.close()
    other.close()
    once = LoopToolEnv("matmul-v0/8x8x8", reward=None, observations=())
    once.reset()
    assert [float(once.observe("runtime")[0]) for _ in range(3)] == [9e-3] * 3 and len(calls) == 4
    once.close()
