"""The programs an environment optimises, as CompilerGym names them.

``benchmark://loop_tool-cpu-v0/N`` and ``benchmark://loop_tool-cuda-v0/N``
are CompilerGym's pointwise add of N elements (1 <= N < 8 * 2**20), its
start state three levels ``[(N, 0), (1, 0), (1, 0)]`` with the outer one
threaded (``lt-parallel`` on the CPU, GPU blocks on cuda).  The other
datasets (``matmul-v0``, ``clipped-matmul-v0``, ``conv2d-v0``,
``softmax-v0``) hold lt_mlir's reference programs at several sizes,
written ``benchmark://<dataset>/<size>`` with the size as ``AxBxC``.

A dataset is iterable (its benchmarks in order) and seedable
(``random_benchmark(rng)`` draws one), as users of CompilerGym's
``env.datasets`` expect.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .. import programs
from ..errors import LtError
from ..schedule import Schedule
from ..targets import get_target

POINTWISE_MAX = 8 * 2**20


@dataclass(frozen=True)
class Benchmark:
    """One program to optimise: its lt text (the start state) and target."""

    uri: str
    text: str
    target: str = "cpu"
    entry: str | None = None
    reference: Callable | None = field(default=None, compare=False)  # NumPy function of the inputs


def _pointwise(n: int, target: str) -> str:
    if not 1 <= n < POINTWISE_MAX:
        raise LtError(f"error: loop_tool's pointwise add takes 1 <= N < {POINTWISE_MAX}, got {n}")
    s = Schedule(programs.pointwise_add(n, blocks=[1, 1]))
    t = get_target(target)
    if t.gpu_mapping:
        s.gpu_map(0, "block")
    elif t.cpu_threads:
        s.parallel(0)
    return s.text


def _pointwise_dataset(target: str, where: str, reference: Callable | None = None) -> "Dataset":
    """CompilerGym's ``loop_tool-<target>-v0``: the outer level threaded ``where``."""
    return Dataset(
        f"loop_tool-{target}-v0",
        lambda s: _pointwise(s[0], target),
        [(1,), (64,), (1000,), (1024,), (4096,), (65536,), (1 << 20)],
        target,
        f"CompilerGym's pointwise add, N elements, three levels, the outer one on {where}",
        reference,
    )


@dataclass
class Dataset:
    """Benchmarks of one program family; ``sizes`` in iteration order."""

    name: str  # benchmark://<name>
    make: Callable[[tuple], str]
    sizes: list
    target: str = "cpu"
    description: str = ""
    reference: Callable | None = None

    @property
    def uri(self) -> str:
        return f"benchmark://{self.name}"

    @property
    def arity(self) -> int:
        """How many numbers a size of this dataset has (``AxBxC``: 3)."""
        return len(self.sizes[0])

    def benchmark(self, size) -> Benchmark:
        size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
        if len(size) != self.arity or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in size):
            example = "x".join(map(str, self.sizes[0]))
            raise LtError(f"error: {self.uri} takes a size of {self.arity} whole number{'s' if self.arity > 1 else ''} "
                          f"({self.description or 'its dims'}), e.g. {self.uri}/{example}; got {'x'.join(map(str, size))}")
        if any(x < 1 for x in size):
            raise LtError(f"error: {self.uri}: sizes are positive, got {'x'.join(map(str, size))}")
        text = self.make(tuple(int(x) for x in size))
        return Benchmark(f"{self.uri}/{'x'.join(map(str, size))}", text, self.target, reference=self.reference)

    def __iter__(self) -> Iterator[Benchmark]:
        for size in self.sizes:
            yield self.benchmark(size)

    def __len__(self) -> int:
        return len(self.sizes)

    def random_benchmark(self, rng: np.random.Generator | int | None = None) -> Benchmark:
        rng = np.random.default_rng(rng)
        return self.benchmark(self.sizes[int(rng.integers(len(self.sizes)))])


def _clipped_reference(a, b, *rest):
    return np.maximum(a[:, :, None] * b[None], 0).sum(1)


DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in [
        _pointwise_dataset("cpu", "CPU threads", lambda a, b: a + b),
        _pointwise_dataset("cuda", "GPU blocks"),
        Dataset(
            "matmul-v0",
            lambda s: programs.matmul(*s),
            [(16, 16, 16), (33, 48, 64), (64, 64, 64), (128, 128, 128), (256, 256, 256)],
            description="C[m, n] = sum_k A[m, k] B[k, n] (m, n, k)",
            reference=lambda a, b: a @ b,
        ),
        Dataset(
            "clipped-matmul-v0",
            lambda s: programs.matmul(*s, clipped=True),
            [(8, 16, 64), (33, 48, 256), (33, 48, 4096), (64, 64, 512)],
            description="the loop_tool blog's C[m, n] = sum_k max(A[m, k] B[k, n], 0) (m, n, k)",
            reference=_clipped_reference,
        ),
        Dataset(
            "conv2d-v0",
            lambda s: programs.conv2d(*s),
            [(3, 16, 16, 3, 3), (8, 32, 32, 3, 3), (16, 34, 34, 3, 3)],
            description="a 2D convolution over channels (c, h, w, kh, kw)",
        ),
        Dataset(
            "softmax-v0",
            lambda s: programs.softmax(*s),
            [(8, 64), (32, 256), (128, 1024)],
            description="row-wise softmax (m, n)",
        ),
        Dataset(
            "reduction-v0",
            lambda s: programs.row_sum(*s),
            [(64, 1024), (256, 256), (1024, 64)],
            description="S[m] = sum_n A[m, n] (m, n)",
            reference=lambda a: a.sum(1),
        ),
    ]
}

# What a policy trains on and what it is judged on (examples/train_env.py,
# benchmarks/bench_env.py): the same families at sizes never trained on.
TRAINING = [
    "matmul-v0/32x32x32", "matmul-v0/64x48x32", "matmul-v0/64x64x64", "matmul-v0/96x64x128", "matmul-v0/128x128x64",
    "clipped-matmul-v0/8x16x64", "clipped-matmul-v0/33x48x256", "clipped-matmul-v0/64x64x128",
    "conv2d-v0/3x16x16x3x3", "conv2d-v0/8x32x32x3x3",
    "softmax-v0/32x256", "softmax-v0/64x512",
    "reduction-v0/64x1024", "reduction-v0/256x256", "reduction-v0/512x128",
    # convolutions where vector_rows pays measurably (on the 1 us 3x16x16 it often measures 1.0x),
    # and row-wise programs large enough for the parallel variants to pay
    "conv2d-v0/6x24x24x3x3", "conv2d-v0/4x32x32x3x3", "conv2d-v0/8x20x20x3x3",
    "softmax-v0/96x512", "reduction-v0/128x1024",
    # contractions of the mid sizes where the parallel recipes start to pay, with rows vector_rows
    # refuses (wider than 8 vectors: register_tile's) and rows of vectors that are not a power of two
    "matmul-v0/64x96x96", "matmul-v0/48x80x128", "clipped-matmul-v0/40x56x128", "clipped-matmul-v0/56x24x256",
]
HELD_OUT = [
    "matmul-v0/80x96x64", "matmul-v0/160x128x96", "clipped-matmul-v0/48x40x192", "conv2d-v0/4x24x24x3x3",
    "softmax-v0/48x384", "reduction-v0/128x768",
    # a second size of every family (2026-12-02: six programs, two of them ties at random search's median,
    # told the policies apart too coarsely), the convolution one whose kernel is not a few microseconds of call
    "matmul-v0/112x80x144", "clipped-matmul-v0/72x32x160", "conv2d-v0/12x28x28x3x3", "softmax-v0/80x640", "reduction-v0/320x512",
]


_SHORT = re.compile(r"^[A-Za-z0-9_.-]+-v[0-9]+/[0-9x]+$")


def is_uri(text: str) -> bool:
    """Whether ``text`` names a benchmark: ``benchmark://<dataset>/<size>``,
    or CompilerGym's short form ``<dataset>/<size>`` (``loop_tool-cpu-v0/1024``)."""
    return text.startswith("benchmark://") or bool(_SHORT.match(text.strip()))


def benchmark(uri: str) -> Benchmark:
    """The benchmark a ``benchmark://<dataset>/<size>`` URI names (the
    scheme may be left out, as CompilerGym allows)."""
    prefix = "benchmark://"
    uri = uri.strip()
    if not uri.startswith(prefix) and _SHORT.match(uri):
        uri = prefix + uri
    if not uri.startswith(prefix) or "/" not in uri[len(prefix):]:
        raise LtError(f"error: bad benchmark URI '{uri}' (expected benchmark://<dataset>/<size>, e.g. benchmark://loop_tool-cpu-v0/1024)")
    name, size = uri[len(prefix):].rsplit("/", 1)
    if name not in DATASETS:
        raise LtError(f"error: unknown dataset '{name}' (datasets: {', '.join(DATASETS)})")
    try:
        dims = tuple(int(x) for x in size.split("x"))
    except ValueError:
        sizes = ", ".join("x".join(map(str, x)) for x in DATASETS[name].sizes)
        raise LtError(f"error: bad size '{size}' in '{uri}' (whole numbers, AxBxC; {name} lists {sizes})") from None
    return DATASETS[name].benchmark(dims)


class Datasets:
    """CompilerGym's ``env.datasets``: the datasets by name, iterable, and
    ``benchmark(uri)``."""

    def __iter__(self) -> Iterator[Dataset]:
        return iter(DATASETS.values())

    def __getitem__(self, name: str) -> Dataset:
        name = name.removeprefix("benchmark://")
        if name not in DATASETS:
            raise LtError(f"error: unknown dataset '{name}' (datasets: {', '.join(DATASETS)})")
        return DATASETS[name]

    def __len__(self) -> int:
        return len(DATASETS)

    def benchmark(self, uri: str) -> Benchmark:
        return benchmark(uri)
