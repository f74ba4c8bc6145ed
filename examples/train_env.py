"""Train a tabular Q-learning agent in lt_mlir.env, and plot what it learned.

The task: the clipped matmul 33x48x256 (``benchmark://clipped-matmul-v0/
33x48x256``) in the ``extended`` action space (LoopTune's moves: cursor
up/down, swaps, splits by powers of two, merge, unroll, vectorize,
parallel), episodes of 8 steps, reward = the change in measured GFLOP/s (so
an episode's return is its final GFLOP/s minus the start's).  The agent
keeps a table Q[state, action] (a state is the schedule text and the
cursor), explores epsilon-greedily among the actions the mask allows, and
learns by one-step Q-learning.  A random agent (same mask) runs beside it
on the same number of episodes.  Kernels are compiled once per schedule
(the env caches them), so most of the time goes to new schedules.

    .venv/bin/python examples/train_env.py [--episodes 120] [--png docs/env-learning.png]
"""

from __future__ import annotations

import argparse
import collections
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lt_mlir.env import LoopToolEnv  # noqa: E402

URI = "benchmark://clipped-matmul-v0/33x48x256"
STEPS = 8


def run(agent: str, episodes: int, seed: int, alpha=0.5, gamma=0.9):
    env = LoopToolEnv(URI, "extended", observations=("action_state",), reward="flops", repeat=15)
    rng = np.random.default_rng(seed)
    q = collections.defaultdict(lambda: np.zeros(env.action_space.n))
    returns, finals, best_seen = [], [], []
    best = None
    for episode in range(episodes):
        _, info = env.reset(seed=seed + episode)
        start = info["gflops"]
        state = (env.schedule.text, env.cursor)
        total = 0.0
        epsilon = max(0.05, 1.0 - episode / (0.6 * episodes)) if agent == "q" else 1.0
        for _ in range(STEPS):
            allowed = np.flatnonzero(info["action_mask"])
            if rng.random() < epsilon:
                a = int(rng.choice(allowed))
            else:
                values = q[state][allowed]
                a = int(allowed[rng.choice(np.flatnonzero(values == values.max()))])
            _, reward, _, _, info = env.step(a)
            nxt = (env.schedule.text, env.cursor)
            target = reward + gamma * q[nxt][np.flatnonzero(info["action_mask"])].max(initial=0.0)
            q[state][a] += alpha * (target - q[state][a])
            state, total = nxt, total + reward
        returns.append(total)
        finals.append(info["gflops"])
        if best is None or info["gflops"] > best[0]:
            best = (info["gflops"], env.schedule.pipeline, env.observe("loop_tree"))
        best_seen.append(best[0])
    return env, q, start, returns, finals, best_seen, best


def greedy(env, q, seed):
    _, info = env.reset(seed=seed)
    state = (env.schedule.text, env.cursor)
    for _ in range(STEPS):
        allowed = np.flatnonzero(info["action_mask"])
        a = int(allowed[np.argmax(q[state][allowed])])
        _, _, _, _, info = env.step(a)
        state = (env.schedule.text, env.cursor)
    return info["gflops"], env.schedule.pipeline, env.observe("loop_tree")


def smooth(x, k=10):
    x = np.asarray(x, float)
    return np.convolve(x, np.ones(k) / k, mode="valid") if len(x) >= k else x


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=120)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--png", default="docs/env-learning.png")
    args = p.parse_args()
    t0 = time.perf_counter()
    env, q, start, q_returns, q_finals, q_best, q_top = run("q", args.episodes, args.seed)
    _, _, _, r_returns, r_finals, r_best, r_top = run("random", args.episodes, args.seed + 10_000)
    g_flops, g_pipeline, g_tree = greedy(env, q, args.seed)
    print(f"{URI}: start {start:.2f} GFLOP/s; {args.episodes} episodes of {STEPS} steps each agent, {time.perf_counter() - t0:.0f} s")
    last = max(1, args.episodes // 4)
    print(f"  Q-learning: mean final GFLOP/s over the last {last} episodes {np.mean(q_finals[-last:]):.2f}, best seen {q_top[0]:.2f}")
    print(f"  random:     mean final GFLOP/s over the last {last} episodes {np.mean(r_finals[-last:]):.2f}, best seen {r_top[0]:.2f}")
    print(f"  greedy policy after training: {g_flops:.2f} GFLOP/s ({g_flops / start:.2f}x the start) with {g_pipeline}")
    print(g_tree)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(smooth(q_finals), label="Q-learning (10-episode mean)")
    ax[0].plot(smooth(r_finals), label="random (10-episode mean)")
    ax[0].axhline(start, color="gray", linestyle=":", label="start schedule")
    ax[0].set_xlabel("episode")
    ax[0].set_ylabel("GFLOP/s at the episode's end")
    ax[0].legend()
    ax[1].plot(q_best, label="Q-learning")
    ax[1].plot(r_best, label="random")
    ax[1].set_xlabel("episode")
    ax[1].set_ylabel("best GFLOP/s seen so far")
    ax[1].legend()
    fig.suptitle(f"lt_mlir.env: {URI}, extended actions, {STEPS} steps an episode")
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"learning curve: {args.png}")


if __name__ == "__main__":
    main()
