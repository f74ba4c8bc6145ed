"""``LoopToolEnv``: a Gymnasium environment over a ``Schedule``.

Every action that changes the program is a pass of the registry (the code
``lt-opt`` and ``lt-ui`` run), so every state is an exact, checked
program; an action that does not apply is a no-op whose ``info["refused"]``
is the pass's own message.

Action spaces (``action_space=``):

* ``simple`` (CompilerGym's): ``toggle_mode``, ``up``, ``down``,
  ``toggle_thread``.  In select mode up/down move the cursor inward/outward
  (to the next/previous loop in pre-order); in size mode (the start mode)
  they resize the cursor's level by one iteration, taken from or given to
  its parent level (``lt-resize``: the extent stays exact, the remainder
  becomes the parent's tail).  ``toggle_thread`` runs the loop on CPU
  threads (``lt-parallel``) or, for cuda, GPU blocks/threads
  (``lt-gpu-map``), or takes that away (``lt-unannotate``).
* ``split``: ``simple`` plus ``split`` (``lt-split`` by 2: an inner level
  of two iterations; resize it from there).
* ``extended`` (LoopTune's): ``up``, ``down`` (cursor), ``swap_up``,
  ``swap_down``, ``split_2`` ... ``split_1024``, ``merge``, ``unroll``
  (fully, loops of at most 64 iterations), ``vectorize`` (this CPU's width),
  ``parallel`` (and ``gpu_block``, ``gpu_thread`` for cuda).

Observations (``observations=``, a ``Dict`` space of those asked for):
``loop_tree``, ``ir``, ``action_state`` ([cursor loop, size, tail]),
``runtime`` (seconds: the evaluator's median of up to ``repeat`` samples of
at least 0.2 ms each, at most 50 ms of timing, the bound kernel in a child
process), ``flops``
(GFLOP/s of the same measurement), ``loops_tensor``, ``stride_tensor``,
``5_prev_actions_tensor`` (``features.py``).  ``ir_tree_networkx`` and
``ir_graph_networkx`` are networkx graphs (Gymnasium has no space for them):
``env.observe(name)`` computes any observation on demand.

Reward (``reward="flops"``): the change in measured GFLOP/s since the last
step, divided by ``peak_gflops`` when given; ``reward=None`` gives 0 and
compiles nothing (fast exploration).  Compiled kernels and measurements are
cached by schedule text.  Episodes end after ``max_episode_steps`` (the
registered ids wrap the env in ``TimeLimit``); ``terminated`` is never set.
"""

from __future__ import annotations

import string
from collections import OrderedDict

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..analysis import features
from ..dialect import lt
from ..dialect.loop_tree import loop_tree, preorder_loops
from ..errors import LtError
from ..evaluate import Evaluator, Limits
from ..frontend import Tensor
from ..moves import Move, action, apply_move, search_moves
from ..schedule import Schedule
from ..targets import get_target
from . import datasets

SIMPLE = ["toggle_mode", "up", "down", "toggle_thread"]
ACTION_SPACES = {
    "simple": SIMPLE,
    "split": SIMPLE + ["split"],
    # the cursor, then every search move of lt_mlir.moves for the CPU (a registered move kind joins it)
    "extended": ["up", "down", *[str(Move(kind, None, arg)) for kind, arg in search_moves("cpu")]],
}
OBSERVATIONS = (
    "loop_tree", "ir", "action_state", "runtime", "flops", "loops_tensor", "stride_tensor", "5_prev_actions_tensor",
    "ir_tree_networkx", "ir_graph_networkx",
)
GRAPHS = ("ir_tree_networkx", "ir_graph_networkx")
MEASURED = 4096  # measurements the env keeps (by schedule text), least recently used dropped
_TEXT = spaces.Text(max_length=1 << 20, charset=string.printable)


class LoopToolEnv(gym.Env):
    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        benchmark="benchmark://loop_tool-cpu-v0/1024",
        action_space: str = "simple",
        observations=("loop_tree", "action_state"),
        reward: str | None = "flops",
        max_loops: int = 32,
        peak_gflops: float | None = None,
        repeat: int = 20,
        action_mask: bool = True,
        render_mode: str | None = None,
        limits: Limits | None = None,
    ):
        if action_space not in ACTION_SPACES:
            raise LtError(f"error: unknown action space '{action_space}' (spaces: {', '.join(ACTION_SPACES)})")
        unknown = [o for o in observations if o not in OBSERVATIONS]
        if unknown:
            raise LtError(f"error: unknown observation(s) {', '.join(unknown)} (observations: {', '.join(OBSERVATIONS)})")
        if reward not in (None, "flops"):
            raise LtError(f"error: unknown reward '{reward}' (rewards: flops, None)")
        if render_mode not in (None, "ansi"):
            raise LtError(f"error: unknown render mode '{render_mode}' (modes: ansi)")
        self.benchmark = self._as_benchmark(benchmark)
        self.actions = list(ACTION_SPACES[action_space])
        self.target = get_target(self.benchmark.target)
        if action_space == "extended":
            self.actions = ["up", "down", *[str(Move(kind, None, arg)) for kind, arg in search_moves(self.target)]]
        self.action_space_name = action_space
        self.action_space = spaces.Discrete(len(self.actions))
        self.observation_names = [o for o in observations if o not in GRAPHS]
        self.max_loops, self.peak, self.repeat = max_loops, peak_gflops, repeat
        self.reward_kind, self.want_mask, self.render_mode = reward, action_mask, render_mode
        self.observation_space = spaces.Dict({name: self._space(name) for name in self.observation_names})
        self.limits = limits or Limits()
        self._measured: OrderedDict = OrderedDict()  # schedule text -> (runtime s, GFLOP/s)
        self._evaluator: Evaluator | None = None
        self._measure_error = ""
        self._mask_cache: dict = {}
        self._parsed = None  # (schedule text, its parsed module)
        self.schedule: Schedule | None = None

    # ------------------------------------------------------------ setup
    @staticmethod
    def _as_benchmark(obj) -> datasets.Benchmark:
        if isinstance(obj, datasets.Benchmark):
            return obj
        if isinstance(obj, Tensor):
            return datasets.Benchmark("tensor://user", obj.code)
        if isinstance(obj, Schedule):
            return datasets.Benchmark("schedule://user", obj.text, entry=obj.entry)
        if isinstance(obj, str) and obj.startswith("benchmark://"):
            return datasets.benchmark(obj)
        if isinstance(obj, str):
            Schedule(obj)  # a clear, located error for bad IR, now
            return datasets.Benchmark("module://user", obj)
        raise LtError(f"error: a benchmark is a URI, lt module text, a Schedule or a tensor, not {type(obj).__name__}")

    def _space(self, name: str):
        if name in ("loop_tree", "ir"):
            return _TEXT
        if name == "action_state":
            return spaces.Box(0, np.iinfo(np.int64).max, shape=(3,), dtype=np.int64)
        if name in ("runtime", "flops"):
            return spaces.Box(0.0, np.inf, shape=(1,), dtype=np.float64)
        if name == "loops_tensor":
            return spaces.Box(0.0, np.inf, shape=(self.max_loops, len(features.LOOP_FEATURES)), dtype=np.float32)
        if name == "stride_tensor":
            return spaces.Box(0.0, np.inf, shape=(features.STRIDE_BINS,), dtype=np.float32)
        if name == "5_prev_actions_tensor":
            return spaces.Box(0.0, 1.0, shape=(5, len(self.actions)), dtype=np.float32)
        raise LtError(f"error: no space for observation '{name}'")

    # ------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options and "benchmark" in options:
            new = self._as_benchmark(options["benchmark"])
            if new.target != self.benchmark.target and self.action_space_name == "extended":
                raise LtError("error: reset to a benchmark of another target: make a new env (its action space differs)")
            if (new.text, new.entry, new.target) != (self.benchmark.text, self.benchmark.entry, self.benchmark.target):
                self._close_evaluator()
                self._mask_cache.clear()
            self.benchmark = new
            self.target = get_target(new.target)
        self.schedule = Schedule(self.benchmark.text, self.benchmark.entry)
        self.cursor = 0
        self.size_mode = True  # CompilerGym's simple space starts in size mode
        self.previous: list[int] = []
        self.steps = 0
        self._last_gflops = 0.0
        if self.reward_kind:
            gflops = self._gflops()
            if gflops is None:
                raise LtError(f"error: the benchmark's start schedule cannot be measured: {self._measure_error}")
            self._last_gflops = gflops
        info = self._info(None)
        return self._observe_all(), info

    def step(self, action):
        if not self.action_space.contains(action):
            raise LtError(f"error: action {action!r} is not in the action space (0..{len(self.actions) - 1})")
        if self.schedule is None:
            raise LtError("error: call reset() before step()")
        name = self.actions[int(action)]
        before = (self.schedule, self.cursor)
        self.schedule = self.schedule.copy()
        refused = self._apply(name)
        self.previous = (self.previous + [int(action)])[-5:]
        self.steps += 1
        reward = 0.0
        if self.reward_kind and refused is None:
            gflops = self._gflops()
            if gflops is None:  # past a time limit, or a compile error: refused, nothing changes
                self.schedule, self.cursor = before
                refused = self._measure_error
            else:
                reward = (gflops - self._last_gflops) / (self.peak or 1.0)
                self._last_gflops = gflops
        return self._observe_all(), float(reward), False, False, self._info(refused)

    def render(self):
        if self.render_mode == "ansi":
            return self._annotated_tree()
        return None

    def close(self):
        self.schedule = None
        self._measured.clear()
        self._mask_cache.clear()
        self._close_evaluator()

    def _close_evaluator(self) -> None:
        if self._evaluator is not None:
            self._evaluator.close()
            self._evaluator = None
        self._measured.clear()

    # ------------------------------------------------------------ actions
    def _module(self):
        """The current state's module, held by its schedule (read only)."""
        return self.schedule.parsed

    def _loops(self):
        module = self._module()
        return module, preorder_loops(module.operation)

    def _apply(self, name: str) -> str | None:
        """Run action ``name`` on the current state; None, or why it was refused."""
        try:
            return self._act(name)
        except LtError as e:
            return str(e)

    def _act(self, name: str) -> str | None:
        module, loops = self._loops()
        n = len(loops)
        if n == 0:
            return "error: the program has no loops"
        self.cursor = min(self.cursor, n - 1)
        c = self.cursor
        if name == "toggle_mode":
            self.size_mode = not self.size_mode
            return None
        if name in ("up", "down") and (self.action_space_name == "extended" or not self.size_mode):
            target = c + 1 if name == "up" else c - 1
            if not 0 <= target < n:
                return f"error: the cursor is on L{c}, the {'innermost' if name == 'up' else 'outermost'} loop it can reach"
            self.cursor = target
            return None
        if name in ("up", "down"):  # size mode
            move = Move("resize", c, 1 if name == "up" else -1)
        elif name == "split":
            move = Move("split", c, 2)
        else:
            kind, arg = action(name)
            move = Move(kind, c, arg)
        follow = apply_move(self.schedule, move, self.target)
        self.cursor = c if follow is None else follow
        return None

    def action_mask(self) -> np.ndarray:
        """Which actions would change the state now (1) or be refused (0):
        each is tried on a copy (cached per state)."""
        key = (self.schedule.text, self.cursor, self.size_mode)
        if key in self._mask_cache:
            return self._mask_cache[key]
        mask = np.zeros(len(self.actions), dtype=np.int8)
        saved = (self.schedule, self.cursor, self.size_mode)
        for i, name in enumerate(self.actions):
            self.schedule = saved[0].copy()
            try:
                mask[i] = 1 if self._apply(name) is None else 0
            finally:
                self.schedule, self.cursor, self.size_mode = saved
        if len(self._mask_cache) > 4096:
            self._mask_cache.clear()
        self._mask_cache[key] = mask
        return mask

    # ------------------------------------------------------------ observations
    def observe(self, name: str):
        """Observation ``name`` of the current state (any of OBSERVATIONS)."""
        if name not in OBSERVATIONS:
            raise LtError(f"error: unknown observation '{name}' (observations: {', '.join(OBSERVATIONS)})")
        s = self.schedule
        if name == "loop_tree":
            return loop_tree(self._module(), s.entry)
        if name == "ir":
            return s.text
        if name == "action_state":
            module, loops = self._loops()
            if not loops:
                return np.zeros(3, dtype=np.int64)
            c = min(self.cursor, len(loops) - 1)
            return np.array([c, lt.loop_size(loops[c]), lt.loop_tail(loops[c])], dtype=np.int64)
        if name in ("runtime", "flops"):
            measured = self._measure()
            if measured is None:
                raise LtError(f"error: the schedule cannot be measured: {self._measure_error}")
            runtime, gflops = measured
            return np.array([runtime if name == "runtime" else gflops], dtype=np.float64)
        if name == "5_prev_actions_tensor":
            out = np.zeros((5, len(self.actions)), dtype=np.float32)
            for row, a in enumerate(self.previous[-5:]):
                out[row, a] = 1.0
            return out
        module = self._module()
        if name == "loops_tensor":
            return features.loops_tensor(module, self.cursor, self.max_loops)
        if name == "stride_tensor":
            return features.stride_tensor(module)
        if name == "ir_tree_networkx":
            return features.ir_tree_networkx(module)
        return features.ir_graph_networkx(module)

    def _observe_all(self) -> dict:
        return {name: self.observe(name) for name in self.observation_names}

    def _info(self, refused: str | None) -> dict:
        info = {"action_names": list(self.actions), "steps": self.steps, "size_mode": self.size_mode, "uri": self.benchmark.uri}
        if refused is not None:
            info["refused"] = refused
        if self.want_mask:
            info["action_mask"] = self.action_mask().copy()
        if self.reward_kind:
            info["gflops"] = self._last_gflops
            info["repeat"] = self.repeat
        return info

    # ------------------------------------------------------------ measurement
    def _gflops(self) -> float | None:
        measured = self._measure()
        return None if measured is None else measured[1]

    def _measure(self) -> tuple[float, float] | None:
        """(median seconds, GFLOP/s) of the current schedule, from the
        evaluator (the bound kernel timed in a child process, within the
        env's time ``limits``); None when it cannot be measured (the reason
        in ``_measure_error``).  The env keeps the last ``MEASURED``."""
        text = self.schedule.text
        if text in self._measured:
            self._measured.move_to_end(text)
            return self._measured[text]
        if self._evaluator is None:
            self._evaluator = Evaluator(self.benchmark.text, self.benchmark.entry, self.target, limits=self.limits,
                                        samples=self.repeat, min_sample_s=2e-4, budget_s=0.05, baseline=False)
        m = self._evaluator.measure(text)
        if not m.ok:
            self._measure_error = m.error
            return None
        result = (m.runtime_s, self.schedule.flops() / m.runtime_s / 1e9)
        self._measured[text] = result
        while len(self._measured) > MEASURED:
            self._measured.popitem(last=False)
        return result

    def _annotated_tree(self) -> str:
        lines = []
        for line in self.observe("loop_tree").splitlines():
            mark = ""
            if f": L{self.cursor}" in line and (line.endswith(f": L{self.cursor}") or f": L{self.cursor} [" in line):
                mark = "  <-- cursor" + (" (size mode)" if self.size_mode and self.action_space_name != "extended" else "")
            lines.append(line + mark)
        return "\n".join(lines)
