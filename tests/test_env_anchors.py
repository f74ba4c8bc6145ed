"""lt_mlir.env against its anchors: LoopTune's actions and observations as
LoopTune's environment (loopstack/looptune at f85c832, loop_tool's
``loop_tune`` branch agent) defines them, CompilerGym's ``loop_tool`` tests
(tests/loop_tool/actions_test.py) step by step, and CompilerGym's API
(URIs, fork, validate, the dataset wrappers, RLlib's and sb3-contrib's
conventions).  The expected trees are the references' own, renamed to our
dims."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import lt_mlir
import lt_mlir.env  # noqa: F401  (registers lt_mlir/LoopTool-v0)
from lt_mlir.env import (
    ACTION_SPACES,
    DATASETS,
    CycleOverBenchmarks,
    IterateOverBenchmarks,
    LoopToolEnv,
    RandomOrderBenchmarks,
)
from lt_mlir.env.loop_tool_env import plain

TEXT = ("loop_tree", "action_state")


def act(env, name):
    return env.step(env.unwrapped.actions.index(name))


def tree(env) -> list:
    return env.observe("loop_tree").splitlines()


def loop_line(env, index: int) -> str:
    """Loop ``index``'s line without its L-number: ``for c in 32``."""
    line = next(line for line in tree(env) if line.rstrip().endswith(f": L{index}") or f": L{index} [" in line)
    return line.split(" : L")[0]


# ------------------------------------------------------------ LoopTune


def test_looptune_action_list():
    """LoopTune's environment lists exactly these (example_service.py)."""
    assert ACTION_SPACES["looptune"] == ["up", "down", "swap_up", "swap_down", "split_4", "split_8", "split_16"]


def test_looptune_up_is_the_previous_loop_and_down_the_next():
    env = LoopToolEnv("benchmark://matmul-v0/112x112x112", "looptune", observations=TEXT, reward=None)
    env.reset()
    _, _, _, _, info = act(env, "up")  # at L0: LoopTune's previous_ref asserts; here a refused no-op
    assert env.cursor == 0 and "first (outermost)" in info["refused"]
    act(env, "down")
    act(env, "down")
    assert env.cursor == 2 and loop_line(env, 2).strip().startswith("for k in 112")
    _, _, _, _, info = act(env, "down")  # the last loop
    assert env.cursor == 2 and "last (innermost)" in info["refused"]
    act(env, "up")
    assert env.cursor == 1


def test_looptune_swaps_carry_the_cursor():
    """agent.cpp: swap_up = try_swap(cursor, previous) then up(); swap_down
    the same with down(): the cursor stays on the loop it moved.  (Two
    levels of one dim do not swap: LoopTune's try_swap then leaves the tree
    and moves the cursor, as up/down would; lt-swap refuses.)"""
    s = lt_mlir.SymbolGenerator()
    A = np.ones((8, 16, 32), np.float32)
    env = LoopToolEnv(lt_mlir.Tensor(A).to(s.a, s.b, s.c) + lt_mlir.Tensor(A).to(s.a, s.b, s.c), "looptune", observations=TEXT,
                      reward=None)
    env.reset()
    act(env, "down")
    act(env, "down")  # L2: c, the innermost of a, b, c
    moved = loop_line(env, 2).strip()
    act(env, "swap_up")
    assert env.cursor == 1 and loop_line(env, 1).strip() == moved
    act(env, "swap_up")
    assert env.cursor == 0 and loop_line(env, 0).strip() == moved
    assert tree(env)[:3] == ["for c in 32 : L0", " for a in 8 : L1", "  for b in 16 : L2"]
    act(env, "swap_down")
    assert env.cursor == 1 and loop_line(env, 1).strip() == moved
    split = LoopToolEnv(lt_mlir.programs.pointwise_add(4096, blocks=[8, 4]), "looptune", observations=TEXT, reward=None)
    split.reset()
    act(split, "down")
    _, _, _, _, info = act(split, "swap_up")
    assert "both iterate dim 'i'" in info["refused"] and split.cursor == 1


def test_looptune_split_keeps_the_cursor_on_the_outer_part():
    """mutate.cpp split: outer (size // N, size % N) around an inner N; the
    cursor index is unchanged (ran on LoopTune's mm112: 112 split_32 ->
    3 r 16 { 32 }); a loop smaller than N is refused."""
    env = LoopToolEnv("benchmark://matmul-v0/112x112x112", "looptune", observations=TEXT, reward=None)
    env.reset()
    act(env, "split_16")
    assert env.cursor == 0 and tree(env)[:2] == ["for m in 7 : L0", " for m' in 16 : L1"]
    ext = LoopToolEnv("benchmark://matmul-v0/112x112x112", "extended", observations=TEXT, reward=None)
    ext.reset()
    act(ext, "split_32")
    assert ext.cursor == 0 and tree(ext)[:2] == ["for m in 3 r 16 : L0", " for m' in 32 : L1"]
    act(ext, "down")
    _, _, _, _, info = act(ext, "split_64")  # 32 iterations
    assert "refused" in info and tree(ext)[1] == " for m' in 32 : L1"


def test_previous_actions_newest_first_refusals_not_recorded():
    """loop_tool_env.py: reversed(agent.actions[-5:]), and an unavailable
    action is never appended to agent.actions."""
    env = LoopToolEnv("benchmark://matmul-v0/64x64x64", "looptune", observations=("5_prev_actions_tensor",), reward=None)
    env.reset()
    for name in ("down", "split_8", "up"):
        act(env, name)
    act(env, "up")  # refused at L0: not recorded
    prev = env.observe("5_prev_actions_tensor")
    names = [env.actions[int(np.argmax(row))] for row in prev if row.any()]
    assert names == ["up", "split_8", "down"] and prev[3:].sum() == 0


def test_a_looptune_trace_replays_by_name():
    env = LoopToolEnv("benchmark://matmul-v0/64x64x64", "looptune", observations=TEXT, reward=None)
    env.reset()
    env.multistep(["down", "down", "swap_up", "split_8"])
    again = LoopToolEnv("benchmark://matmul-v0/64x64x64", "looptune", observations=TEXT, reward=None)
    again.reset()
    for name in ["down", "down", "swap_up", "split_8"]:
        act(again, name)
    assert env.schedule.text == again.schedule.text and env.cursor == again.cursor == 2
    with pytest.raises(ValueError, match="unknown action 'vectorise'"):
        env.multistep(["vectorise"])


def test_normalized_reward_is_the_gflops_change_over_max_gflops(monkeypatch):
    """flops_loop_nest_reward.py NormRewardTensor: (new - prev) / MAX_GFLOPS."""
    monkeypatch.setenv("MAX_GFLOPS", "250")
    env = LoopToolEnv("benchmark://matmul-v0/64x64x64", "looptune", observation_space="flops_loop_nest_tensor",
                      reward_space="normalized", repeat=5, action_mask=False)
    obs, info = env.reset()
    start = info["gflops"]
    assert obs.shape == (1,) and obs[0] == pytest.approx(start)
    env.multistep(["down", "down"])
    _, reward, _, _, info = act(env, "swap_up")
    assert reward == pytest.approx((info["gflops"] - start) / 250)
    monkeypatch.delenv("MAX_GFLOPS")
    with pytest.raises(lt_mlir.LtError, match="MAX_GFLOPS"):
        LoopToolEnv("benchmark://matmul-v0/64x64x64", reward="normalized")


def test_speedup_and_runtime_rewards():
    env = LoopToolEnv("benchmark://matmul-v0/64x64x64", "looptune", observations=("runtime", "gflops"), reward="speedup",
                      repeat=5, action_mask=False)
    obs, info = env.reset()
    start = info["gflops"]
    env.multistep(["down", "down"])
    _, reward, _, _, info = act(env, "swap_up")
    assert reward == pytest.approx(info["gflops"] / start - 1)
    env2 = LoopToolEnv("benchmark://matmul-v0/64x64x64", "looptune", observation_space="runtime", reward="runtime", repeat=5,
                       action_mask=False)
    before = env2.reset()[0][0]
    env2.multistep(["down", "down"])
    after, reward, *_ = act(env2, "swap_up")
    assert reward == pytest.approx(before - after[0])


# ------------------------------------------------------------ CompilerGym's loop_tool tests


def compilergym_env():
    env = LoopToolEnv("loop_tool-cpu-v0/1024", "simple", observations=TEXT, reward=None)
    env.reset()
    return env


def test_compilergym_thread_removal():
    env = compilergym_env()
    obs, *_ = env.step(3)  # toggle_thread on L0
    assert obs["loop_tree"].splitlines()[:2] == ["for i in 1024 : L0", " for i' in 1 : L1"]


def test_compilergym_thread_addition_deviation():
    """CompilerGym's test threads L1 inside the threaded L0 (its backend
    runs nested parallel loops); lt-parallel runs one parallel level a nest
    (OpenMP's nested regions would oversubscribe the cores), so the step
    is refused and changes nothing.  With L0's threads off, L1 takes them."""
    env = compilergym_env()
    env.step(0)  # toggle_mode: select
    env.step(1)  # up: the cursor inward, to L1
    obs, _, _, _, info = env.step(3)  # toggle_thread
    assert "already inside a parallel loop" in info["refused"]
    assert obs["loop_tree"].splitlines()[:2] == ["for i in 1024 : L0 [parallel]", " for i' in 1 : L1"]
    env.step(2)  # down: back to L0
    env.step(3)  # its threads off
    env.step(1)
    obs, _, _, _, info = env.step(3)
    assert "refused" not in info and obs["loop_tree"].splitlines()[:2] == ["for i in 1024 : L0", " for i' in 1 : L1 [parallel]"]


def test_compilergym_induced_remainder():
    env = compilergym_env()
    for a in (0, 1, 0, 1, 1):  # select, up (L1), size, grow L1 twice
        obs, *_ = env.step(a)
    assert obs["loop_tree"].splitlines()[:2] == ["for i in 341 r 1 : L0 [parallel]", " for i' in 3 : L1"]
    assert obs["action_state"].tolist() == [1, 3, 0]


def test_compilergym_select_mode_wraps_around():
    """apply_action: cursor = (cursor -/+ 1) % len(order)."""
    env = compilergym_env()
    env.step(0)
    env.step(2)  # down from L0: to the last loop
    assert env.cursor == 2
    env.step(1)  # up from the last: to L0
    assert env.cursor == 0


# ------------------------------------------------------------ CompilerGym's API


def test_uris_with_and_without_the_scheme():
    short = LoopToolEnv("loop_tool-cpu-v0/1024", observations=TEXT, reward=None)
    assert short.benchmark.uri == "benchmark://loop_tool-cpu-v0/1024"
    with pytest.raises(lt_mlir.LtError, match=r"takes a size of 3 whole numbers .*e\.g\. benchmark://matmul-v0/16x16x16"):
        LoopToolEnv("benchmark://matmul-v0/7")
    with pytest.raises(lt_mlir.LtError, match="unknown dataset 'nope-v0' \\(datasets: loop_tool-cpu-v0"):
        LoopToolEnv("nope-v0/3")


def test_observation_and_reward_keywords():
    env = LoopToolEnv("benchmark://matmul-v0/16x16x16", "looptune", observations="loops_tensor", reward=None)
    obs, _ = env.reset()
    assert list(obs) == ["loops_tensor"]
    single = LoopToolEnv("benchmark://matmul-v0/16x16x16", "looptune", observation_space="loops_tensor", reward=None)
    obs, _ = single.reset()
    assert isinstance(obs, np.ndarray) and single.observation_space.contains(obs) and obs[0, 0] == 1.0  # the cursor's row
    with pytest.raises(lt_mlir.LtError, match="unknown observation\\(s\\) flop \\("):
        LoopToolEnv("benchmark://matmul-v0/16x16x16", observations="flop")
    with pytest.raises(lt_mlir.LtError, match="unknown reward 'gflop'"):
        LoopToolEnv("benchmark://matmul-v0/16x16x16", reward_space="gflop")


def test_default_observation_is_tensors_only():
    env = LoopToolEnv("benchmark://matmul-v0/16x16x16", "looptune", reward=None)
    assert all(isinstance(s, gym.spaces.Box) for s in env.observation_space.spaces.values())


def test_rllib_env_config_constructor():
    env = LoopToolEnv({"benchmark": "matmul-v0/16x16x16", "action_space": "looptune", "reward": None})
    assert env.actions == ACTION_SPACES["looptune"]
    with pytest.raises(lt_mlir.LtError, match="unknown option\\(s\\) actionspace"):
        LoopToolEnv({"benchmark": "matmul-v0/16x16x16", "actionspace": "looptune"})


def test_default_observation_space_samples_and_holds_every_observation():
    """Every default observation lies in its space, and the space can be
    sampled (RLlib's FlattenObservations samples it; a Box up to int64's
    maximum cannot be)."""
    env = LoopToolEnv({"benchmark": "clipped-matmul-v0/8x16x64", "action_space": "looptune", "max_loops": 4, "reward": None})
    space = env.observation_space
    assert space.contains(space.sample())
    obs, _ = env.reset(seed=0)
    for name in ("down", "down", "down", "down", "split_8", "down"):
        assert space.contains(obs), obs
        obs = act(env, name)[0]
    assert obs["action_state"][0] == 3  # the cursor past max_loops is reported at the last row


RLLIB_PPO = """
import json, sys
import ray
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.connectors.env_to_module import FlattenObservations
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from lt_mlir.env import LoopToolEnv

ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
options = {"benchmark": "clipped-matmul-v0/8x16x64", "action_space": "looptune", "max_loops": 8, "reward": None}
config = (PPOConfig()
          .environment(LoopToolEnv, env_config=options)
          .env_runners(num_env_runners=0, rollout_fragment_length=250,
                       env_to_module_connector=lambda env, spaces=None, device=None: FlattenObservations())
          .training(train_batch_size_per_learner=250, minibatch_size=50, num_epochs=2)
          .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32, 32]))
          .debugging(seed=0))
algo = config.build_algo()
steps, losses = 0, []
while steps < 1000:
    result = algo.train()
    steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
    losses.append(float(result["learners"]["default_policy"]["total_loss"]))
algo.stop()
ray.shutdown()
print(json.dumps({"steps": steps, "losses": losses}))
"""


def test_rllib_ppo_runs_1000_steps_on_the_env_config_constructor():
    """RLlib's PPO (the new API stack, torch) trains 1,000 steps on
    ``LoopToolEnv(env_config)`` with its default tensor observation,
    flattened by RLlib's own connector; in a child process, so that its
    Ray instance ends with it."""
    pytest.importorskip("ray.rllib", reason="the rl extra (pip install -e '.[rl]') is not installed")
    pytest.importorskip("torch", reason="the rl extra (pip install -e '.[rl]') is not installed")
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_USAGE_STATS_ENABLED="0", PYTHONWARNINGS="ignore")
    run = subprocess.run([sys.executable, "-c", RLLIB_PPO], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["steps"] >= 1000
    assert result["losses"] and all(np.isfinite(result["losses"]))


def test_fork_and_deepcopy_go_on_independently():
    env = LoopToolEnv("benchmark://matmul-v0/64x64x64", "looptune", observations=TEXT, reward=None)
    env.reset()
    env.multistep(["down", "split_8"])
    other = env.fork()
    assert (other.schedule.text, other.cursor, other.history) == (env.schedule.text, env.cursor, env.history)
    act(other, "down")
    act(other, "split_4")
    assert other.schedule.text != env.schedule.text and env.cursor == 1
    third = copy.deepcopy(env)
    assert third.schedule.text == env.schedule.text and third is not env


def test_validate():
    env = LoopToolEnv("benchmark://clipped-matmul-v0/8x16x64", "extended", observations=TEXT, reward=None)
    env.reset(seed=4)
    env.multistep(["down", "split_4", "vectorize", "swap_down"])
    result = env.validate()
    assert result.okay() and not result.actions_replay_failed, result
    env.schedule = lt_mlir.Schedule(DATASETS["clipped-matmul-v0"].benchmark((8, 16, 64)).text)
    env.schedule.split(0, 2)  # a state no action of the history made
    result = env.validate()
    assert result.actions_replay_failed and not result.okay()


def test_reset_seed_seeds_the_inputs():
    env = LoopToolEnv("benchmark://matmul-v0/16x16x16", "looptune", observations=TEXT, reward="flops", repeat=3)
    env.reset(seed=11)
    assert env.input_seed == 11 and env._evaluator.config.seed == 11
    env.reset(seed=12)
    assert env._evaluator.config.seed == 12


@pytest.mark.parametrize("wrapper", [IterateOverBenchmarks, CycleOverBenchmarks, RandomOrderBenchmarks])
def test_dataset_wrappers(wrapper):
    uris = ["matmul-v0/16x16x16", "benchmark://softmax-v0/8x64", "clipped-matmul-v0/8x16x64"]
    base = LoopToolEnv(uris[0], "looptune", observations=TEXT, reward=None)
    env = wrapper(base, uris, 3) if wrapper is RandomOrderBenchmarks else wrapper(base, uris)
    seen = []
    for i in range(3):
        env.reset(seed=None if wrapper is not RandomOrderBenchmarks else None)
        seen.append(base.benchmark.uri)
    if wrapper is RandomOrderBenchmarks:
        assert set(seen) <= {"benchmark://" + u.removeprefix("benchmark://") for u in uris}
    else:
        assert seen == ["benchmark://" + u.removeprefix("benchmark://") for u in uris]
    if wrapper is IterateOverBenchmarks:
        with pytest.raises(lt_mlir.LtError, match="every benchmark has been used"):
            env.reset()
    else:
        env.reset()
    with pytest.raises(lt_mlir.LtError, match="chooses the benchmark"):
        env.reset(options={"benchmark": uris[0]})


def test_random_order_is_seeded():
    uris = [b.uri for b in DATASETS["matmul-v0"]]

    def draws(seed):
        base = LoopToolEnv(uris[0], "looptune", observations=TEXT, reward=None)
        env = RandomOrderBenchmarks(base, uris, seed)
        out = []
        for _ in range(6):
            env.reset()
            out.append(base.benchmark.uri)
        return out

    assert draws(1) == draws(1) and len(set(draws(1) + draws(2))) > 1


# ------------------------------------------------------------ bad input, masks, checkers


def test_invalid_action_is_a_value_error_and_refusals_carry_no_source_path():
    env = LoopToolEnv("benchmark://matmul-v0/16x16x16", "extended", observations=TEXT, reward=None)
    env.reset()
    with pytest.raises(ValueError, match="not in the action space"):
        env.step(len(env.actions))
    _, _, _, _, info = act(env, "split_1024")
    assert info["refused"].startswith("error: lt-split"), info["refused"]
    assert plain('/home/me/x.py:12:5: error: lt-swap: no') == "error: lt-swap: no"


def test_action_masks_for_maskable_ppo():
    env = LoopToolEnv("benchmark://clipped-matmul-v0/8x16x64", "looptune", reward=None)
    env.reset()
    masks = env.action_masks()
    assert masks.dtype == bool and masks.tolist() == (env.action_mask() == 1).tolist()
    assert not masks[env.actions.index("up")] and masks[env.actions.index("down")]


@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
def test_check_env_every_action_space(space):
    check_env(LoopToolEnv("benchmark://clipped-matmul-v0/8x16x64", space, reward=None), skip_render_check=True)


@pytest.mark.parametrize("name", ["loops_tensor", "action_state", "stride_tensor", "5_prev_actions_tensor", "loop_tree", "ir"])
def test_check_env_every_single_observation(name):
    check_env(LoopToolEnv("benchmark://clipped-matmul-v0/8x16x64", "looptune", observation_space=name, reward=None),
              skip_render_check=True)
