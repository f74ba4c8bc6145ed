"""lt-tune against the documented hand schedules, and what the cost model saves.

1. The hand schedules of ``benchmarks/bench_passes.py`` (clipped matmul
   33x48x4096 and matmul 512^3, each + lt-parallel) are measured with the
   same measurer as the search, as speedups over the default schedule.
2. ``lt-tune``'s search (``--strategy``, default greedy) runs with and
   without the cost model over several seeds; for each run: the best
   speedup found, and how many measured evaluations it took to reach the
   hand schedule's speedup (or 95% of it: measurements are noisy).

    .venv/bin/python benchmarks/bench_tune.py [--program clipped] [--budget 300] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import statistics

from bench_passes import CLIPPED_SCHEDULE, MATMUL_SCHEDULE

from lt_mlir import programs
from lt_mlir.schedule import Schedule
from lt_mlir.search.cli import tune
from lt_mlir.search.measure import make_measurer

# (the start of the search, the hand schedule's own start (pre-split levels), its steps)
PROGRAMS = {
    "clipped": (
        programs.matmul(33, 48, 4096, clipped=True),
        programs.matmul(33, 48, 4096, m_blocks=[4], clipped=True),
        CLIPPED_SCHEDULE + ["lt-parallel{loop=0}"],
    ),
    "matmul512": (
        programs.matmul(512, 512, 512),
        programs.matmul(512, 512, 512, m_blocks=[4], n_blocks=[64]),
        MATMUL_SCHEDULE + ["lt-parallel{loop=0}"],
    ),
}


def hand_speedup(text: str, hand_start: str, steps: list[str], repeats: int = 5) -> tuple[float, float]:
    """(median speedup of the hand schedule over the search's start, measured
    together on one worker; the start's runtime)."""
    hand = Schedule(hand_start)
    for step in steps:
        hand.apply(step)
    with make_measurer(text) as m:
        rs = [m.measure([text, hand.text]) for _ in range(repeats)]
    return statistics.median(r[1].speedup for r in rs), statistics.median(r[0].runtime_s for r in rs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--program", choices=sorted(PROGRAMS), default="clipped")
    p.add_argument("--strategy", default="greedy")
    p.add_argument("--budget", type=int, default=300)
    p.add_argument("--seeds", default="0,1,2")
    args = p.parse_args()
    text, hand_start, steps = PROGRAMS[args.program]
    hand, start_s = hand_speedup(text, hand_start, steps)
    print(f"{args.program}: start {start_s * 1e3:.3f} ms; hand schedule (bench_passes.py + lt-parallel) {hand:.2f}x the start")
    target = 0.95 * hand
    for model in (True, False):
        for seed in [int(s) for s in args.seeds.split(",")]:
            r = tune(text, strategy=args.strategy, budget=args.budget, model=model, seed=seed)
            reach = next((i + 1 for i, s in enumerate(r.curve) if s >= target), None)
            print(
                f"  {'model' if model else 'no model':<8} seed {seed}: best {r.speedup:.2f}x "
                f"({'>=' if r.speedup >= hand else '<'} hand {hand:.2f}x) after {r.evaluations} evaluations; "
                f"reached 95% of the hand schedule after {reach if reach else 'never'}; {r.pipeline}"
            )


if __name__ == "__main__":
    main()
