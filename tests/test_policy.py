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
from lt_mlir.agent import POLICY_LOOPS, POLICY_PATH, Policy, mask, policy_features
from lt_mlir.env import HELD_OUT, LoopToolEnv
from lt_mlir.env.datasets import benchmark
from lt_mlir.evaluate import Evaluator
from lt_mlir.search.cli import tune

ACTIONS = LoopToolEnv("matmul-v0/16x16x16", "extended", reward=None).actions


def random_policy(path, seed=0, favour: str | None = None) -> Policy:
    rng = np.random.default_rng(seed)
    n_in = POLICY_LOOPS * 25
    layers = [(rng.normal(0, 0.3, (n_in, 16)), rng.normal(0, 0.1, 16)), (rng.normal(0, 0.3, (16, len(ACTIONS))), np.zeros(len(ACTIONS)))]
    if favour:
        layers[1][1][ACTIONS.index(favour)] = 100.0
    Policy.save(str(path), layers, ACTIONS, "extended", POLICY_LOOPS, note="test")
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


def test_lt_tune_policy_strategy(tmp_path, monkeypatch):
    monkeypatch.setenv("LT_MLIR_POLICY", str(random_policy(tmp_path / "p.npz", seed=3).path))
    result = tune("matmul:32,32,32", "policy", budget=300, seed=0)
    assert result.evaluations <= 11  # the start and at most one a step
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
