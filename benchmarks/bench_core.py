"""The core's figures (issue "One core"): what a search step, an environment
step and an environment reward cost.

    python benchmarks/bench_core.py            # this checkout
    PYTHONPATH=/path/to/older/checkout python benchmarks/bench_core.py   # another

1. ``neighbours``: every legal move of a 64^3 matmul's default schedule
   with its result (what a local search expands), median of 5, and how many
   MLIR parses that takes per neighbour.
2. ``env runtime``: the environment's ``runtime`` observation on
   CompilerGym's ``loop_tool-cpu-v0/1024`` against the bare kernel (bound,
   no argument checks), timed in the same process.
3. ``env steps/s``: a masked random policy (uniform over the actions the
   mask allows) with the ``flops`` reward on the clipped matmul 33x48x256,
   for each action space, in episodes of 20 steps (as ``bench_env.py``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lt_mlir import programs
from lt_mlir.mlir import ir

PARSES = [0]
_parse = ir.Module.parse


def _counting_parse(*args, **kwargs):
    PARSES[0] += 1
    return _parse(*args, **kwargs)


ir.Module.parse = _counting_parse


def _neighbours():
    try:
        from lt_mlir.moves import neighbours
    except ImportError:
        from lt_mlir.search.space import neighbours
    return neighbours


def bench_neighbours(repeat: int = 5) -> dict:
    from lt_mlir.schedule import Schedule

    neighbours = _neighbours()
    text = programs.matmul(64, 64, 64)
    times, counts = [], []
    # Every Schedule has its own MLIR context; holding them all until the
    # end keeps the previous one's teardown (a few ms) out of the timing.
    schedules = [Schedule(text) for _ in range(repeat)]
    for s in schedules:
        PARSES[0] = 0
        t0 = time.perf_counter()
        out = neighbours(s)
        times.append(time.perf_counter() - t0)
        counts.append((PARSES[0], len(out)))
    parses, n = counts[-1]
    return {"neighbours": n, "ms": 1e3 * float(np.median(times)), "parses": parses, "parses_per_neighbour": parses / max(n, 1)}


def bench_env_runtime() -> dict:
    from lt_mlir.compiler import compile as compile_module
    from lt_mlir.dialect.lt import parse_module
    from lt_mlir.env import LoopToolEnv
    from lt_mlir.runtime.timing import interleaved_medians

    try:
        from lt_mlir.dialect.entry import find_function, signature
    except ImportError:
        from lt_mlir.runtime.kernel import find_function, signature
    from lt_mlir.runtime.specs import random_inputs

    env = LoopToolEnv("benchmark://loop_tool-cpu-v0/1024", observations=("runtime",), reward=None)
    obs, _ = env.reset(seed=0)
    observed = []
    for _ in range(5):
        env._measured.clear() if hasattr(env, "_measured") else None
        observed.append(float(env.observe("runtime")[0]))
    text = env.schedule.text
    kernel = compile_module(text)
    module = parse_module(text)
    specs = signature(find_function(module.operation, None))
    inputs = random_inputs(specs, 0)
    arrays = list(inputs) + [np.zeros(s.shape, s.dtype) for s in specs if s.written]
    run = kernel.bind(*arrays)

    def many():  # 1000 calls a sample: the bare kernel is well under a microsecond
        for _ in range(1000):
            run()

    bare = interleaved_medians({"bare": many}, repeat=21, warmup=2)["bare"] / 1000
    env_s = float(np.median(observed))
    return {"env_us": env_s * 1e6, "bare_us": bare * 1e6, "ratio": env_s / bare}


def bench_env_steps(space: str, steps: int = 200, seed: int = 0) -> dict:
    from lt_mlir.env import LoopToolEnv

    env = LoopToolEnv("benchmark://clipped-matmul-v0/33x48x256", action_space=space, observations=("action_state",), reward="flops")
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    t0 = time.perf_counter()
    for i in range(steps):
        if i % 20 == 19:
            obs, info = env.reset()
        mask = info["action_mask"]
        allowed = np.flatnonzero(mask)
        action = int(rng.choice(allowed)) if len(allowed) else int(rng.integers(len(mask)))
        obs, reward, terminated, truncated, info = env.step(action)
    elapsed = time.perf_counter() - t0
    return {"space": space, "steps": steps, "steps_per_s": steps / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    n = bench_neighbours()
    print(f"neighbours of matmul 64^3: {n['neighbours']} in {n['ms']:.1f} ms (median of 5), "
          f"{n['parses']} parses ({n['parses_per_neighbour']:.2f} a neighbour)")
    r = bench_env_runtime()
    print(f"env runtime loop_tool-cpu-v0/1024: {r['env_us']:.2f} us observed, bare kernel {r['bare_us']:.3f} us: {r['ratio']:.1f}x")
    for space in ("simple", "split", "extended"):
        s = bench_env_steps(space, args.steps)
        print(f"env steps/s clipped-matmul 33x48x256, {space}, flops reward, masked random: {s['steps_per_s']:.1f}")


if __name__ == "__main__":
    main()
