"""``LoopToolEnv``: a Gymnasium environment over a ``Schedule``.

Every action that changes the program is a pass of the registry (the code
``lt-opt`` and ``lt-ui`` run), so every state is an exact, checked
program; an action that does not apply is a no-op whose ``info["refused"]``
is the pass's own message.

Action spaces (``action_space=``):

* ``simple`` (CompilerGym's): ``toggle_mode``, ``up``, ``down``,
  ``toggle_thread``.  In select mode ``up`` moves the cursor inward (to
  the next loop in pre-order) and ``down`` outward, both wrapping around
  at the ends, as CompilerGym's ``loop_tool`` does; in size mode (the
  start mode) they resize the cursor's level by one iteration, taken from
  or given to its parent level (``lt-resize``: the extent stays exact, the
  remainder becomes the parent's tail).  ``toggle_thread`` runs the loop
  on CPU threads (``lt-parallel``) or, for cuda, GPU blocks/threads
  (``lt-gpu-map``), or takes that away (``lt-unannotate``).
* ``split``: ``simple`` plus ``split`` (``lt-split`` by 2: an inner level
  of two iterations; resize it from there).
* ``looptune`` (LoopTune's, as its environment lists them): ``up``,
  ``down``, ``swap_up``, ``swap_down``, ``split_4``, ``split_8``,
  ``split_16``, with LoopTune's cursor: ``up`` to the previous (outer)
  loop in pre-order, ``down`` to the next, a swapped loop carries the
  cursor with it, a split leaves it on the outer part.
* ``extended``: LoopTune's cursor and every search move of
  ``lt_mlir.moves`` for the target (``swap_up``, ``swap_down``,
  ``split_2`` ... ``split_1024``, ``merge``, ``unroll`` (fully, loops of
  at most 64 iterations), ``vectorize`` (the target's width), ``parallel``;
  ``gpu_block``, ``gpu_thread`` for cuda).
* ``recipes``: ``extended`` plus ``lt_mlir.recipes``' hand schedules as
  whole-program actions (``register_tile``, ``vector_rows``,
  ``vector_loops``, ``channel_tile``, ``row_tile``, each also ``_parallel``;
  ``gpu_tiled_matmul`` for cuda), each one step (``agent.RECIPE_ACTIONS``).

Where these differ from the references, and why: README, "RL
environment" (each difference a test in tests/test_env_anchors.py).  An action that does not apply changes nothing; LoopTune
does not record it in ``5_prev_actions_tensor`` either.

Observations (``observations=``: a ``Dict`` space of those asked for, by
default ``loops_tensor`` and ``action_state``, tensors that RLlib and
Stable-Baselines3 take; ``observation_space="name"``: that observation
alone, as CompilerGym's keyword): ``loop_tree``, ``ir``, ``action_state``
([cursor loop, size, tail]; the cursor at most ``max_loops - 1``, sizes at
most ``SIZE_BOUND``: a space with finite bounds can be sampled), ``runtime`` (seconds: the evaluator's median
of up to ``repeat`` samples of at least 0.2 ms each, at most 50 ms of
timing, the bound kernel in a child process), ``flops`` (GFLOP/s of the
same measurement; ``gflops`` and LoopTune's ``flops_loop_nest_tensor``
name it too), ``loops_tensor``, ``stride_tensor``,
``5_prev_actions_tensor`` (one-hot rows, the newest action first, as
LoopTune's) (``features.py``).  ``ir_tree_networkx`` and
``ir_graph_networkx`` are networkx graphs (Gymnasium has no space for
them): ``env.observe(name)`` computes any observation on demand.

Rewards (``reward=`` or ``reward_space=``): ``flops`` the change in
measured GFLOP/s since the last step (CompilerGym's; divided by
``peak_gflops`` when given), ``normalized`` that change over the peak
(LoopTune's: ``peak_gflops``, else the ``MAX_GFLOPS`` environment
variable), ``speedup`` that change over the start schedule's GFLOP/s (an
episode's return is its final speedup minus one: comparable across
programs), ``runtime`` the seconds saved; ``None`` gives 0 and compiles
nothing (fast exploration).  Measurements are cached by schedule text (the
last 4096); ``remeasure=k`` measures a schedule again on each of its first
k visits, its figure the median of those (a policy trained on the first
noisy figure of each schedule learns that figure's luck).  A compile and
a run each have a time limit (``limits``; by default a step measures
within ``step_limit_s`` = 2 s); a schedule past it is refused.  Episodes end after ``max_episode_steps`` (the registered
ids wrap the env in ``TimeLimit``); ``terminated`` is never set.

Also CompilerGym's: ``fork()`` (and ``copy.deepcopy``), ``validate()``,
``multistep(actions)`` (indices or names: a LoopTune trace replays),
``env.datasets``, benchmark URIs with or without ``benchmark://``,
``reset(options={"benchmark": ...})``; RLlib's ``LoopToolEnv(env_config)``;
sb3-contrib's ``action_masks()``; ``reset(seed=)`` seeds the inputs the
kernels are measured on.  ``keep_programs``: how many programs' evaluators
(a child process each, with its compiled kernels and figures) stay up when
``reset`` moves to another program (a dataset wrapper comes back to them).
"""

from __future__ import annotations

import os
import statistics
import string
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .. import agent
from ..agent import ACTION_SPACES, action_names, plain
from ..analysis import features
from ..dialect import lt
from ..dialect.entry import find_function, signature
from ..dialect.loop_tree import loop_tree, preorder_loops
from ..errors import InvalidAction, LtError
from ..evaluate import Evaluator, Limits
from ..frontend import Tensor
from ..runtime.specs import random_inputs
from ..schedule import Schedule
from ..targets import get_target
from . import datasets

MEASURED_OBSERVATIONS = ("runtime", "flops", "gflops", "flops_loop_nest_tensor")
OBSERVATIONS = (
    "loop_tree", "ir", "action_state", *MEASURED_OBSERVATIONS, "loops_tensor", "stride_tensor", "5_prev_actions_tensor",
    "ir_tree_networkx", "ir_graph_networkx",
)
GRAPHS = ("ir_tree_networkx", "ir_graph_networkx")
REWARDS = ("flops", "normalized", "speedup", "runtime")
DEFAULT_OBSERVATIONS = ("loops_tensor", "action_state")
SIZE_BOUND = 2**31 - 1  # action_state's loop size and tail are clipped to it
MEASURED = 4096  # measurements the env keeps (by schedule text), least recently used dropped
STEP_LIMIT_S = 2.0
_TEXT = spaces.Text(max_length=1 << 20, charset=string.printable)


@dataclass
class ValidationResult:
    """What ``LoopToolEnv.validate`` found (CompilerGym's fields)."""

    benchmark: str
    walltime: float
    errors: list = field(default_factory=list)
    actions_replay_failed: bool = False
    reward_validated: bool = False

    def okay(self) -> bool:
        return not self.errors

    def __str__(self) -> str:
        return f"{self.benchmark}: {'ok' if self.okay() else '; '.join(self.errors)} ({self.walltime:.2f} s)"


CACHE_ENTRIES = 2048  # a cache of the env's (masks, transitions) is emptied when it holds more


def _bounded(cache: dict) -> dict:
    """``cache``, emptied first when it is full (``CACHE_ENTRIES``)."""
    if len(cache) >= CACHE_ENTRIES:
        cache.clear()
    return cache


class LoopToolEnv(gym.Env):
    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        benchmark="benchmark://loop_tool-cpu-v0/1024",
        action_space: str = "simple",
        observations=DEFAULT_OBSERVATIONS,
        reward: str | None = "flops",
        max_loops: int = 32,
        peak_gflops: float | None = None,
        repeat: int = 20,
        action_mask: bool = True,
        render_mode: str | None = None,
        limits: Limits | None = None,
        *,
        observation_space: str | None = None,
        reward_space: str | None = None,
        step_limit_s: float = STEP_LIMIT_S,
        seed: int | None = None,
        keep_programs: int = 1,
        remeasure: int = 1,
    ):
        if isinstance(benchmark, dict):  # RLlib's LoopToolEnv(env_config): every option in one dict
            config = dict(benchmark)
            unknown = [k for k in config if k not in _OPTIONS]
            if unknown:
                raise LtError(f"error: unknown option(s) {', '.join(map(str, unknown))} in the env config (options: {', '.join(_OPTIONS)})")
            self.__init__(**config)
            return
        self._config = dict(
            benchmark=benchmark, action_space=action_space, observations=observations, reward=reward, max_loops=max_loops,
            peak_gflops=peak_gflops, repeat=repeat, action_mask=action_mask, render_mode=render_mode, limits=limits,
            observation_space=observation_space, reward_space=reward_space, step_limit_s=step_limit_s, seed=seed,
            keep_programs=keep_programs, remeasure=remeasure,
        )
        if action_space not in ACTION_SPACES:
            raise LtError(f"error: unknown action space '{action_space}' (spaces: {', '.join(ACTION_SPACES)})")
        single = observation_space is not None
        if single:
            if not isinstance(observation_space, str):
                raise LtError("error: observation_space names one observation (e.g. 'loops_tensor'); several go in observations=")
            observations = (observation_space,)
        elif isinstance(observations, str):
            observations = (observations,)
        observations = tuple(observations)
        unknown = [o for o in observations if o not in OBSERVATIONS]
        if unknown:
            raise LtError(f"error: unknown observation(s) {', '.join(map(str, unknown))} (observations: {', '.join(OBSERVATIONS)})")
        if single and observation_space in GRAPHS:
            raise LtError(f"error: '{observation_space}' is a networkx graph, which no Gymnasium space holds: ask env.observe('{observation_space}')")
        if reward_space is not None:
            reward = reward_space
        if reward not in (None, *REWARDS):
            raise LtError(f"error: unknown reward '{reward}' (rewards: {', '.join(REWARDS)}, None)")
        if render_mode not in (None, "ansi"):
            raise LtError(f"error: unknown render mode '{render_mode}' (modes: ansi)")
        if not isinstance(step_limit_s, (int, float)) or isinstance(step_limit_s, bool) or step_limit_s <= 0:
            raise LtError(f"error: step_limit_s is a positive number of seconds, got {step_limit_s!r}")
        if reward == "normalized" and peak_gflops is None:
            peak_gflops = _peak_from_environment()
        self.benchmark = self._as_benchmark(benchmark)
        self.target = get_target(self.benchmark.target)
        self.action_space_name = action_space
        self.actions = action_names(action_space, self.target)
        self.action_space = spaces.Discrete(len(self.actions))
        self.observation_names = [o for o in observations if o not in GRAPHS]
        self.single = single
        self.max_loops, self.peak, self.repeat = max_loops, peak_gflops, repeat
        self.reward_kind, self.want_mask, self.render_mode = reward, action_mask, render_mode
        spaces_ = {name: self._space(name) for name in self.observation_names}
        self.observation_space = spaces_[observation_space] if single else spaces.Dict(spaces_)
        # a step measures within step_limit_s: 70% of it for the compile, 20% for the runs, and 10% left
        # for the rest of the step (the mask, the observation, the evaluator's messages)
        self.limits = limits or Limits(compile_s=0.7 * step_limit_s, run_s=0.2 * step_limit_s)
        self.input_seed = 0 if seed is None else int(seed)
        if not isinstance(keep_programs, int) or isinstance(keep_programs, bool) or keep_programs < 1:
            raise LtError(f"error: keep_programs is a whole number >= 1, got {keep_programs!r}")
        self.keep_programs = keep_programs
        if not isinstance(remeasure, int) or isinstance(remeasure, bool) or remeasure < 1:
            raise LtError(f"error: remeasure is a whole number >= 1, got {remeasure!r}")
        self.remeasure = remeasure
        # per program (text, entry, target, input seed): [its evaluator or None,
        # schedule text -> (median runtime s, GFLOP/s, the runtimes measured)],
        # the last keep_programs kept (their evaluators' child processes stay up: a dataset wrapper comes back to them)
        self._programs: OrderedDict = OrderedDict()
        self._measure_error = ""
        self._mask_cache: dict = {}
        # (state text, cursor, mode, action) -> (the steps it made, cursor, mode, refusal): a state's
        # transitions are deterministic, so an episode that comes back to one replays them
        self._step_cache: dict = {}
        self.schedule: Schedule | None = None
        self.episode_reward = 0.0
        self.history: list[int] = []  # every action of the episode, refused ones too (what validate() replays)

    # ------------------------------------------------------------ setup
    @staticmethod
    def _as_benchmark(obj) -> datasets.Benchmark:
        if isinstance(obj, datasets.Benchmark):
            return obj
        if isinstance(obj, Tensor):
            return datasets.Benchmark("tensor://user", obj.code)
        if isinstance(obj, Schedule):
            return datasets.Benchmark("schedule://user", obj.text, entry=obj.entry)
        if isinstance(obj, str) and datasets.is_uri(obj):
            return datasets.benchmark(obj)
        if isinstance(obj, str):
            Schedule(obj)  # a clear, located error for bad IR, now
            return datasets.Benchmark("module://user", obj)
        raise LtError(f"error: a benchmark is a URI, lt module text, a Schedule or a tensor, not {type(obj).__name__}")

    def _space(self, name: str):
        if name in ("loop_tree", "ir"):
            return _TEXT
        if name == "action_state":
            # finite bounds: a space with int64's maximum cannot be sampled (Gymnasium's Box.sample
            # overflows computing high + 1), and RLlib's FlattenObservations samples it
            return spaces.Box(0, np.array([self.max_loops - 1, SIZE_BOUND, SIZE_BOUND]), shape=(3,), dtype=np.int64)
        if name in MEASURED_OBSERVATIONS:
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
        options = dict(options or {})
        unknown = [k for k in options if k not in ("benchmark",)]
        if unknown:
            raise LtError(f"error: unknown reset option(s) {', '.join(map(str, unknown))} (options: benchmark)")
        if "benchmark" in options and options["benchmark"] is not None:
            new = self._as_benchmark(options["benchmark"])
            if new.target != self.benchmark.target and self.action_space_name in ("extended", "recipes"):
                raise LtError("error: reset to a benchmark of another target: make a new env (its action space differs)")
            self.benchmark = new
            self.target = get_target(new.target)
        if seed is not None:  # the inputs the kernels run on come from the seed
            self.input_seed = int(seed)
        self.schedule = Schedule(self.benchmark.text, self.benchmark.entry)
        self.cursor = 0
        self.size_mode = True  # CompilerGym's simple space starts in size mode
        self.previous: list[int] = []  # the actions applied (refused ones are not: LoopTune's), oldest first
        self.history = []
        self.steps = 0
        self.episode_reward = 0.0
        self._last = (0.0, 0.0)  # (seconds, GFLOP/s) of the last measured state
        self._start_gflops = 0.0
        if self.reward_kind:
            measured = self._measure()
            if measured is None:
                raise LtError(f"error: the benchmark's start schedule cannot be measured: {self._measure_error}")
            self._last = measured
            self._start_gflops = measured[1]
        info = self._info(None)
        return self._observation(), info

    def step(self, action):
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        if not self.action_space.contains(action):
            raise InvalidAction(f"error: action {action!r} is not in the action space (0..{len(self.actions) - 1}: "
                                f"{', '.join(self.actions)})")
        if self.schedule is None:
            raise LtError("error: call reset() before step()")
        name = self.actions[int(action)]
        before = (self.schedule, self.cursor, self.size_mode)
        self.schedule = self.schedule.copy()
        refused = self._apply(name)
        no_effect = refused is not None or (self.cursor, self.size_mode) == before[1:] and self.schedule.key == before[0].key
        self.history.append(int(action))
        self.steps += 1
        reward = 0.0
        if self.reward_kind and refused is None:
            measured = self._measure()
            if measured is None:  # past a time limit, or a compile error: refused, nothing changes
                self.schedule, self.cursor, self.size_mode = before
                refused = plain(self._measure_error)
            else:
                reward = self._reward(measured)
                self._last = measured
        if refused is None:
            self.previous = (self.previous + [int(action)])[-5:]
        self.episode_reward += reward
        info = self._info(refused)
        info["action_had_no_effect"] = no_effect or refused is not None
        return self._observation(), float(reward), False, False, info

    def _reward(self, measured: tuple) -> float:
        (seconds, gflops), (last_s, last_gflops) = measured, self._last
        if self.reward_kind == "runtime":
            return last_s - seconds
        if self.reward_kind == "speedup":
            return (gflops - last_gflops) / self._start_gflops if self._start_gflops else 0.0
        return (gflops - last_gflops) / (self.peak or 1.0)

    def multistep(self, actions):
        """Take ``actions`` in order: indices, or action names (a LoopTune or
        CompilerGym trace replays by name).  Returns the last step's
        (observation, summed reward, terminated, truncated, info)."""
        total, result = 0.0, None
        for a in actions:
            if isinstance(a, str):
                if a not in self.actions:
                    raise InvalidAction(f"error: unknown action '{a}' in the '{self.action_space_name}' space "
                                        f"(actions: {', '.join(self.actions)})")
                a = self.actions.index(a)
            result = self.step(a)
            total += result[1]
        if result is None:
            return self._observation(), 0.0, False, False, self._info(None)
        return result[0], total, result[2], result[3], result[4]

    def render(self):
        if self.render_mode == "ansi":
            return self._annotated_tree()
        return None

    def close(self):
        self.schedule = None
        self._mask_cache.clear()
        self._step_cache.clear()
        self._close_evaluator()

    def _close_evaluator(self) -> None:
        for evaluator, _ in self._programs.values():
            if evaluator is not None:
                evaluator.close()
        self._programs.clear()

    def _program(self) -> list:
        """[evaluator or None, measurements] of the current program (and input seed)."""
        b = self.benchmark
        key = (b.text, b.entry, self.target.name, self.input_seed)
        if key in self._programs:
            self._programs.move_to_end(key)
        else:
            self._programs[key] = [None, OrderedDict()]
            while len(self._programs) > self.keep_programs:
                evaluator, _ = self._programs.popitem(last=False)[1]
                if evaluator is not None:
                    evaluator.close()
        return self._programs[key]

    @property
    def _evaluator(self) -> Evaluator | None:
        return self._program()[0]

    @property
    def _measured(self) -> OrderedDict:
        return self._program()[1]

    # ------------------------------------------------------------ CompilerGym's extras
    def fork(self) -> "LoopToolEnv":
        """A new environment in this one's state (schedule, cursor, mode,
        history, measurements); the two go on independently."""
        other = LoopToolEnv(**{**self._config, "benchmark": self.benchmark})
        other.input_seed = self.input_seed
        for key, (_, measured) in self._programs.items():  # the figures, not the child processes
            other._programs[key] = [None, OrderedDict(measured)]
        other._mask_cache = dict(self._mask_cache)
        other._step_cache = dict(self._step_cache)
        if self.schedule is not None:
            other.schedule = self.schedule.copy()
            other.cursor, other.size_mode, other.steps = self.cursor, self.size_mode, self.steps
            other.previous, other.history = list(self.previous), list(self.history)
            other.episode_reward, other._last, other._start_gflops = self.episode_reward, self._last, self._start_gflops
        return other

    def __deepcopy__(self, memo):
        return self.fork()

    def validate(self) -> ValidationResult:
        """CompilerGym's check of an episode: the actions taken since the
        reset replay, from the start, to the same program; that program
        compiles and computes what the start schedule computes on the
        env's seeded inputs (and, where the benchmark has one, what its
        NumPy reference computes)."""
        if self.schedule is None:
            raise LtError("error: call reset() before validate()")
        t0 = time.perf_counter()
        result = ValidationResult(self.benchmark.uri, 0.0)
        replay = LoopToolEnv(**{**self._config, "benchmark": self.benchmark, "reward": None, "reward_space": None, "action_mask": False})
        replay.reset()
        for a in self.history:
            replay.step(a)
        if replay.schedule.text != self.schedule.text or replay.cursor != self.cursor:
            result.actions_replay_failed = True
            result.errors.append("the actions taken do not replay to this state")
        with Evaluator(self.benchmark.text, self.benchmark.entry, self.target, seed=self.input_seed, limits=self.limits,
                       samples=3, min_sample_s=0.0, budget_s=0.0, baseline=False, keep_outputs=True) as ev:
            m = ev.measure(self.schedule.text)
        if m.error:
            result.errors.append(plain(m.error))
        elif not m.correct:
            result.errors.append(f"the program's outputs differ from the start schedule's: {m.mismatch}")
        elif self.benchmark.reference is not None and self.target.name == "cpu":
            problem = _check_reference(self, m.outputs)
            if problem:
                result.errors.append(problem)
        result.reward_validated = self.reward_kind is None or not result.errors
        result.walltime = time.perf_counter() - t0
        return result

    # ------------------------------------------------------------ actions
    def _module(self):
        """The current state's module, held by its schedule (read only)."""
        return self.schedule.parsed

    def _loops(self):
        module = self._module()
        return module, preorder_loops(module.operation)

    def _apply(self, name: str) -> str | None:
        """Run action ``name`` on the current state; None, or why it was refused."""
        self.cursor, self.size_mode, refused = self._transition(self.schedule, self.cursor, self.size_mode, name)
        return refused

    def _transition(self, schedule: Schedule, cursor: int, size_mode: bool, name: str) -> tuple:
        """``agent.act`` in this env's space and target (``schedule`` changed
        in place): a transition made before from this state (text, cursor,
        mode) -- a step, or the mask's trial of it -- is replayed from the
        cache, the same states appended."""
        key = (schedule.text, cursor, size_mode, name)
        hit = self._step_cache.get(key)
        if hit is not None:
            steps, cursor, size_mode, refused = hit
            schedule.extend(steps)
            return cursor, size_mode, refused
        mark = schedule.mark()
        cursor, size_mode, refused = agent.act(schedule, cursor, size_mode, name, self.action_space_name, self.target)
        _bounded(self._step_cache)[key] = (schedule.since(mark), cursor, size_mode, refused)
        return cursor, size_mode, refused

    def action_mask(self) -> np.ndarray:
        """Which actions would change the state now (1) or be refused (0):
        each is tried on a copy (cached per state; the trials' transitions
        too, so the step that follows replays the one it takes)."""
        key = (self.schedule.text, self.cursor, self.size_mode)
        if key in self._mask_cache:
            return self._mask_cache[key]
        mask = agent.mask(self.schedule, self.cursor, self.size_mode, self.actions, self.action_space_name, self.target,
                          step=self._transition)
        _bounded(self._mask_cache)[key] = mask
        return mask

    def action_masks(self) -> np.ndarray:
        """``action_mask`` as booleans: sb3-contrib's ``MaskablePPO`` asks for this."""
        return self.action_mask().astype(bool)

    # ------------------------------------------------------------ observations
    def observe(self, name: str):
        """Observation ``name`` of the current state (any of OBSERVATIONS)."""
        if name not in OBSERVATIONS:
            raise LtError(f"error: unknown observation '{name}' (observations: {', '.join(OBSERVATIONS)})")
        if self.schedule is None:
            raise LtError("error: call reset() before observe()")
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
            return np.minimum([min(c, self.max_loops - 1), lt.loop_size(loops[c]), lt.loop_tail(loops[c])], SIZE_BOUND).astype(np.int64)
        if name in MEASURED_OBSERVATIONS:
            measured = self._measure()
            if measured is None:
                raise LtError(f"error: the schedule cannot be measured: {plain(self._measure_error)}")
            runtime, gflops = measured
            return np.array([runtime if name == "runtime" else gflops], dtype=np.float64)
        if name == "5_prev_actions_tensor":  # LoopTune's: row 0 the newest action
            out = np.zeros((5, len(self.actions)), dtype=np.float32)
            for row, a in enumerate(reversed(self.previous[-5:])):
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

    def _observation(self):
        if self.single:
            return self.observe(self.observation_names[0])
        return {name: self.observe(name) for name in self.observation_names}

    def _info(self, refused: str | None) -> dict:
        info = {"action_names": list(self.actions), "steps": self.steps, "size_mode": self.size_mode, "uri": self.benchmark.uri,
                "action_had_no_effect": refused is not None}
        if refused is not None:
            info["refused"] = refused
        if self.want_mask:
            info["action_mask"] = self.action_mask().copy()
        if self.reward_kind:
            info["gflops"] = self._last[1]
            info["speedup"] = self._last[1] / self._start_gflops if self._start_gflops else 1.0  # over the start schedule
            info["repeat"] = self.repeat
        return info

    # ------------------------------------------------------------ measurement
    def _measure(self) -> tuple[float, float] | None:
        """(median seconds, GFLOP/s) of the current schedule, from the
        evaluator (the bound kernel timed in a child process, within the
        env's time ``limits``); None when it cannot be measured (the reason
        in ``_measure_error``).  A schedule is measured again on each of
        its first ``remeasure`` visits, its figure the median of those
        measurements (one noisy figure is not kept for the env's life),
        then kept.  The env keeps the last ``MEASURED`` schedules'."""
        text = self.schedule.text
        seen = self._measured.get(text)
        if seen is not None:
            self._measured.move_to_end(text)
            if len(seen[2]) >= self.remeasure:
                return seen[:2]
        program = self._program()
        if program[0] is None:
            program[0] = Evaluator(self.benchmark.text, self.benchmark.entry, self.target, limits=self.limits,
                                   seed=self.input_seed, samples=self.repeat, min_sample_s=2e-4, budget_s=0.05, baseline=False,
                                   spare=True)  # the step after one abandoned at a limit needs no fresh process
        m = program[0].measure(text)
        if not m.ok or m.correct is False:
            if seen is not None:  # measured before: a later run past the time limit keeps the figures it has
                return seen[:2]
            self._measure_error = m.error if not m.ok else f"error: the schedule computes other numbers than the start: {m.mismatch}"
            return None
        runtimes = (seen[2] if seen is not None else ()) + (m.runtime_s,)
        runtime = statistics.median(runtimes)
        self._measured[text] = (runtime, self.schedule.flops() / runtime / 1e9, runtimes)
        while len(self._measured) > MEASURED:
            self._measured.popitem(last=False)
        return self._measured[text][:2]

    def _annotated_tree(self) -> str:
        lines = []
        for line in self.observe("loop_tree").splitlines():
            mark = ""
            if f": L{self.cursor}" in line and (line.endswith(f": L{self.cursor}") or f": L{self.cursor} [" in line):
                mark = "  <-- cursor" + (" (size mode)" if self.size_mode and self.action_space_name in ("simple", "split") else "")
            lines.append(line + mark)
        return "\n".join(lines)


_OPTIONS = ("benchmark", "action_space", "observations", "reward", "max_loops", "peak_gflops", "repeat", "action_mask",
            "render_mode", "limits", "observation_space", "reward_space", "step_limit_s", "seed", "keep_programs", "remeasure")


def _peak_from_environment() -> float:
    """LoopTune's normalisation: the peak GFLOP/s in ``MAX_GFLOPS``."""
    value = os.environ.get("MAX_GFLOPS", "")
    try:
        peak = float(value)
    except ValueError:
        peak = 0.0
    if not peak > 0:
        raise LtError("error: reward 'normalized' divides by the peak GFLOP/s: give peak_gflops= or set MAX_GFLOPS "
                      "(LoopTune's variable)" + (f", not '{value}'" if value else ""))
    return peak


def _check_reference(env: LoopToolEnv, outputs: list) -> str:
    """'' when ``outputs`` match the benchmark's NumPy reference on the env's inputs."""
    specs = signature(find_function(env.schedule.parsed.operation, env.benchmark.entry))
    inputs = random_inputs(specs, env.input_seed)
    expected = np.asarray(env.benchmark.reference(*inputs))
    got = np.asarray(outputs[-1])
    if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(expected).max(initial=0)))):
        return "the program's outputs differ from the benchmark's NumPy reference"
    return ""
