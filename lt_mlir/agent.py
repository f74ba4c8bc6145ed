"""The cursor agent: named actions on a schedule with a selected loop, as
CompilerGym's ``loop_tool`` environment and LoopTune define them, and the
trained policy that chooses them.  ``lt_mlir.env`` (the Gymnasium
environment), ``lt-tune --strategy policy`` and the UI's suggest key all
step through ``act`` and ask ``Policy``: one copy of the semantics.

Action spaces (``ACTION_SPACES``; ``action_names(space, target)``):

* ``simple`` (CompilerGym's): ``toggle_mode``, ``up``, ``down``,
  ``toggle_thread``.  In select mode ``up`` moves the cursor inward (the
  next loop in pre-order) and ``down`` outward, both wrapping around; in
  size mode (the start mode) they resize the cursor's level by one
  iteration, taken from or given to its parent (``lt-resize``).
* ``split``: ``simple`` plus ``split`` (``lt-split`` by 2).
* ``looptune`` (LoopTune's): ``up`` (the previous -- outer -- loop in
  pre-order), ``down`` (the next), ``swap_up``, ``swap_down`` (the swapped
  loop carries the cursor), ``split_4``, ``split_8``, ``split_16`` (the
  cursor stays on the outer part).
* ``extended``: LoopTune's cursor and every search move of
  ``lt_mlir.moves`` for the target.
* ``recipes``: ``extended`` plus the documented hand schedules of
  ``lt_mlir.recipes`` as actions on the whole program, each one undoable
  step (``RECIPE_ACTIONS``: ``register_tile``, ``vector_rows``,
  ``vector_loops``, ``channel_tile``, ``row_tile`` (4 rows), each also
  ``_parallel``, at the target's vector width; ``gpu_tiled_matmul`` on a
  GPU).  A recipe that
  refuses the program is a refused action, the program unchanged; one
  applied again tiles the next contraction it takes.

A ``Policy`` is a small multilayer perceptron over ``policy_features`` of
the state (``loops_tensor``, log-scaled), trained with sb3-contrib's
``MaskablePPO`` by ``examples/train_env.py`` and stored as NumPy arrays
(``lt_mlir/data/policy.npz``): running it needs NumPy only, and no
measurement -- it reads the program, not timings.  A policy may also have
learnt to stop (``STOP``, its last action, always allowed): it ends its
run there, with fewer than its steps, where it expects no action of its
space to pay (the environment's spaces have no such action: it is the
policy's, as LoopTune's episodes of fixed length leave it out).
"""

from __future__ import annotations

import heapq
import os
import re

import numpy as np

from . import recipes
from .analysis import features
from .dialect import lt
from .dialect.loop_tree import preorder_loops
from .errors import LtError
from .moves import Move, action, apply_move, search_moves
from .schedule import Schedule
from .targets import get_target

SIMPLE = ["toggle_mode", "up", "down", "toggle_thread"]
LOOPTUNE = ["up", "down", "swap_up", "swap_down", "split_4", "split_8", "split_16"]
ACTION_SPACES = {
    "simple": SIMPLE,
    "split": SIMPLE + ["split"],
    "looptune": LOOPTUNE,
    # the cursor, then every search move of lt_mlir.moves for the CPU (a registered move kind joins it)
    "extended": ["up", "down", *[str(Move(kind, None, arg)) for kind, arg in search_moves("cpu")]],
}
# recipe actions: name -> (the recipe, parallel); CPU ones, then the GPU's
RECIPE_ACTIONS = {
    "register_tile": (recipes.register_tile, False), "register_tile_parallel": (recipes.register_tile, True),
    "vector_rows": (recipes.vector_rows, False), "vector_rows_parallel": (recipes.vector_rows, True),
    "vector_loops": (recipes.vector_loops, False), "vector_loops_parallel": (recipes.vector_loops, True),
    "channel_tile": (recipes.channel_tile, False), "channel_tile_parallel": (recipes.channel_tile, True),
    "row_tile": (recipes.row_tile, False), "row_tile_parallel": (recipes.row_tile, True),
    "gpu_tiled_matmul": (recipes.gpu_tiled_matmul, None),
}
ACTION_SPACES["recipes"] = ACTION_SPACES["extended"] + [name for name, (_, par) in RECIPE_ACTIONS.items() if par is not None]
COMPILERGYM_SPACES = ("simple", "split")
_LOCATION = re.compile(r"^\S*?:\d+(?::\d+)?: ")  # "<string>:6:3: " or "/home/me/x.py:12:5: " before "error:"


def plain(message: str) -> str:
    """A refusal without the location of the program's source (the user's
    file or ``<string>``): an agent learns from the pass's words."""
    return _LOCATION.sub("", message.strip(), count=1)


def action_names(space: str, target="cpu") -> list:
    """The actions of ``space`` on ``target``, in their index order."""
    if space not in ACTION_SPACES:
        raise LtError(f"error: unknown action space '{space}' (spaces: {', '.join(ACTION_SPACES)})")
    t = get_target(target)
    if space in ("extended", "recipes"):
        out = ["up", "down", *[str(Move(kind, None, arg)) for kind, arg in search_moves(t)]]
        if space == "recipes":
            out += [name for name, (_, par) in RECIPE_ACTIONS.items() if _for_target(par, t)]
        return out
    return list(ACTION_SPACES[space])


def act(schedule: Schedule, cursor: int, size_mode: bool, name: str, space: str, target) -> tuple:
    """Action ``name`` on ``schedule`` (changed in place when it applies):
    (cursor, size_mode, None) after it, or (cursor, size_mode, why) when it
    is refused (``schedule`` unchanged)."""
    try:
        return _act(schedule, cursor, size_mode, name, space, get_target(target))
    except LtError as e:
        return cursor, size_mode, plain(str(e))


def _act(schedule, cursor, size_mode, name, space, target) -> tuple:
    n = len(preorder_loops(schedule.parsed.operation))
    if n == 0:
        return cursor, size_mode, "error: the program has no loops"
    c = min(cursor, n - 1)
    if name == "toggle_mode":
        return c, not size_mode, None
    compilergym = space in COMPILERGYM_SPACES
    if name in ("up", "down") and compilergym and not size_mode:
        # CompilerGym's select mode: up is inward, down outward, wrapping around
        return (c + (1 if name == "up" else -1)) % n, size_mode, None
    if name in ("up", "down") and not compilergym:
        # LoopTune's cursor: up to the previous (outer) loop in pre-order, down to the next
        to = c - 1 if name == "up" else c + 1
        if not 0 <= to < n:
            return c, size_mode, f"error: the cursor is on L{c}, the {'first (outermost)' if name == 'up' else 'last (innermost)'} loop"
        return to, size_mode, None
    if name in RECIPE_ACTIONS:
        _recipe(schedule, name, target)
        return min(c, len(preorder_loops(schedule.parsed.operation)) - 1), size_mode, None
    move = move_of(name, c, space)
    follow = apply_move(schedule, move, target)
    return (c if follow is None else follow), size_mode, None


def _for_target(parallel: bool | None, target) -> bool:
    """Whether a recipe action (``RECIPE_ACTIONS``' ``parallel``: None for a GPU's) is one of ``target``'s."""
    return (parallel is None) == bool(target.gpu_mapping)


def _recipe(schedule: Schedule, name: str, target) -> None:
    """Recipe action ``name`` on ``schedule``, as one undoable step; a
    refusal (``LtError``) leaves it unchanged."""
    recipe, parallel = RECIPE_ACTIONS[name]
    if not _for_target(parallel, target):
        raise LtError(f"error: {name} is a recipe for {'a GPU' if parallel is None else 'the CPU'}, not for {target.name}")
    if parallel is None:
        schedule.one_step(recipe)
    else:
        width = target.vector_width(lt.element_bytes(schedule.parsed.operation))
        schedule.one_step(lambda s: recipe(s, width=width, parallel=parallel))


def move_of(name: str, cursor: int, space: str) -> Move:
    """The move action ``name`` makes on loop ``cursor`` (an action that
    changes the program: not a cursor move, not ``toggle_mode``)."""
    if name in ("up", "down"):  # CompilerGym's size mode
        return Move("resize", cursor, 1 if name == "up" else -1)
    if name == "split":
        return Move("split", cursor, 2)
    kind, arg = action(name)
    return Move(kind, cursor, arg)


def changes_program(name: str, size_mode: bool, space: str) -> bool:
    """Whether action ``name`` acts on the program (else on the cursor or mode)."""
    if name == "toggle_mode":
        return False
    if name in ("up", "down"):
        return space in COMPILERGYM_SPACES and size_mode
    return True


def mask(schedule: Schedule, cursor: int, size_mode: bool, actions: list, space: str, target, step=None) -> np.ndarray:
    """int8 per action: 1 where it would have an effect now (it applies and
    changes the program, the cursor or the mode), 0 where it is refused or
    changes nothing (``parallel`` on a parallel loop).  Each is tried on a
    copy; ``schedule`` is unchanged.  ``step(schedule, cursor, size_mode,
    name)``: what makes an action, ``act`` in ``space`` on ``target`` by
    default (the environment's replays transitions it made before)."""
    out = np.zeros(len(actions), dtype=np.int8)
    for i, *_ in effects(schedule, cursor, size_mode, actions, space, target, step):
        out[i] = 1
    return out


def effects(schedule: Schedule, cursor: int, size_mode: bool, actions: list, space: str, target, step=None) -> list:
    """[(index, the schedule after it, its cursor, its mode)] for each of
    ``actions`` that would have an effect now (``mask``'s 1s), each made on
    a copy."""
    if step is None:
        def step(s, c, m, name):
            return act(s, c, m, name, space, target)
    out, here = [], schedule.key
    for i, name in enumerate(actions):
        trial = schedule.copy()
        moved, mode, refused = step(trial, cursor, size_mode, name)
        if refused is None and (moved != cursor or mode != size_mode or trial.key != here):
            out.append((i, trial, moved, mode))
    return out


# ------------------------------------------------------------ the policy

POLICY_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "policy.npz")
POLICY_LOOPS = 12  # rows of loops_tensor the policy reads
STOP = "stop"  # a policy's last action when it was trained to end its episode (train_env.py --stop)
STOPPED = "the policy stops here: it expects no action to make this schedule faster"


def policy_features(schedule: Schedule, cursor: int, max_loops: int = POLICY_LOOPS) -> np.ndarray:
    """What the policy sees: ``loops_tensor`` (cursor, size, tail, depth,
    annotations, stride histogram per loop) with every entry log-scaled
    (``log2(1 + x)``: sizes from 1 to 10^4 and weighted stride counts to
    10^8 as numbers a network takes), flattened."""
    return policy_transform(features.loops_tensor(schedule.parsed, cursor, max_loops))


def policy_transform(loops_tensor: np.ndarray) -> np.ndarray:
    return np.log2(1.0 + np.maximum(np.asarray(loops_tensor, dtype=np.float32), 0.0)).reshape(-1)


class Policy:
    """A trained policy: ``choose`` picks the action with the highest
    logit among those the mask allows; ``run`` takes up to ``steps`` of
    them from a schedule.  ``path``: an ``.npz`` written by
    ``Policy.save`` (``examples/train_env.py``); default the shipped one."""

    def __init__(self, path: str | None = None):
        path = path or POLICY_PATH
        if not os.path.exists(path):
            raise LtError(f"error: no trained policy at {path} (examples/train_env.py trains and saves one)")
        try:
            data = np.load(path, allow_pickle=False)
            self.layers = [(data[f"w{i}"], data[f"b{i}"]) for i in range(int(data["depth"]))]
            self.actions = [str(a) for a in data["actions"]]
            self.space = str(data["space"])
            self.max_loops = int(data["max_loops"])
            self.meta = {k: str(data[k]) for k in data.files if k.startswith("meta_")}
        except (KeyError, ValueError, OSError) as e:
            raise LtError(f"error: {path} is not a policy saved by Policy.save: {e}") from None
        self.path = path
        self.stops = self.actions[-1:] == [STOP]  # it learnt to end its episode
        self.moves = self.actions[:-1] if self.stops else self.actions  # the actions of its space, in the space's order

    @staticmethod
    def save(path: str, layers: list, actions: list, space: str, max_loops: int, **meta) -> None:
        """Write ``layers`` [(weight [in, out], bias [out])] (tanh between
        them, the last gives the action logits) and what they act on."""
        arrays = {f"w{i}": np.asarray(w, np.float32) for i, (w, _) in enumerate(layers)}
        arrays.update({f"b{i}": np.asarray(b, np.float32) for i, (_, b) in enumerate(layers)})
        arrays.update(depth=np.array(len(layers)), actions=np.array(actions), space=np.array(space), max_loops=np.array(max_loops))
        arrays.update({f"meta_{k}": np.array(str(v)) for k, v in meta.items()})
        np.savez_compressed(path, **arrays)

    @classmethod
    def export(cls, model, path: str, actions: list, space: str, max_loops: int = POLICY_LOOPS, **meta) -> "Policy":
        """Write the actor of a Stable-Baselines3 / sb3-contrib PPO ``model``
        (an ``MlpPolicy`` with tanh layers, the default) as NumPy arrays at
        ``path``, and load it: its hidden layers and the action head."""
        import torch  # the rl extra; only training needs it

        net = model.policy.mlp_extractor.policy_net
        if any(isinstance(m, torch.nn.Module) and not isinstance(m, (torch.nn.Linear, torch.nn.Tanh)) for m in net):
            raise LtError("error: the policy network has layers other than Linear and Tanh: Policy runs those only")
        layers = [m for m in net if isinstance(m, torch.nn.Linear)] + [model.policy.action_net]
        arrays = [(m.weight.detach().cpu().numpy().T, m.bias.detach().cpu().numpy()) for m in layers]
        if arrays[-1][1].shape[0] != len(actions):
            raise LtError(f"error: the policy network chooses among {arrays[-1][1].shape[0]} actions, not the {len(actions)} named")
        cls.save(path, arrays, actions, space, max_loops, **meta)
        return cls(path)

    def logits(self, x: np.ndarray) -> np.ndarray:
        h = np.asarray(x, np.float32)
        for i, (w, b) in enumerate(self.layers):
            h = h @ w + b
            if i < len(self.layers) - 1:
                h = np.tanh(h)
        return h

    def choose(self, schedule: Schedule, cursor: int, allowed: np.ndarray) -> int | None:
        """The action index to take (None when nothing is allowed).
        ``allowed``: the space's mask (``STOP``, when the policy has it, is
        then allowed), or one entry an action of the policy's."""
        allowed = np.asarray(allowed)
        if self.stops and len(allowed) == len(self.moves):
            allowed = np.append(allowed, 1)
        if not allowed.any():
            return None
        scores = self.logits(policy_features(schedule, cursor, self.max_loops))
        scores = np.where(allowed.astype(bool), scores, -np.inf)
        return int(np.argmax(scores))

    def step(self, schedule: Schedule, cursor: int, size_mode: bool = True, target="cpu") -> tuple:
        """The policy's next action on ``schedule`` (changed in place):
        (its name, the cursor, the mode, None), or (None, cursor, mode, why
        nothing was done), or (``STOP``, cursor, mode, ``STOPPED``) where the
        policy ends its run.  A program move is one undoable step of the
        schedule."""
        allowed = mask(schedule, cursor, size_mode, self.moves, self.space, target)
        choice = self.choose(schedule, cursor, allowed)
        if choice is None:
            return None, cursor, size_mode, "error: the policy has no action that changes anything here"
        name = self.actions[choice]
        if name == STOP and self.stops:
            return STOP, cursor, size_mode, STOPPED
        cursor, size_mode, refused = act(schedule, cursor, size_mode, name, self.space, target)
        return name, cursor, size_mode, refused

    def run(self, schedule: Schedule, steps: int = 10, target="cpu", cursor: int = 0, states: list | None = None) -> tuple:
        """(the schedule after up to ``steps`` of the policy's actions, the
        action names taken, ``STOP`` last where it stopped).  A copy:
        ``schedule`` is unchanged.  ``states``: a list that gets (schedule,
        the moves that made it from ``schedule``) after each action that
        changed the program."""
        s, size_mode, trace = schedule.copy(), True, []
        made = len(s.moves or ())  # the moves that made ``schedule``; the states' are the ones after them
        for _ in range(steps):
            name, cursor, size_mode, refused = self.step(s, cursor, size_mode, target)
            if name is None:
                break
            trace.append(name)
            if name == STOP:
                break
            if refused is None and changes_program(name, size_mode, self.space) and states is not None and s.moves is not None:
                states.append((s.copy(), s.moves[made:]))
        return s, trace

    def search(self, schedule: Schedule, n: int, steps: int = 10, target="cpu", cursor: int = 0,
               expansions: int | None = None, min_probability: float = 1e-3) -> list:
        """``programs``' first ``n``, as a list."""
        return list(self.programs(schedule, n, steps, target, cursor, expansions, min_probability))

    def programs(self, schedule: Schedule, n: int, steps: int = 10, target="cpu", cursor: int = 0,
                 expansions: int | None = None, min_probability: float = 1e-3):
        """Up to ``n`` distinct programs the policy would make from
        ``schedule``, most preferred first, as (schedule, the moves that
        made it from ``schedule``) pairs: the states of ``run`` (its greedy
        choices), then those of the other runs of at most ``steps``
        actions in order of their probability under the policy (the
        softmax of its logits over the allowed actions, ``STOP`` included;
        the product along a run), found best first.  A run's action less
        likely than ``min_probability`` is not followed; at most
        ``expansions`` states (default ``4 * n + steps``) are expanded, each
        costing one mask (every action tried on a copy).  Nothing is
        measured: a strategy measures them (``lt-tune --strategy policy``),
        where one policy's greedy run misses what its next choice would
        find.  A generator: each program comes as soon as it is found, so
        a caller measures the first while the rest are still to find."""
        seen = {schedule.key}
        states: list = []
        found = 0
        self.run(schedule, steps, target, cursor, states=states)
        for s, moves in states:
            if s.key not in seen and found < n:
                seen.add(s.key)
                found += 1
                yield s, moves
        made = len(schedule.moves or ())
        budget = 4 * n + steps if expansions is None else expansions
        heap = [(0.0, 0, schedule.copy(), cursor, True, 0)]  # (-log probability, order, schedule, cursor, size mode, actions taken)
        order, expanded = 1, set()
        while heap and found < n and budget > 0:
            cost, _, s, c, mode, depth = heapq.heappop(heap)
            if s.key not in seen:
                seen.add(s.key)
                if s.moves is not None:
                    found += 1
                    yield s, s.moves[made:]
            if depth >= steps or (s.key, c, mode) in expanded:
                continue
            expanded.add((s.key, c, mode))
            budget -= 1
            children = effects(s, c, mode, self.moves, self.space, target)
            if not children:
                continue
            allowed = np.zeros(len(self.moves), bool)
            allowed[[i for i, *_ in children]] = True
            logits = self.logits(policy_features(s, c, self.max_loops))
            if self.stops:
                allowed = np.append(allowed, True)
            logits = np.where(allowed, logits, -np.inf)
            logp = logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
            for i, trial, moved, new_mode in children:
                if min_probability <= 0 or logp[i] >= np.log(min_probability):
                    heapq.heappush(heap, (cost - float(logp[i]), order, trial, moved, new_mode, depth + 1))
                    order += 1
