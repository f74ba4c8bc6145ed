"""lt_mlir.env's speed: steps per second with observations that compile
nothing (loop_tree, action_state, loops_tensor, stride_tensor), with and
without the exact action mask, and with the measured reward (compile +
warm-up + ``repeat`` runs, cached per schedule text).  Random actions of
the extended space on the clipped matmul 33x48x256; target >= 200 steps/s
without compiling."""

from __future__ import annotations

import time

from lt_mlir.env import LoopToolEnv

URI = "benchmark://clipped-matmul-v0/33x48x256"


def rate(steps: int, **options) -> tuple[float, int]:
    env = LoopToolEnv(URI, "extended", **options)
    env.reset(seed=0)
    env.action_space.seed(0)
    refused = 0
    t0 = time.perf_counter()
    for i in range(steps):
        if i % 20 == 19:
            env.reset()
        *_, info = env.step(env.action_space.sample())
        refused += "refused" in info
    return steps / (time.perf_counter() - t0), refused


def main() -> None:
    rows = [
        ("loop_tree + action_state", dict(observations=("loop_tree", "action_state"), reward=None, action_mask=False), 2000),
        ("+ loops_tensor + stride_tensor", dict(observations=("loop_tree", "action_state", "loops_tensor", "stride_tensor"), reward=None, action_mask=False), 2000),
        ("loop_tree + action_state, action mask", dict(observations=("loop_tree", "action_state"), reward=None, action_mask=True), 300),
        ("loop_tree + flops reward (compiles)", dict(observations=("loop_tree",), reward="flops", action_mask=False, repeat=10), 100),
    ]
    print(f"{URI}, extended action space, random actions (episodes of 20 steps)")
    for what, options, steps in rows:
        r, refused = rate(steps, **options)
        print(f"  {what:<42} {r:8.0f} steps/s  ({steps} steps, {refused} refused)")


if __name__ == "__main__":
    main()
