"""``Model``: an imported model as a callable, with its module, loop tree,
``Schedule`` and ``optimize()``.

The imported module (``linalg.import_linalg``: one nest per op, every value
in a buffer) gets the kernel frontend's redundancy-aware schedule
(``kernel.fusion.schedule``): producers fused into the nests that read them
where that computes each element once (``lt-fuse``: an element-wise chain,
a ``Linear``'s bias and ReLU into its matmul), nests over the same rows
merged, scratch buffers shrunk, outer loops parallel and inner loops
vectorized where the passes accept it.  That is ``model.start``;
``lt.set_default_schedule("tuned")`` gives a model the schedule the
tuning database holds for it, and ``model.optimize()`` searches
(``lt_mlir.search``) and records its winner there.

A call takes NumPy arrays or torch CPU tensors (the model's inputs, in
order), checks their shapes and dtypes, binds the weights and returns
NumPy arrays, or torch tensors when given torch tensors.
"""

from __future__ import annotations

import numpy as np

from .. import tuning
from ..compiler import compile as compile_module
from ..errors import ArgumentError
from ..frontend import default_hardware, default_schedule
from ..kernel import fusion
from ..schedule import Schedule
from ..targets import get_target
from .linalg import Imported


class Model:
    """An imported model: ``model(*inputs)`` runs it."""

    def __init__(self, imported: Imported, name: str = "model", target: str | None = None, fuse: bool = True,
                 parallel: bool = True, vectorize: bool = True):
        self.imported = imported
        self.name = name
        self.target = get_target(target or default_hardware()).name
        self.unfused = Schedule(imported.text)
        width = 1
        if vectorize and self.target == "cpu":
            sizes = [a.dtype.itemsize for a in imported.outputs] or [4]
            width = get_target("cpu").vector_width(min(sizes))
        strategy = "redundancy-aware" if fuse else "none"
        gpu = get_target(self.target).gpu_mapping
        self.start, _ = fusion.schedule(imported.text, list(imported.owners), set(), strategy,
                                        parallel=parallel and not gpu, width=width, sparse=False)
        if gpu:
            self.start.gpu_auto()  # every nest's parallel loops to blocks and threads
        self.schedule = self.start.copy()
        if default_schedule() == "tuned":
            entry = tuning.lookup(self.start.text, self.target)
            if entry is not None:
                self.schedule = Schedule(entry.schedule)
        self._kernel = None
        self._key = None

    # ------------------------------------------------------------ what it is
    @property
    def module(self) -> str:
        """The lt module of the current schedule (without locations)."""
        return self.schedule.file_text

    @property
    def loop_tree(self) -> str:
        return self.schedule.loop_tree

    @property
    def arguments(self) -> list:
        return self.imported.arguments

    @property
    def inputs(self) -> list:
        return self.imported.inputs

    @property
    def weights(self) -> list:
        return self.imported.weights

    @property
    def outputs(self) -> list:
        return self.imported.outputs

    def __repr__(self) -> str:
        sig = ", ".join(f"{a.name}: {a.element}{list(a.shape)}" for a in self.inputs)
        return f"<lt_mlir.Model {self.name}({sig}), {len(self.weights)} weights, {self.schedule.loops()} loops>"

    # ------------------------------------------------------------ running
    def compile(self):
        """The compiled kernel of the current schedule (cached until the schedule changes)."""
        key = self.schedule.key
        if self._kernel is None or key != self._key:
            self._kernel = compile_module(self.schedule.module, target=self.target)
            self._key = key
        return self._kernel

    def __call__(self, *inputs):
        specs = self.inputs
        if len(inputs) != len(specs):
            raise ArgumentError(f"{self.name} takes {len(specs)} input(s) "
                                f"({', '.join(a.name for a in specs)}); got {len(inputs)}")
        torch_out = False
        arrays = []
        for a, x in zip(specs, inputs):
            if type(x).__module__.startswith("torch"):
                if getattr(x, "device", None) is not None and str(x.device) != "cpu":
                    raise ArgumentError(f"{self.name} input '{a.name}': a tensor on {x.device}; lt_mlir models run on CPU tensors")
                torch_out = True
                x = x.detach().numpy()
            x = np.asarray(x)
            if x.shape != tuple(a.shape):
                raise ArgumentError(f"{self.name} input '{a.name}': expected shape {tuple(a.shape)}, got {x.shape}")
            if x.dtype != a.dtype:
                raise ArgumentError(f"{self.name} input '{a.name}': expected dtype {a.dtype}, got {x.dtype}")
            arrays.append(np.ascontiguousarray(x))
        kernel = self.compile()
        out = kernel(*arrays, *[w.data for w in self.weights])
        outs = out if isinstance(out, tuple) else (out,)
        if torch_out:
            import torch

            outs = tuple(torch.from_numpy(o) for o in outs)
        return outs[0] if len(outs) == 1 else outs

    # ------------------------------------------------------------ tuning
    def optimize(self, budget: int = 300, seconds: float | None = None, strategy: str = "evolution", workers=1, **options):
        """Search schedules of the model (``lt_mlir.search``, from the
        default schedule), keep the best and record it in the tuning
        database; returns the ``TuneResult``."""
        from ..search.cli import remember, tune

        options.setdefault("target", self.target)
        result = tune(self.start, strategy, budget, seconds, workers, **options)
        remember(result, strategy)
        self.schedule = result.schedule.copy()
        return result
