"""lt_mlir.agent.Policy: the NumPy forward pass against an explicit one and
against torch's (the MaskablePPO actor it was exported from), the mask
respected, the shipped policy's schedules computing what the start does,
``lt-tune --strategy policy``, and MaskablePPO running 1,000 steps on the
environment (skipped without the rl extra)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import lt_mlir
from lt_mlir.agent import POLICY_LOOPS, POLICY_PATH, STOP, STOPPED, Policy, mask, policy_features
from lt_mlir.env import HELD_OUT, LoopToolEnv
from lt_mlir.env.datasets import benchmark
from lt_mlir.evaluate import Evaluator
from lt_mlir.search.cli import tune

ACTIONS = LoopToolEnv("matmul-v0/16x16x16", "extended", reward=None).actions
RECIPE_SPACE = LoopToolEnv("matmul-v0/16x16x16", "recipes", reward=None).actions


def random_policy(path, seed=0, favour: str | None = None, space: str = "extended", stop: bool = False) -> Policy:
    actions = (RECIPE_SPACE if space == "recipes" else ACTIONS) + (["stop"] if stop else [])
    rng = np.random.default_rng(seed)
    n_in = POLICY_LOOPS * 25
    layers = [(rng.normal(0, 0.3, (n_in, 16)), rng.normal(0, 0.1, 16)), (rng.normal(0, 0.3, (16, len(actions))), np.zeros(len(actions)))]
    if favour:
        layers[1][1][actions.index(favour)] = 100.0
    Policy.save(str(path), layers, actions, space, POLICY_LOOPS, note="test")
    return Policy(str(path))


def test_forward_pass_is_tanh_layers_then_logits(tmp_path):
    p = random_policy(tmp_path / "p.npz")
    x = np.random.default_rng(1).random(POLICY_LOOPS * 25).astype(np.float32)
    (w0, b0), (w1, b1) = p.layers
    np.testing.assert_allclose(p.logits(x), np.tanh(x @ w0 + b0) @ w1 + b1, rtol=1e-5)
    assert p.actions == ACTIONS and p.space == "extended" and p.meta == {"meta_note": "test"}


def test_a_bad_file_is_an_lt_error(tmp_path):
    with pytest.raises(lt_mlir.LtError, match="no trained policy"):
        Policy(str(tmp_path / "none.npz"))
    np.savez(tmp_path / "bad.npz", x=np.zeros(3))
    with pytest.raises(lt_mlir.LtError, match="not a policy saved by Policy.save"):
        Policy(str(tmp_path / "bad.npz"))


def test_the_mask_is_respected(tmp_path):
    """A policy that always wants 'up' (refused on L0) takes another action,
    and every action it takes applies and changes something."""
    p = random_policy(tmp_path / "p.npz", favour="up")
    start = lt_mlir.Schedule(benchmark("matmul-v0/32x32x32").text)
    allowed = mask(start, 0, True, ACTIONS, "extended", "cpu")
    assert not allowed[ACTIONS.index("up")]
    choice = p.choose(start, 0, allowed)
    assert choice != ACTIONS.index("up") and allowed[choice]
    states: list = []
    final, trace = p.run(start, 6, states=states)
    assert len(trace) == 6
    # it wants 'up' above all, so it goes up whenever the cursor has left L0 (only 'down' moves it inward)
    for i, name in enumerate(trace):
        assert (name == "up") == (trace[:i].count("down") > trace[:i].count("up")), trace
    if states:
        assert states[-1][0].text == final.text
        assert lt_mlir.moves.replay(start, states[-1][1]).text == final.text  # the moves recorded make that program


@pytest.mark.skipif(not os.path.exists(POLICY_PATH), reason="no shipped policy (examples/train_env.py makes it)")
@pytest.mark.parametrize("uri", HELD_OUT)
def test_shipped_policy_schedules_compute_what_the_start_computes(uri):
    start = lt_mlir.Schedule(benchmark(uri).text)
    final, trace = Policy().run(start, 10)
    assert len(trace) <= 10
    with Evaluator(start, samples=3, min_sample_s=0.0, budget_s=0.0, baseline=False) as ev:
        m = ev.measure(final)
    assert m.ok and m.correct, (trace, m.error, m.mismatch)


def _best_path_probabilities(p: Policy, start, depth: int) -> dict:
    """Every program reachable in at most ``depth`` of the policy's
    allowed actions (STOP ends a run), by brute force: key -> the highest
    probability of a run reaching it (the product of the softmax of the
    logits over the allowed actions along the run)."""
    best: dict = {}
    level = [(start.copy(), 0, True, 1.0)]
    for _ in range(depth):
        nxt = []
        for s, c, mode, prob in level:
            allowed = mask(s, c, mode, p.moves, p.space, "cpu").astype(bool)
            if not allowed.any():
                continue
            logits = p.logits(policy_features(s, c, p.max_loops))
            allowed = np.append(allowed, True) if p.stops else allowed
            e = np.where(allowed, np.exp(logits - logits[allowed].max()), 0.0)
            for i, name in enumerate(p.moves):
                if allowed[i]:
                    t = s.copy()
                    moved, new_mode, _ = lt_mlir.agent.act(t, c, mode, name, p.space, "cpu")
                    q = prob * e[i] / e.sum()
                    best[t.key] = max(best.get(t.key, 0.0), q)
                    nxt.append((t, moved, new_mode, q))
        level = nxt
    best.pop(start.key, None)
    return best


def test_policy_search_orders_programs_by_the_policy(tmp_path):
    """``Policy.search``: the greedy run's programs first, in its order;
    then every other program within two actions, each once, in the order
    of the most probable run reaching it (brute force over every run of
    two actions: the reference); the moves given make each program."""
    p = random_policy(tmp_path / "p.npz", seed=5, stop=True)
    start = lt_mlir.Schedule(benchmark("matmul-v0/8x16x8").text)
    greedy: list = []
    p.run(start, 2, states=greedy)
    reference = _best_path_probabilities(p, start, 2)
    found = p.search(start, 1000, steps=2, expansions=10_000, min_probability=0.0)
    keys = [s.key for s, _ in found]
    assert len(keys) == len(set(keys)) and start.key not in keys
    greedy_keys = list(dict.fromkeys(s.key for s, _ in greedy))
    assert keys[:len(greedy_keys)] == greedy_keys
    assert set(keys) == set(reference)  # every program within two actions, nothing else
    rest = [reference[k] for k in keys[len(greedy_keys):]]
    assert all(a >= b * (1 - 1e-9) for a, b in zip(rest, rest[1:])), rest
    for s, moves in found:
        assert lt_mlir.moves.replay(start, moves).text == s.text
    assert [s.key for s, _ in p.search(start, 3, steps=2)] == keys[:3]  # n: the first n of them


def test_lt_tune_policy_strategy(tmp_path, monkeypatch):
    """The strategy measures the policy's programs in ``Policy.search``'s
    order until the budget is spent, and returns a correct schedule."""
    from lt_mlir import agent
    from lt_mlir.search.tune import Tuner

    p = random_policy(tmp_path / "p.npz", seed=3)
    monkeypatch.setenv("LT_MLIR_POLICY", str(p.path))
    masks, at_measure = [0], []
    real_effects, real_measure = agent.effects, Tuner.measure
    monkeypatch.setattr(agent, "effects", lambda *a, **k: masks.__setitem__(0, masks[0] + 1) or real_effects(*a, **k))
    monkeypatch.setattr(Tuner, "measure", lambda self, cands, *a, **k: at_measure.append(masks[0]) or real_measure(self, cands, *a, **k))
    result = tune("matmul:32,32,32", "policy", budget=12, seed=0, model=True)  # every program measured, twins too (the IR model measures a code once)
    # the programs are found as they are measured: the first chunk is measured before the search for the rest
    assert len(at_measure) == 2 and at_measure[0] < at_measure[1]
    measured = [e.text for e in result.tuner.evaluations]  # the start is measured apart, as the baseline
    order = [s.text for s, _ in p.search(result.tuner.start, 12, steps=10)]
    assert len(measured) == 12 and result.tuner.start.text not in measured
    # the policy's first 12 programs, in chunks of 10 in its order (within a chunk, the cost model's order)
    assert set(measured[:10]) == set(order[:10]) and set(measured[10:]) == set(order[10:])
    A, B = (np.random.default_rng(i).random((32, 32), dtype=np.float32) for i in (1, 2))
    np.testing.assert_allclose(result.schedule.compile()(A, B), A @ B, rtol=1e-4)


def test_maskable_ppo_runs_1000_steps_and_exports(tmp_path):
    """sb3-contrib's MaskablePPO on the env as its docs use it (ActionMasker
    over env.action_masks), 1,000 steps; the exported NumPy policy gives the
    torch actor's logits."""
    torch = pytest.importorskip("torch", reason="the rl extra (pip install -e '.[rl]') is not installed")
    sb3c = pytest.importorskip("sb3_contrib", reason="the rl extra (pip install -e '.[rl]') is not installed")
    import gymnasium as gym
    from sb3_contrib.common.wrappers import ActionMasker
    from stable_baselines3.common.logger import Logger

    base = LoopToolEnv("clipped-matmul-v0/8x16x64", "extended", observation_space="loops_tensor", max_loops=POLICY_LOOPS,
                       reward=None, action_mask=False)

    class Flat(gym.ObservationWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.observation_space = gym.spaces.Box(0.0, np.inf, shape=(POLICY_LOOPS * 25,), dtype=np.float32)

        def observation(self, obs):
            return np.log2(1.0 + obs).reshape(-1).astype(np.float32)

    env = ActionMasker(gym.wrappers.TimeLimit(Flat(base), 10), lambda _: base.action_masks())
    torch.set_num_threads(1)
    model = sb3c.MaskablePPO("MlpPolicy", env, n_steps=100, batch_size=50, n_epochs=2, seed=0, policy_kwargs=dict(net_arch=[32, 32]))
    model.set_logger(Logger(None, []))  # no folder left in /tmp
    model.learn(total_timesteps=1000)
    assert model.num_timesteps >= 1000
    exported = Policy.export(model, str(tmp_path / "ppo.npz"), base.actions, "extended")
    obs, _ = env.reset()
    with torch.no_grad():
        logits = model.policy.get_distribution(model.policy.obs_to_tensor(obs)[0]).distribution.logits.numpy()[0]
    x = policy_features(base.schedule, base.cursor)
    np.testing.assert_allclose(obs, x, rtol=1e-6)
    # torch's distribution holds log-softmax logits: equal up to a constant
    ours = exported.logits(x)
    np.testing.assert_allclose(ours - ours.max(), logits - logits.max(), rtol=1e-4, atol=1e-4)


def test_ui_suggest_makes_the_policys_action(tmp_path, monkeypatch):
    from lt_mlir.tui.session import Session

    monkeypatch.setenv("LT_MLIR_POLICY", str(random_policy(tmp_path / "p.npz", favour="parallel").path))
    session = Session(lt_mlir.Schedule(benchmark("matmul-v0/32x32x32").text))
    before = session.schedule.text
    name, error = session.suggest()
    assert error is None and name == "parallel" and "[parallel]" in session.schedule.loop_tree.splitlines()[0]
    assert session.undo() is None and session.schedule.text == before  # one undoable move
    monkeypatch.setenv("LT_MLIR_POLICY", str(tmp_path / "missing.npz"))
    fresh = Session(lt_mlir.Schedule(benchmark("matmul-v0/32x32x32").text))
    name, error = fresh.suggest()
    assert name is None and "no trained policy" in error


def test_recipe_actions_are_one_step_each_and_exact():
    """The ``recipes`` space: the extended actions plus the CPU recipes; a
    recipe action is one undoable step whose moves replay to the same
    program and whose kernel computes A @ B; a recipe that refuses the
    program is a refused action that changes nothing."""
    recipes_only = [a for a in RECIPE_SPACE if a not in ACTIONS]
    assert RECIPE_SPACE[:len(ACTIONS)] == ACTIONS
    assert recipes_only == ["register_tile", "register_tile_parallel", "vector_rows", "vector_rows_parallel",
                            "vector_loops", "vector_loops_parallel", "channel_tile", "channel_tile_parallel",
                            "row_tile", "row_tile_parallel"]
    env = LoopToolEnv("matmul-v0/40x48x36", "recipes", reward=None)
    env.reset()
    start = env.schedule.copy()
    *_, info = env.step(RECIPE_SPACE.index("register_tile"))
    assert "refused" not in info
    tiled = env.schedule
    assert len(tiled.steps) == 1 and len(tiled.moves) > 3  # split, distribute, swap, ... as one step
    assert lt_mlir.moves.replay(start, tiled.moves).text == tiled.text
    A, B = (np.random.default_rng(i).random((40, 36) if i == 1 else (36, 48), dtype=np.float32) for i in (1, 2))
    np.testing.assert_allclose(tiled.compile()(A, B), A @ B, rtol=1e-4)
    assert tiled.copy().undo().text == start.text
    before = env.schedule.text
    *_, info = env.step(RECIPE_SPACE.index("channel_tile"))  # a matmul is not a convolution
    assert "channel_tile" in info["refused"] and env.schedule.text == before
    assert not env.action_masks()[RECIPE_SPACE.index("channel_tile")]


def test_vector_loops_action_on_softmax_matches_numpy():
    env = LoopToolEnv("softmax-v0/8x40", "recipes", reward=None)
    env.reset()
    *_, info = env.step(RECIPE_SPACE.index("vector_loops"))
    assert "refused" not in info and "vectorize" in env.schedule.loop_tree
    x = np.random.default_rng(0).random((8, 40), dtype=np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(env.schedule.compile()(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_row_tile_action_on_a_row_sum_with_a_tail_matches_numpy():
    """``row_tile_parallel``: 4 rows side by side (a row count that leaves a
    tail of 2), one undoable step; the sums are NumPy's."""
    env = LoopToolEnv("reduction-v0/18x40", "recipes", reward=None)
    env.reset()
    start = env.schedule.copy()
    *_, info = env.step(RECIPE_SPACE.index("row_tile_parallel"))
    assert "refused" not in info and len(env.schedule.steps) == 1
    assert "parallel" in env.schedule.loop_tree and "vectorize" in env.schedule.loop_tree
    assert lt_mlir.moves.replay(start, env.schedule.moves).text == env.schedule.text
    x = np.random.default_rng(0).random((18, 40), dtype=np.float32)
    np.testing.assert_allclose(env.schedule.compile()(x), x.sum(axis=1), rtol=1e-5)
    env.reset(options={"benchmark": "matmul-v0/16x16x16"})  # no row reduction that reads whole vectors: refused, unchanged
    before = env.schedule.text
    *_, info = env.step(RECIPE_SPACE.index("row_tile"))
    assert "row_tile" in info["refused"] and env.schedule.text == before


def test_policy_recipe_action_states_replay_and_tune(tmp_path, monkeypatch):
    """A policy that takes a recipe: the states ``run`` reports carry the
    recipe's moves (what lt-tune measures and logs), and lt-tune's policy
    strategy returns a correct tiled matmul."""
    p = random_policy(tmp_path / "p.npz", favour="register_tile", space="recipes")
    start = lt_mlir.Schedule(benchmark("matmul-v0/32x32x32").text)
    states: list = []
    final, trace = p.run(start, 3, states=states)
    assert trace[0] == "register_tile" and states
    for s, moves in states:
        assert lt_mlir.moves.replay(start, moves).text == s.text
    monkeypatch.setenv("LT_MLIR_POLICY", str(p.path))
    result = tune("matmul:32,32,32", "policy", budget=300, seed=0)
    A, B = (np.random.default_rng(i).random((32, 32), dtype=np.float32) for i in (1, 2))
    np.testing.assert_allclose(result.schedule.compile()(A, B), A @ B, rtol=1e-4)


def test_ui_suggest_of_a_recipe_is_one_undoable_step(tmp_path, monkeypatch):
    from lt_mlir.tui.session import Session

    monkeypatch.setenv("LT_MLIR_POLICY", str(random_policy(tmp_path / "p.npz", favour="register_tile", space="recipes").path))
    session = Session(lt_mlir.Schedule(benchmark("matmul-v0/32x32x32").text))
    before = session.schedule.text
    name, error = session.suggest()
    assert error is None and name == "register_tile" and "unroll" in session.schedule.loop_tree
    assert session.undo() is None and session.schedule.text == before


def test_training_reward_normalized_by_the_programs_best_recipe():
    """``examples/train_env.py --reward normalized``: a program's reference
    is the best of its start and of each recipe action its mask allows,
    measured once, after which the episode starts from the start schedule;
    the last step's reward is the final speedup over the start as a
    fraction of the reference, minus one."""
    pytest.importorskip("sb3_contrib", reason="the rl extra is not installed")
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "train_env.py")
    spec = importlib.util.spec_from_file_location("train_env", path)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    uri = "benchmark://matmul-v0/24x16x32"
    env, base = train.make_env(0, benchmarks=[uri], reward="normalized")
    env.reset(seed=0)
    final = env.env.env  # ActionMasker(LogLoops(FinalSpeedup))
    reference = final.reference[uri]
    assert reference >= 1.0  # the start is among what it is the best of
    assert base.steps == 0 and not base.history and base.schedule.text == lt_mlir.Schedule(benchmark(uri).text).text
    down = base.actions.index("down")
    for t in range(train.STEPS):
        _, reward, terminated, truncated, info = env.step(down)
        assert terminated == (t == train.STEPS - 1) and not truncated  # the reward is final: nothing to bootstrap
    assert reward == pytest.approx(info["speedup"] / reference - 1.0)
    env.reset()
    assert final.reference == {uri: reference}  # measured once a program


def test_training_reward_symmetric_weighs_a_slowdown_as_its_inverse_speedup():
    """``examples/train_env.py --reward symmetric``: the last step's reward
    is s - 1/s for the final speedup s (0 before it), so that a slowdown by
    a factor scores what a speedup by that factor gains, negated."""
    pytest.importorskip("sb3_contrib", reason="the rl extra is not installed")
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "train_env.py")
    spec = importlib.util.spec_from_file_location("train_env", path)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    uri = "benchmark://matmul-v0/64x64x64"  # register_tile is many times the start: a speedup whatever the load
    env, base = train.make_env(0, benchmarks=[uri], reward="symmetric")
    env.reset(seed=0)
    recipe = base.actions.index("register_tile")
    assert base.action_masks()[recipe]
    rewards = []
    for t in range(train.STEPS):
        _, reward, _, truncated, info = env.step(recipe if t == 0 else base.actions.index("down"))
        rewards.append(reward)
    s = info["speedup"]
    assert rewards[:-1] == [0.0] * (train.STEPS - 1)
    assert s > 1.0 and rewards[-1] == pytest.approx(s - 1.0 / s)  # register-tiled: faster than the start
    final = env.env.env  # ActionMasker(LogLoops(FinalSpeedup))
    assert final.reward == "symmetric"
    # odd in log s: a slowdown by s scores the speedup's reward negated; unmeasurable counts as 10x slower
    env.reset()
    base.observe = lambda name: [0.0]  # the final schedule cannot be measured
    for t in range(train.STEPS):
        _, reward, _, _, info = env.step(base.actions.index("down"))
    assert info["speedup"] == 0.0 and reward == pytest.approx(train.SYMMETRIC_FLOOR - 1.0 / train.SYMMETRIC_FLOOR)


def test_a_policy_that_stops_ends_its_run_there(tmp_path, monkeypatch):
    """A policy trained with ``--stop`` has ``STOP`` as its last action,
    always allowed: it ends ``run`` (fewer steps), ``step`` says so, the UI's
    suggest reports it and changes nothing, and the space's own mask (one
    entry fewer) is accepted by ``choose``."""
    start = lt_mlir.Schedule(benchmark("matmul-v0/32x32x32").text)
    # register_tile first (its logit 100), then stop (its logit 50) over every other action
    p = random_policy(tmp_path / "p.npz", space="recipes", stop=True, favour="register_tile")
    p.layers[-1][1][p.actions.index(STOP)] = 50.0
    Policy.save(p.path, p.layers, p.actions, "recipes", POLICY_LOOPS)
    p = Policy(p.path)
    assert p.stops and p.moves == RECIPE_SPACE and p.actions == RECIPE_SPACE + [STOP]
    final, trace = p.run(start, 10)
    assert trace == ["register_tile", STOP], trace
    assert final.text == lt_mlir.moves.replay(start, final.moves).text and "unroll" in final.loop_tree
    A, B = (np.random.default_rng(i).random((32, 32), dtype=np.float32) for i in (1, 2))
    np.testing.assert_allclose(final.compile()(A, B), A @ B, rtol=1e-4)
    allowed = mask(final, 0, True, p.moves, "recipes", "cpu")
    assert p.choose(final, 0, allowed) == len(RECIPE_SPACE)  # the space's mask: stop is allowed
    assert p.choose(final, 0, np.append(allowed, 0)) != len(RECIPE_SPACE)  # the caller's mask may forbid it
    s = final.copy()
    assert p.step(s, 0) == (STOP, 0, True, STOPPED) and s.text == final.text
    from lt_mlir.tui.session import Session

    monkeypatch.setenv("LT_MLIR_POLICY", str(p.path))
    session = Session(final.copy())
    before = session.schedule.text
    assert session.suggest() == (None, STOPPED) and session.schedule.text == before


def test_training_stop_action_ends_the_episode_with_the_schedules_reward():
    """``examples/train_env.py --stop``: one more action, always allowed,
    that ends the episode where it is taken (terminated) with the reward of
    the schedule it has then."""
    pytest.importorskip("sb3_contrib", reason="the rl extra is not installed")
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "train_env.py")
    spec = importlib.util.spec_from_file_location("train_env", path)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    env, base = train.make_env(0, benchmarks=["benchmark://matmul-v0/64x64x64"])  # the stop action is the default
    n = len(base.actions)
    assert env.action_space.n == n + 1
    obs, _ = env.reset(seed=0)
    masks = env.action_masks()
    assert len(masks) == n + 1 and masks[-1] and (masks[:-1] == base.action_masks()).all()
    _, reward, terminated, truncated, info = env.step(base.actions.index("register_tile"))
    assert reward == 0.0 and not terminated and not truncated
    after = base.schedule.text
    obs, reward, terminated, truncated, info = env.step(n)  # stop after one step
    assert terminated and not truncated and base.schedule.text == after and base.steps == 1
    assert info["speedup"] > 2.0 and reward == pytest.approx(info["speedup"] - 1.0 / info["speedup"])  # the default reward
    assert obs.shape == env.observation_space.shape and env.observation_space.contains(obs)


def test_training_imitation_clones_the_teachers_recipe_then_stop(tmp_path):
    """``examples/train_env.py --imitate``: the teacher takes, on each
    program, the recipe action timed fastest (interleaved with the start)
    and stops; its steps come with the policy's features and the env's
    mask at each state, and cloning them makes an actor whose greedy run,
    exported for NumPy, takes the same actions -- to a program that computes
    the product.  The recipes that paid less are taught as fallbacks where
    the mask leaves out the ones ahead of them, STOP after the last."""
    pytest.importorskip("sb3_contrib", reason="the rl extra is not installed")
    import importlib.util

    from sb3_contrib import MaskablePPO

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "train_env.py")
    spec = importlib.util.spec_from_file_location("train_env", path)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    uri = "benchmark://matmul-v0/64x64x64"  # register-tiled many times the start (22x on a 2-core EPYC): a teacher's step whatever the load
    xs_all, acts_all, masks_all, lines, own = train.demonstrations([uri])
    env, base = train.make_env(0, benchmarks=[uri])
    env.reset(seed=0)
    names = base.actions
    start = lt_mlir.Schedule(benchmark(uri).text)
    xs, acts, masks = xs_all[own], acts_all[own], masks_all[own]  # the teacher's episode
    assert acts[-1] == len(names) and 2 <= len(acts) <= 3  # one or two recipes, then stop
    taken = [names[a] for a in acts[:-1]]
    # the fallbacks: after a state's own row, the same state with the teacher's choice (and each
    # recipe taught after it) left out of the mask, the next recipe, STOP where none is left
    assert own[0] and (~own).sum() >= 1
    for r in np.flatnonzero(~own):
        o = max(k for k in np.flatnonzero(own) if k < r)  # the state's own row
        np.testing.assert_array_equal(xs_all[r], xs_all[o])
        assert masks_all[o][acts_all[o]] and not masks_all[r][acts_all[o]]  # the teacher's choice left out
        assert masks_all[r][acts_all[r]] and not (masks_all[r] & ~masks_all[o]).any()  # allowed, within the state's mask
        last = r + 1 == len(own) or own[r + 1]
        assert (acts_all[r] == len(names)) == last  # STOP closes a state's fallbacks
    assert all(name.startswith(("register_tile", "vector_")) for name in taken), taken
    assert len(lines) == 1 and taken[0] in lines[0]
    np.testing.assert_array_equal(xs[0], policy_features(start, 0))
    np.testing.assert_array_equal(masks[0], np.append(base.action_masks(), True))
    assert all(m[a] for m, a in zip(masks, acts))  # every teacher step is allowed where it is taken
    model = MaskablePPO("MlpPolicy", env, seed=0, n_steps=20, batch_size=10, policy_kwargs=dict(net_arch=[64, 64]))
    # the episode and its fallbacks, these weighted less (--fallback-weight 0.5): where a fallback meets
    # a step of the episode at states one feature apart, the episode's step wins
    train.imitate(model, xs_all, acts_all, masks_all, weights=np.where(own, 1.0, 0.5))
    assert train.imitate(model, xs, acts, masks, epochs=0) == 1.0  # the greedy actor takes every step of the teacher's episode
    p = Policy.export(model, str(tmp_path / "p.npz"), names + [STOP], "recipes", POLICY_LOOPS)
    final, trace = p.run(start, 10)
    assert trace == taken + [STOP]
    A, B = (np.random.default_rng(i).random((64, 64), dtype=np.float32) for i in (1, 2))
    np.testing.assert_allclose(final.compile()(A, B), A @ B, rtol=1e-4)


def test_training_imitation_is_refused_without_the_recipes_and_stop():
    """``--imitate`` with ``--no-stop`` (or another space): the teacher takes a
    recipe and then stops, so the run is refused at once, a one-line
    diagnostic, before any environment is built; so is ``--anchor``
    (more cloning during PPO) without ``--imitate``, and a fallback weight
    outside [0, 1]."""
    pytest.importorskip("sb3_contrib", reason="the rl extra is not installed")
    import subprocess
    import sys

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "train_env.py")
    for extra in (["--no-stop"], ["--space", "extended"]):
        r = subprocess.run([sys.executable, path, "--imitate", "--minutes", "0.01", *extra], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert r.stderr.strip().splitlines()[-1].endswith("--imitate needs the recipes space and the stop action (the teacher takes a recipe, then stops)")
    r = subprocess.run([sys.executable, path, "--anchor", "5", "--minutes", "0.01"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].endswith("--anchor needs --imitate and a count of at least 0, got 5 without --imitate")
    r = subprocess.run([sys.executable, path, "--imitate", "--fallback-weight", "1.5", "--minutes", "0.01"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].endswith("--fallback-weight is a weight in [0, 1], got 1.5")


def test_training_interrupted_saves_the_policy_and_exits_130(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) during
    ``examples/train_env.py``'s training: the policy trained so far is
    saved and loads, no traceback, exit status 130 as lt-tune's (it was 0,
    as if the run had finished)."""
    pytest.importorskip("sb3_contrib", reason="the rl extra is not installed")
    import signal
    import subprocess
    import sys
    import time

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "train_env.py")
    out = tmp_path / "p.npz"
    # -X faulthandler: a run that does not end after the Ctrl-C is made to print where it is (SIGABRT) before the test fails
    p = subprocess.Popen([sys.executable, "-X", "faulthandler", path, "--minutes", "30", "--envs", "1", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert p.stdout.readline().startswith("training seed 0 on ")
        time.sleep(2)  # into PPO's steps
        os.killpg(p.pid, signal.SIGINT)
        try:
            stdout, stderr = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            if p.poll() is not None:  # it ended, but something it started still holds its output open
                group = subprocess.run(["ps", "-o", "pid,stat,args", "-g", str(p.pid)], capture_output=True, text=True).stdout
                pytest.fail(f"train_env exited ({p.returncode}) but a process it started still holds its output:\n{group}")
            os.kill(p.pid, signal.SIGABRT)
            stdout, stderr = p.communicate(timeout=30)
            pytest.fail(f"train_env did not end within 120 s of the Ctrl-C; its output:\n{stdout[-3000:]}\nwhere it was:\n{stderr[-8000:]}")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted: saving the policy trained so far" in stdout
    policy = Policy(str(out))
    assert policy.actions == RECIPE_SPACE + [STOP] and policy.space == "recipes"
