"""Train a policy for lt_mlir.env with sb3-contrib's MaskablePPO, save it for
NumPy, and check it on programs it never saw.

The task: the ``recipes`` action space (LoopTune's cursor, every search
move, and the documented hand schedules of ``lt_mlir.recipes`` as
whole-program actions; ``--space extended`` leaves those out) and one
more action, ``lt_mlir.agent.STOP``, always allowed, that ends the
episode where it is taken (``--no-stop``: episodes of 10 steps always);
episodes of at most 10 steps, rewarded once, at the end, from the final
schedule's speedup s over the start (measured once an episode instead of
every step: a compile an episode, not ten): s - 1/s (``symmetric``, the
default: a slowdown by a factor costs what a speedup by that factor
gains, while a matmul's 30x keeps its weight), s - 1 (``linear``: the
return of the env's ``speedup`` reward; a 5x slowdown of a 1 us
convolution then costs 0.8), log s (``log``) or s over the program's
best recipe, minus one (``normalized``) -- README compares them; the
observation ``loops_tensor`` of 12 loops, log-scaled
(``lt_mlir.agent.policy_features``).  Each episode starts one of the
``TRAINING`` programs (matmuls, clipped matmuls, convolutions, softmax,
row sums) drawn at random; the ``HELD_OUT`` ones (the same families at
other sizes) are only evaluated.  Only the masked actions are sampled
(``env.action_masks()``).

``--imitate`` starts PPO from a teacher's choices (behaviour cloning):
on each training program the recipe action timed fastest against the
start (interleaved, three rounds), then the best recipe after it where
one pays 3% more, then ``STOP`` (and, at each state, the recipes that
paid less, each where the mask leaves out the better ones: what a
program that refuses the best one should take); the actor is fitted to
those steps (``imitate``) before PPO goes on from there, so that every seed begins
where a person who tries the recipes begins (about a minute of the
``--minutes``).  ``--anchor N`` keeps it there: before each PPO update
(every 100 steps) N more epochs of the same cloning, so that PPO's
updates elsewhere do not wash the teacher's choices out (behaviour
cloning as a regulariser of the policy gradient, as DAPG and
BC-regularised PPO do).

Training stops after ``--minutes`` of wall time.  The network (two tanh
layers of 64) is written as NumPy arrays (``lt_mlir.agent.Policy.save``):
``lt-tune --strategy policy``, the UI's suggest key and
``benchmarks/bench_env.py`` run it without torch.

    .venv/bin/pip install -e '.[rl]'      # stable-baselines3, sb3-contrib, torch (CPU)
    .venv/bin/python examples/train_env.py [--minutes 15] [--seed 0] [--out lt_mlir/data/policy.npz]
                                           [--png docs/env-learning.png] [--space recipes] [--reward symmetric|linear|log|normalized] [--no-stop]
                                           [--imitate [--anchor 5]]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gymnasium as gym  # noqa: E402

from lt_mlir.agent import POLICY_LOOPS, RECIPE_ACTIONS, STOP, Policy, action_names, effects, policy_features, policy_transform  # noqa: E402
from lt_mlir.env import HELD_OUT, TRAINING, LoopToolEnv, RandomOrderBenchmarks  # noqa: E402
from lt_mlir.env.datasets import benchmark  # noqa: E402
from lt_mlir.errors import LtError, is_interrupt  # noqa: E402
from lt_mlir.evaluate import Evaluator  # noqa: E402
from lt_mlir.schedule import Schedule  # noqa: E402

STEPS = 10
SPACE = "recipes"
# --remeasure k: each schedule (a program's start, an episode's final one) is measured on its first k visits
# and its figure is their median, not its first figure kept for the run.  1 by default: at 5, three seeds of
# 13 minutes ran 3,090-4,219 episodes instead of 9,770-14,027 and their policies did worse (README)
REMEASURE = 1


class LogLoops(gym.ObservationWrapper):
    """``loops_tensor`` as the policy sees it (``policy_transform``)."""

    def __init__(self, env):
        super().__init__(env)
        n = int(np.prod(env.observation_space.shape))
        self.observation_space = gym.spaces.Box(0.0, np.inf, shape=(n,), dtype=np.float32)

    def observation(self, observation):
        return policy_transform(observation)


LOG_FLOOR = 1e-3  # the speedup a schedule that cannot be measured within the env's limits counts as, for the log reward
SYMMETRIC_FLOOR = 0.1  # the same for the symmetric reward (it then scores 0.1 - 10)


class FinalSpeedup(gym.Wrapper):
    """Episodes of ``steps`` steps (fewer with ``stop``: the last action
    ends it), which terminate: reward 0 until the last, then the final
    schedule's measured speedup over the start: the speedup minus one
    (``linear``; -1 when it cannot be measured within the env's limits),
    its logarithm (``log``; that of ``LOG_FLOOR`` then), the speedup minus
    its inverse (``symmetric``: s - 1/s is odd in log s, so a 5x slowdown
    of a 1 us convolution costs what a 5x speedup gains, while a matmul's
    30x still weighs its tens; ``SYMMETRIC_FLOOR`` for a schedule that
    cannot be measured), or the speedup as
    a fraction of the program's reference minus one (``normalized``: the
    reference is the best of the start and of each recipe action the mask
    allows on it, measured once a program; a slowdown of a 1 us kernel
    then weighs what a matmul's missed speedup of the same fraction does,
    where ``linear`` weighs the matmul's tens of times more)."""

    def __init__(self, env, base: LoopToolEnv, steps: int, reward: str = "symmetric", stop: bool = True):
        super().__init__(env)
        self.base, self.steps, self.reward, self.stop = base, steps, reward, stop
        self.reference: dict = {}  # program URI -> its reference speedup over the start (normalized)
        if stop:  # one more action, the last: end the episode here
            self.action_space = gym.spaces.Discrete(env.action_space.n + 1)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.t, self.start = 0, float(self.base.observe("flops")[0])
        uri = self.base.benchmark.uri
        if self.reward == "normalized" and uri not in self.reference:
            self.reference[uri] = self._reference()
            obs, info = self.base.reset()  # the same program and inputs, from the start again
        return obs, info

    def _reference(self) -> float:
        best, allowed = self.start, self.base.action_masks()
        for k, name in enumerate(self.base.actions):
            if name in RECIPE_ACTIONS and allowed[k]:
                self.base.reset()
                self.base.step(k)
                try:
                    best = max(best, float(self.base.observe("flops")[0]))
                except LtError:
                    pass
        return best / self.start

    def action_masks(self) -> np.ndarray:
        allowed = self.base.action_masks()
        return np.append(allowed, True) if self.stop else allowed

    def step(self, action):
        stopped = self.stop and int(action) == self.env.action_space.n  # STOP: the schedule as it is now is final
        if stopped:
            obs, reward, terminated, truncated, info = self.base.observe("loops_tensor"), 0.0, False, False, {}
        else:
            obs, reward, terminated, truncated, info = self.env.step(action)
        self.t += 1
        if stopped or self.t >= self.steps:
            try:
                speedup = float(self.base.observe("flops")[0]) / self.start
            except LtError:
                speedup = 0.0
            if self.reward == "log":
                reward = float(np.log(max(speedup, LOG_FLOOR)))
            elif self.reward == "normalized":
                reward = speedup / self.reference[self.base.benchmark.uri] - 1.0
            elif self.reward == "symmetric":
                s = max(speedup, SYMMETRIC_FLOOR)
                reward = s - 1.0 / s
            else:
                reward = speedup - 1.0
            # terminated, not truncated: the reward is final, and Stable-Baselines3 would add
            # the value of the last observation to a truncated episode's (its time is not in it)
            info["speedup"], terminated, truncated = speedup, True, False
        return obs, reward, terminated, truncated, info


def make_env(seed: int, benchmarks=TRAINING, space: str = SPACE, reward: str = "symmetric", stop: bool = True, remeasure: int = REMEASURE):
    from sb3_contrib.common.wrappers import ActionMasker

    base = LoopToolEnv(benchmarks[0], space, observation_space="loops_tensor", max_loops=POLICY_LOOPS, reward=None,
                       repeat=5, action_mask=False, keep_programs=len(benchmarks), remeasure=remeasure)
    final = FinalSpeedup(RandomOrderBenchmarks(base, benchmarks, seed), base, STEPS, reward, stop)
    return ActionMasker(LogLoops(final), lambda _: final.action_masks()), base


def demonstrations(benchmarks, space: str = SPACE, rounds: int = 3, gain: float = 1.03) -> tuple:
    """A teacher's episodes for imitation before PPO (``--imitate``): on
    each program, the start and every recipe action the mask allows, timed
    interleaved over ``rounds`` (``Evaluator.remeasure``); then, from the
    best of them, every recipe again on top of it; a step is kept where it
    is ``gain`` faster than what it starts from.  The other recipes that
    pay there are taught too, in the order of their times, each as the
    choice where the mask leaves out the ones ahead of it (and ``STOP``
    where it leaves out all of them): a held-out program that refuses the
    recipe a training program taught still gets the next best one, not
    whatever an untaught distribution gives (the 80x96x64 matmul refuses
    ``vector_rows_parallel``, which the 64x64x64 one takes).  Returns
    (observations, actions, masks, lines, own): the policy's features and
    a mask at each state of the teacher's episode, its action there
    (``STOP`` last), one line a program saying what the teacher does, and
    which rows are the episode's own steps (the others: those fallbacks)."""
    names = action_names(space)
    stop = len(names)
    xs, acts, masks, lines, own = [], [], [], [], []
    for uri in benchmarks:
        s, cursor, trace = Schedule(benchmark(uri).text), 0, []
        for step in range(3):  # at most two recipes, then stop
            children = effects(s, cursor, True, names, space, "cpu")  # what the mask is made of: each action tried on a copy
            allowed = np.zeros(stop + 1, bool)
            allowed[[k for k, *_ in children] + [stop]] = True
            x = policy_features(s, cursor)
            xs.append(x)
            masks.append(allowed)
            own.append(True)
            tried = [(k, t, c) for k, t, c, _ in children if names[k] in RECIPE_ACTIONS and t.key != s.key] if step < 2 else []
            best = (float("inf"), -1)
            if tried:
                with Evaluator(s, target="cpu", samples=5, min_sample_s=5e-4, budget_s=0.2) as ev:
                    ms = ev.remeasure([s.text] + [t.text for _, t, _ in tried], rounds=rounds)
                here = ms[0].runtime_s if ms[0].ok else float("inf")
                best = min(((m.runtime_s, i) for i, m in enumerate(ms[1:]) if m.ok), default=best)
            if best[1] < 0 or best[0] * gain >= here:
                acts.append(stop)
                break
            k, t, c = tried[best[1]]
            acts.append(k)
            paying = sorted((m.runtime_s, i) for i, m in enumerate(ms[1:]) if m.ok and m.runtime_s * gain < here)
            for rank in range(1, len(paying) + 1):  # the fallbacks: the next recipe where those ahead are not allowed
                fewer = allowed.copy()
                fewer[[tried[i][0] for _, i in paying[:rank]]] = False
                xs.append(x)
                masks.append(fewer)
                acts.append(tried[paying[rank][1]][0] if rank < len(paying) else stop)
                own.append(False)
            trace.append(f"{names[k]} {here / best[0]:.2f}x")
            s, cursor = t, c
        lines.append(f"  teacher {uri:<36} {', '.join(trace) or 'the start'}, stop")
    return np.asarray(xs, np.float32), np.asarray(acts), np.asarray(masks), lines, np.asarray(own)


def imitate(model, xs: np.ndarray, acts: np.ndarray, masks: np.ndarray, epochs: int = 300, weights: np.ndarray | None = None) -> float:
    """Behaviour cloning of the teacher's choices into ``model``'s actor
    (its own optimiser, full batches of the demonstrations): the masked
    policy's log-likelihood of the teacher's actions, each row weighted by
    ``weights`` (default 1; ``--fallback-weight`` below 1 weights the
    fallbacks less: where a fallback and a step of the teacher's own meet at
    states the features barely tell apart -- the 64x64x64 matmul after
    ``vector_rows_parallel`` and after ``vector_loops`` on top of it differ
    in one feature -- the teacher's step wins).  Returns the share of the
    rows the greedy actor then takes."""
    import torch

    obs = torch.as_tensor(xs)
    target = torch.as_tensor(acts)
    weight = torch.ones(len(acts)) if weights is None else torch.as_tensor(weights, dtype=torch.float32)
    for _ in range(epochs):
        dist = model.policy.get_distribution(obs, action_masks=masks)
        loss = -(weight * dist.log_prob(target)).sum() / weight.sum()
        model.policy.optimizer.zero_grad()
        loss.backward()
        model.policy.optimizer.step()
    with torch.no_grad():
        chosen = model.policy.get_distribution(obs, action_masks=masks).distribution.probs.argmax(-1)
    return float((chosen == target).float().mean())


def evaluate(policy: Policy, benchmarks) -> list:
    """(uri, speedup over the start after the policy's steps, its actions) per benchmark."""
    out = []
    for uri in benchmarks:
        start = Schedule(benchmark(uri).text)
        best, trace = policy.run(start, STEPS)
        with Evaluator(start, target="cpu", samples=10, min_sample_s=5e-4, budget_s=0.3) as ev:
            a, b = ev.remeasure([start.text, best.text], rounds=5)
        out.append((uri, a.runtime_s / b.runtime_s if a.ok and b.ok else float("nan"), trace))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join("lt_mlir", "data", "policy.npz"))
    p.add_argument("--png", default="")
    p.add_argument("--envs", type=int, default=2, help="environments stepped side by side (processes)")
    p.add_argument("--reward", default="symmetric", choices=("linear", "log", "normalized", "symmetric"),
                   help="the final speedup minus one, its logarithm, its fraction of the program's best recipe minus one, "
                        "or the speedup minus its inverse")
    p.add_argument("--ent-coef", type=float, default=0.01, help="PPO's entropy bonus (exploration)")
    p.add_argument("--space", default=SPACE, choices=("recipes", "extended", "looptune"), help="the action space")
    p.add_argument("--stop", action=argparse.BooleanOptionalAction, default=True,
                   help="an action that ends the episode, the policy keeping the schedule it has (default; --no-stop: 10 steps always)")
    p.add_argument("--imitate", action=argparse.BooleanOptionalAction, default=False,
                   help="before PPO, clone a teacher: on each training program the best recipe (and the best one after it), timed "
                        "interleaved, then stop (the time it takes counts in --minutes)")
    p.add_argument("--anchor", type=int, default=0,
                   help="with --imitate: epochs of the same cloning before each PPO update (0: the cloning only before PPO)")
    p.add_argument("--fallback-weight", type=float, default=1.0,
                   help="with --imitate: a fallback's weight in the cloning against 1 for a step of the teacher's own (the shipped policy: 1)")
    p.add_argument("--remeasure", type=int, default=REMEASURE,
                   help="a schedule's figure is the median of its first N visits' measurements (1: its first figure, kept)")
    args = p.parse_args()
    if args.remeasure < 1:
        p.error(f"--remeasure must be at least 1, got {args.remeasure}")
    if args.anchor < 0 or (args.anchor and not args.imitate):
        p.error(f"--anchor needs --imitate and a count of at least 0, got {args.anchor}" + ("" if args.imitate else " without --imitate"))
    if not 0.0 <= args.fallback_weight <= 1.0 or args.fallback_weight != args.fallback_weight:
        p.error(f"--fallback-weight is a weight in [0, 1], got {args.fallback_weight}")
    if args.imitate and (not args.stop or args.space != "recipes"):
        p.error("--imitate needs the recipes space and the stop action (the teacher takes a recipe, then stops)")
    try:
        import torch
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.logger import Logger
    except ImportError as e:
        sys.exit(f"error: training needs the rl extra (pip install -e '.[rl]'): {e}")
    torch.set_num_threads(1)
    if args.envs > 1:  # each in a process of its own (and its measuring child): the compiles run side by side
        from stable_baselines3.common.vec_env import SubprocVecEnv

        env = SubprocVecEnv([(lambda i=i: make_env(args.seed + 1000 * i, space=args.space, reward=args.reward, stop=args.stop,
                                                 remeasure=args.remeasure)[0]) for i in range(args.envs)])
    else:
        env = make_env(args.seed, space=args.space, reward=args.reward, stop=args.stop, remeasure=args.remeasure)[0]
    finals: list = []
    taught: list = []  # the teacher's (observations, actions, masks, weights), with --imitate

    class Clock(BaseCallback):
        def _on_rollout_end(self) -> None:  # before PPO's update of this rollout
            if args.anchor and taught:
                xs, acts, masks, weights = taught
                imitate(model, xs, acts, masks, epochs=args.anchor, weights=weights)

        def _on_step(self) -> bool:
            for info, done in zip(self.locals["infos"], self.locals["dones"]):
                if done and "speedup" in info:
                    finals.append(info["speedup"])
            if ctrl_c:  # a Ctrl-C whose KeyboardInterrupt something swallowed (a callback from C++): stop here all the same
                return False
            return time.perf_counter() - t0 < args.minutes * 60  # the imitation's time (--imitate) counts

    model = MaskablePPO("MlpPolicy", env, seed=args.seed, n_steps=100, batch_size=50, n_epochs=8, gamma=1.0,
                        learning_rate=1e-3, ent_coef=args.ent_coef, policy_kwargs=dict(net_arch=[64, 64]), verbose=0)
    model.set_logger(Logger(None, []))  # SB3's own (verbose=0) makes an empty folder in /tmp each run
    t0 = time.perf_counter()
    ctrl_c: list = []  # set by a Ctrl-C, which also raises KeyboardInterrupt as Python's own handler does

    def on_ctrl_c(signum, frame):
        ctrl_c.append(signum)
        signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, on_ctrl_c)
    try:  # Ctrl-C in the imitation or in PPO: the policy trained so far is saved, then exit 130
        print(f"training seed {args.seed} on {len(TRAINING)} programs for {args.minutes:g} min (Ctrl-C: stop and save the policy)", flush=True)
        if args.imitate:
            xs, acts, masks, lines, own = demonstrations(TRAINING, args.space)
            print("\n".join(lines))
            weights = np.where(own, 1.0, args.fallback_weight)
            share = imitate(model, xs, acts, masks, weights=weights)
            taught.extend((xs, acts, masks, weights))
            print(f"imitation: {own.sum()} teacher steps and {(~own).sum()} fallbacks on {len(TRAINING)} programs "
                  f"in {time.perf_counter() - t0:.0f} s; "
                  f"the greedy actor takes {share:.0%} of them", flush=True)
        if not ctrl_c:
            model.learn(total_timesteps=10**7, callback=Clock())
    except (KeyboardInterrupt, RuntimeError) as e:  # Ctrl-C (in an IR walk, MLIR's RuntimeError): the policy so far is saved all the same
        if not is_interrupt(e):
            raise
        ctrl_c.append(signal.SIGINT)
    interrupted = bool(ctrl_c)  # by the KeyboardInterrupt, or by the flag where something swallowed it
    if interrupted:
        print("interrupted: saving the policy trained so far", flush=True)
    minutes = (time.perf_counter() - t0) / 60
    steps = model.num_timesteps
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    actions = LoopToolEnv(TRAINING[0], args.space, reward=None).actions + ([STOP] if args.stop else [])
    policy = Policy.export(model, args.out, actions, args.space, POLICY_LOOPS, seed=args.seed, reward=args.reward, ent_coef=args.ent_coef,
                           remeasure=args.remeasure, imitate=args.imitate, anchor=args.anchor,
                           steps=steps, minutes=f"{minutes:.1f}", episodes=len(finals))
    print(f"trained {steps} steps ({len(finals)} episodes) in {minutes:.1f} min, seed {args.seed}: {args.out}")
    if finals:
        k = max(1, len(finals) // 5)
        print(f"  final speedup of an episode: first {k} episodes {np.mean(finals[:k]):.2f}x, last {k} {np.mean(finals[-k:]):.2f}x")
    if args.envs == 1 and args.reward == "normalized":
        for uri, ref in sorted(env.env.env.reference.items()):  # ActionMasker(LogLoops(FinalSpeedup))
            print(f"  reference {uri:<36} {ref:6.2f}x the start (the best recipe)")
    if not interrupted:  # the held-out check measures for a minute: not after a Ctrl-C
        for uri, speedup, trace in evaluate(policy, HELD_OUT):
            print(f"  held out {uri:<36} {speedup:6.2f}x the start after {', '.join(trace)}")
    if args.png and finals:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        x = np.asarray(finals)
        k = 20
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(x, ".", alpha=0.3, label="episode")
        if len(x) >= k:  # the geometric mean: speedups multiply (and the axis is logarithmic)
            mean = np.exp(np.convolve(np.log(np.maximum(x, 1e-3)), np.ones(k) / k, mode="valid"))
            ax.plot(np.arange(k - 1, len(x)), mean, label=f"{k}-episode geometric mean")
        ax.set_yscale("log")
        ax.set_xlabel("episode (a training program drawn at random)")
        ax.set_ylabel("speedup over the start at the end\n" + ("(stop, or 10 steps)" if args.stop else "(10 steps)"))  # two lines: one is cut
        ax.set_title(f"MaskablePPO on lt_mlir.env, {args.space} actions, seed {args.seed}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print(f"learning curve: {args.png}")
    try:
        env.close()
    except (EOFError, BrokenPipeError, ConnectionResetError):  # workers a Ctrl-C ended already
        pass
    if interrupted:
        sys.exit(130)  # as lt-tune and the shell: interrupted, though the policy is saved


if __name__ == "__main__":
    main()
