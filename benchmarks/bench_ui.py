"""lt-ui's move -> figure latency, and a whole session by keys.

The blog's clipped matmul 33x48x4096 (the frontend program, its inputs and
a NumPy reference) is opened in the UI, run headless by Textual's pilot,
and tuned with the keys a person would press (README, "Optimise by hand"):
split m by 4, run m on both cores, try n outside k and undo it, try
vectorizing n by hand and undo that.  For every move the time from the key press
to the new figures on screen (compile + measure + check against the
starting schedule) is recorded; the target is 300 ms on a 2-core machine.
Prints the latencies, the figures of each step, the final screen as text
and, with ``--svg PATH``, saves a screenshot (Textual's SVG).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

import numpy as np

import lt_mlir as lt
from lt_mlir.tui.app import LtUi, session_for


def clipped_matmul():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((33, 4096)).astype(np.float32)
    B = rng.standard_normal((4096, 48)).astype(np.float32)
    s = lt.SymbolGenerator()
    c = (lt.Tensor(A).to(s.m, s.k) * lt.Tensor(B).to(s.k, s.n)).max(0.0).sum(s.k)
    # the kernel's inputs: A, B and the 0-d array of the clip value
    return c, lambda a, b, zero: np.maximum(a[:, :, None] * b[None], zero).sum(1)


async def goto(pilot, app, loop: int) -> None:
    """Cursor to L<loop> with the arrow keys."""
    target = next(i for i, ln in enumerate(app.session.lines) if ln.loop == loop)
    delta = target - app.session.cursor
    for _ in range(abs(delta)):
        await pilot.press("down" if delta > 0 else "up")


async def settle(pilot, app) -> None:
    while app.moved_at is not None or any(w.is_running for w in app.workers):
        await pilot.pause(0.01)
    await app.workers.wait_for_complete()
    await pilot.pause()


# (what, L-number to put the cursor on, keys): the README's "Optimise by hand"
MOVES = [
    ("split m by 4", 0, ["s", "4", "enter"]),
    ("parallel m", 0, ["p"]),
    ("n outside k", 4, ["shift+up"]),
    ("undo", 3, ["u"]),
    ("vectorize n", 4, ["v", "enter"]),
    ("undo", 4, ["u"]),
]


async def session(svg: str | None) -> None:
    c, reference = clipped_matmul()
    s, on_exit = session_for(c, reference=reference)
    app = LtUi(s, on_exit)
    async with app.run_test(size=(150, 42)) as pilot:
        await settle(pilot, app)
        print(f"start: {s.cached_figures().line()}")
        for what, loop, keys in MOVES:
            await goto(pilot, app, loop)
            await pilot.press(*keys)
            await settle(pilot, app)
            print(f"{what:<18} {app.latencies[-1] * 1e3:6.0f} ms to the figures | {s.cached_figures().line()}")
        print(f"\npipeline: {s.pipeline}")
        print("\nthe loop tree:\n" + s.schedule.loop_tree)
        await pilot.press("P")
        await app.workers.wait_for_complete()
        await pilot.pause()
        prof = s.profile()
        print("\nprofile:\n" + prof.annotate(s.schedule.loop_tree))
        if svg:
            app.save_screenshot(svg)
            print(f"\nscreenshot: {svg}")
    lat = [t * 1e3 for t in app.latencies]
    print(f"\nmove -> figures: median {statistics.median(lat):.0f} ms, max {max(lat):.0f} ms over {len(lat)} moves (target 300 ms)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--svg", default=None, help="save a screenshot of the final screen (SVG)")
    asyncio.run(session(p.parse_args().svg))


if __name__ == "__main__":
    main()
