"""lt_mlir.env: its speed, and what a trained policy finds on programs it
never saw against the default, random search and lt-tune.

Speed (``--speed``, the default part): steps per second (the time of
choosing and stepping; resets left out) on the clipped
matmul 33x48x256, extended actions, episodes of 20 steps (a policy's
``STOP`` ends one sooner) -- random actions
with observations that compile nothing, with the exact action mask, and a
masked random policy with the measured ``flops`` reward (a compile per new
schedule, cached) -- and the longest step against the env's step limit.

Policies (``--policies A.npz B.npz ...``, e.g. one per training seed of
``examples/train_env.py``): on each ``HELD_OUT`` program, in one process,

* the default schedule (the start);
* each policy's schedule after ``--steps`` (10) of its actions, read off
  the program (no measurement: the time is the policy's and the mask's),
  and the policy's search with as many measurements as random search
  makes (``lt-tune --strategy policy``: its programs in ``Policy.search``'s
  order -- its greedy run's, then its other runs' by their probability --
  each measured, the best kept);
* random search with as many steps: ``--steps`` masked random actions from
  the start, each state measured, the best kept; run with ``--random-seeds``
  (5) seeds, and a policy compared with their median (one seed's search is
  one draw of a lottery: on a row-wise program one draw finds the recipe and
  the next does not);
* ``lt-tune``: evolution with the cost model, ``--budget`` (300)
  measurements, its winner re-measured as lt-tune does.

Every schedule is then timed again with the start, interleaved over 5
rounds (``Evaluator.remeasure``); the table gives speedups over the start,
each policy's over lt-tune's, and the wall times.  LoopTune's comparison:
a policy that reaches the search's quality in a fraction of its time.

    python benchmarks/bench_env.py [--speed] [--policies P.npz ...] [--budget 300] [--steps 10] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from lt_mlir.agent import POLICY_PATH, Policy  # noqa: E402
from lt_mlir.env import HELD_OUT, LoopToolEnv  # noqa: E402
from lt_mlir.env.datasets import benchmark  # noqa: E402
from lt_mlir.evaluate import Evaluator  # noqa: E402
from lt_mlir.schedule import Schedule  # noqa: E402
from lt_mlir.search.cli import tune  # noqa: E402

URI = "benchmark://clipped-matmul-v0/33x48x256"


def rate(steps: int, masked: bool = False, policy: Policy | None = None, **options) -> tuple[float, int, float]:
    """(steps/s, refused, longest step s) of random (masked) actions in the
    extended space, or of ``policy``'s in its own."""
    env = LoopToolEnv(URI, policy.space if policy is not None else "extended", **options)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    refused, longest, episode, spent = 0, 0.0, 0, 0.0
    i = 0
    while i < steps:
        if episode == 20:
            env.reset()
            episode = 0
        t0 = time.perf_counter()  # a step's time: choosing (the mask, the policy) and the env's step, not the resets
        if policy is not None:
            allowed = env.action_masks()
            if policy.stops and episode == 0:  # a policy's STOP ends an episode: not at its start (nothing would be timed)
                allowed = np.append(allowed, 0)
            a = policy.choose(env.schedule, env.cursor, allowed)
            if a == len(env.actions):  # STOP: the episode ends (not an env step)
                episode = 20
                spent += time.perf_counter() - t0
                continue
        elif masked:
            a = int(rng.choice(np.flatnonzero(env.action_masks())))
        else:
            a = int(rng.integers(env.action_space.n))
        t = time.perf_counter()
        *_, info = env.step(a)
        longest = max(longest, time.perf_counter() - t)
        refused += "refused" in info
        i, episode = i + 1, episode + 1
        spent += time.perf_counter() - t0
    r = steps / spent
    env.close()
    return r, refused, longest


def speed() -> None:
    rows = [
        ("loop_tree + action_state", dict(observations=("loop_tree", "action_state"), reward=None, action_mask=False), 2000, False),
        ("+ loops_tensor + stride_tensor", dict(observations=("loop_tree", "action_state", "loops_tensor", "stride_tensor"),
                                                reward=None, action_mask=False), 2000, False),
        ("loop_tree + action_state, action mask", dict(observations=("loop_tree", "action_state"), reward=None, action_mask=True), 300, False),
        ("masked random policy, flops reward", dict(observations=("loops_tensor",), reward="flops", action_mask=False, repeat=10), 300, True),
    ]
    if os.path.exists(POLICY_PATH):
        rows.append(("trained policy (argmax), flops reward", dict(observations=("loops_tensor",), reward="flops", action_mask=False,
                                                                  repeat=10), 300, Policy()))
    print(f"{URI}, extended action space (the trained policy's: its own), episodes of 20 steps (step limit 2 s)")
    for what, options, steps, masked in rows:
        policy = masked if isinstance(masked, Policy) else None
        r, refused, longest = rate(steps, masked is True, policy, **options)
        print(f"  {what:<42} {r:8.0f} steps/s  ({steps} steps, {refused} refused, longest step {longest * 1e3:.0f} ms)")


def random_search(start: Schedule, steps: int, seed: int, space: str = "extended") -> tuple[Schedule, float]:
    """(the best of ``steps`` masked random actions' states in ``space``, seconds)."""
    t0 = time.perf_counter()
    env = LoopToolEnv(start, space, observations=(), reward="flops", action_mask=False, repeat=10)
    env.reset(seed=0)
    rng = np.random.default_rng(seed)
    best, best_gflops = env.schedule.copy(), env.observe("flops")[0]
    for _ in range(steps):
        allowed = np.flatnonzero(env.action_masks())
        if not len(allowed):
            break
        *_, info = env.step(int(rng.choice(allowed)))
        if info["gflops"] > best_gflops:
            best, best_gflops = env.schedule.copy(), info["gflops"]
    env.close()
    return best, time.perf_counter() - t0


def compare(policies: list, budget: int, steps: int, only: str | None, random_seeds: int = 5) -> None:
    loaded = [Policy(p) for p in policies]
    space = loaded[0].space  # random search acts in the policies' space
    if any(p.space != space for p in loaded):
        sys.exit("error: the policies compared act in different action spaces: compare them in separate runs")
    print(f"held-out programs; {len(loaded)} policies ({', '.join(os.path.basename(p) for p in policies)}), {steps} steps, "
          f"'{space}' actions; random search {steps} steps in the same space, {random_seeds} seeds (their median; range in brackets); "
          f"lt-tune evolution {budget} measurements")
    header = ["program", "start ms", *[f"policy {i}" for i in range(len(loaded))], *[f"policy {i} search" for i in range(len(loaded))],
              "random", "lt-tune",
              *[f"p{i}/tune" for i in range(len(loaded))], "policy s", "tune s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    ratios = [[] for _ in loaded]
    beats = [[] for _ in loaded]
    measured_ratios = [[] for _ in loaded]  # the policy's search: its programs measured, the best kept (as random search keeps its best)
    measured_beats = [[] for _ in loaded]
    times = {"policy": [], "tune": []}
    for uri in HELD_OUT:
        if only and only not in uri:
            continue
        start = Schedule(benchmark(uri).text)
        found, spent, picked = [], [], []
        for path, p in zip(policies, loaded):
            t0 = time.perf_counter()
            s, _ = p.run(start, steps)
            found.append(s)
            spent.append(time.perf_counter() - t0)
            os.environ["LT_MLIR_POLICY"] = path  # lt-tune --strategy policy: its programs in the policy's order, measured
            picked.append(tune(start, "policy", budget=steps, seed=0).schedule)
        os.environ.pop("LT_MLIR_POLICY", None)
        rnds = [random_search(start, steps, seed=1 + k, space=space)[0] for k in range(random_seeds)]
        t0 = time.perf_counter()
        tuned = tune(start, "evolution", budget=budget, seed=0).schedule
        tune_s = time.perf_counter() - t0
        with Evaluator(start, samples=10, min_sample_s=5e-4, budget_s=0.3) as ev:
            ms = ev.remeasure(list(dict.fromkeys([start.text] + [s.text for s in found + picked + rnds] + [tuned.text])), rounds=5)
        by_text = {m.text: m.runtime_s for m in ms}
        t_start = by_text[start.text]
        speedups = [t_start / by_text[s.text] for s in found]
        best_of = [t_start / by_text[s.text] for s in picked]
        s_rnds = [t_start / by_text[r.text] for r in rnds]
        s_rnd, s_tune = float(np.median(s_rnds)), t_start / by_text[tuned.text]
        for i, sp in enumerate(speedups):
            ratios[i].append(sp / s_tune)
            beats[i].append(sp > 1.02 * s_rnd)  # by more than the timing's noise
            measured_ratios[i].append(best_of[i] / s_tune)
            measured_beats[i].append(best_of[i] > 1.02 * s_rnd)
        times["policy"] += spent
        times["tune"].append(tune_s)
        cells = [uri.removeprefix("benchmark://"), f"{t_start * 1e3:.3f}", *[f"{x:.2f}x" for x in speedups], *[f"{x:.2f}x" for x in best_of],
                 f"{s_rnd:.2f}x ({min(s_rnds):.2f}..{max(s_rnds):.2f})",
                 f"{s_tune:.2f}x", *[f"{r[-1]:.2f}" for r in ratios], f"{np.mean(spent):.2f}", f"{tune_s:.1f}"]
        print("| " + " | ".join(cells) + " |", flush=True)
    for i, p in enumerate(policies):
        g = float(np.exp(np.mean(np.log(ratios[i])))) if ratios[i] else float("nan")
        gm = float(np.exp(np.mean(np.log(measured_ratios[i])))) if measured_ratios[i] else float("nan")
        print(f"policy {i} ({os.path.basename(p)}): geomean {g:.2f} of lt-tune's speedup; beats random search by more than 2% on "
              f"{sum(beats[i])}/{len(beats[i])} programs; its search ({steps} measurements): {gm:.2f} of lt-tune's, "
              f"beats random search on {sum(measured_beats[i])}/{len(measured_beats[i])}")
    if ratios and ratios[0]:
        g = [float(np.exp(np.mean(np.log(r)))) for r in ratios]
        print(f"spread over policies: geomean of lt-tune's {min(g):.2f}..{max(g):.2f}; "
              f"time {np.mean(times['policy']):.2f} s a policy run against {np.mean(times['tune']):.1f} s an lt-tune run "
              f"({np.mean(times['policy']) / np.mean(times['tune']):.3f} of it)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--speed", action="store_true", help="the speed rows (the default when no policies are given)")
    p.add_argument("--policies", nargs="*", default=None, help="policy files (default with --compare: the shipped one)")
    p.add_argument("--compare", action="store_true", help="the held-out comparison with the shipped policy")
    p.add_argument("--budget", type=int, default=300)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--only", default=None)
    p.add_argument("--random-seeds", type=int, default=5, help="random searches a program (a policy is compared with their median)")
    args = p.parse_args()
    print(f"host: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    policies = args.policies or ([None] if args.compare else [])
    if args.speed or not policies:
        speed()
    if policies:
        if args.random_seeds < 1:
            p.error(f"--random-seeds must be at least 1, got {args.random_seeds}")
        compare([p or Policy().path for p in policies], args.budget, args.steps, args.only, args.random_seeds)


if __name__ == "__main__":
    main()
