"""Random host-loop kernels: a differential check of ``lt_mlir.kernel``'s
host loops in one kernel (``kernel/hostloop.py``).

Each program is a kernel whose body holds a ``for _ in range(steps)`` or a
counted ``while it < steps: ...; it += k`` loop of array statements drawn at
random (element-wise operations, broadcasting, reductions to a number, a
dense and a CSR matrix-vector product, two or three carried values, one
of them sometimes 2-D), each wrapped in ``np.tanh`` so values stay bounded
over the iterations.  It runs as a kernel and as the same Python function
on NumPy/SciPy arrays, twice (the second call, other values of the same
kinds, replays the first's kernels); results (and a ``while`` loop's
counter) must agree.

    python -m lt_mlir.testing.hostloop_programs --programs 100 --seed 0
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np

HEADER = """import numpy as np
from lt_mlir.kernel import kernel, Array, CSR, float64


"""


# the expressions a step draws from: {0}, {1} sub-expressions, {c} a number
TEMPLATES = (
    "np.tanh({0})", "np.exp(-np.abs({0}))", "({0} + {1})", "({0} - {c} * {1})", "({0} * {1})",
    "({0} / (1.0 + np.abs({1})))", "np.maximum({0}, {1})", "((M @ {0}) / n)", "(S @ {0})", "((M.T @ {0}) / n)",
    "({0} - np.max({0}))", "({0} - np.mean({0}))", "(lr * {0} / (1.0 + np.sum(np.abs({1}))))",
)


def _expr(rng, depth: int, vectors: list, matrices: list) -> str:
    """A 1-D expression of length n over ``vectors`` (and the 2-D ``matrices`` reduced to vectors)."""
    if depth <= 0 or rng.random() < 0.25:
        leaf = str(rng.choice(vectors + ["a", "b"]))
        if matrices and rng.random() < 0.3:
            z = str(rng.choice(matrices))
            leaf = f"np.sum({z}, axis={int(rng.integers(2))})"  # n x n: either axis gives n
        return leaf
    template = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
    parts = [_expr(rng, depth - 1, vectors, matrices) for _ in range(2 if "{1}" in template else 1)]
    return template.format(*parts, c=f"{float(rng.uniform(-1, 1)):.3f}")


def source(seed: int) -> tuple[str, dict]:
    """The module text of program ``seed`` (a kernel ``f``) and its facts."""
    rng = np.random.default_rng([seed, 2026])
    names = ["x", "y", "z"][: int(rng.integers(1, 4))]
    matrices = ["z"] if "z" in names and rng.random() < 0.5 else []
    vectors = [v for v in names if v not in matrices]
    if not vectors:
        vectors, matrices = ["x"], []
        names = ["x"]
    while_loop = bool(rng.random() < 0.5)
    step = int(rng.integers(1, 4))
    lines = ["@kernel", "def f(M: Array(float64, 2), S: CSR(float64), a: Array(float64, 1), b: Array(float64, 1), lr: float, steps: int):",
             "    n = a.shape[0]"]
    for v in vectors:
        lines.append(f"    {v} = np.tanh(a * {float(rng.uniform(0.2, 1.5)):.3f} + b)")
    for m in matrices:
        lines.append(f"    {m} = np.tanh(a[:, None] * b[None, :])")
    body = []
    order = list(names) + [str(rng.choice(names)) for _ in range(int(rng.integers(0, 2)))]
    rng.shuffle(order)
    for v in order:
        if v in matrices:
            body.append(f"{v} = np.tanh(0.5 * {v} + {_expr(rng, 2, vectors, [])}[:, None] * {_expr(rng, 1, vectors, [])}[None, :])")
        else:
            body.append(f"{v} = np.tanh({_expr(rng, 3, vectors, matrices)})")
    indent = "        "
    if while_loop:
        lines += ["    it = 0", "    while it < steps:"] + [indent + s for s in body] + [indent + f"it += {step}"]
        lines.append(f"    return {', '.join(names)}, it")
    else:
        lines += ["    for _ in range(steps):"] + [indent + s for s in body]
        lines.append(f"    return {', '.join(names)}")
    return HEADER + "\n".join(lines) + "\n", {"while": while_loop, "names": names}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(seed: int, folder: Path, steps: int | None = None) -> dict:
    """Run program ``seed`` as a kernel and as NumPy, twice (the second
    call, with other values of the same kinds, replays the first's
    kernels); AssertionError if they differ.  Returns ``{"trips",
    "launches", "steps", "replayed"}`` (of the first call)."""
    import scipy.sparse as sp

    text, facts = source(seed)
    path = Path(folder) / f"hostloop_{seed}.py"
    path.write_text(text)
    f = _load(path, f"hostloop_{seed}").f
    rng = np.random.default_rng(seed)
    n = int(rng.choice([5, 17, 33]))
    M = rng.standard_normal((n, n))
    S = sp.random(n, n, density=0.3, format="csr", random_state=seed)
    S.sum_duplicates()
    S.sort_indices()
    S = sp.csr_array(S)
    steps = int(rng.integers(0, 10)) if steps is None else steps
    facts = {}
    for call in ("traced", "replayed"):  # the second call, same kinds of arguments, other values: replayed
        a, b = rng.standard_normal(n), rng.standard_normal(n)
        S = S.copy()
        S.data[:] = rng.standard_normal(S.nnz)
        args = (M * (1.0 if call == "traced" else 0.5), S, a, b, 0.3, steps)
        got, ref = f(*args), f.fn(*args)
        got, ref = (got if isinstance(got, tuple) else (got,)), (ref if isinstance(ref, tuple) else (ref,))
        for g, r in zip(got, ref):
            if isinstance(r, int):
                assert g == r, f"program {seed} ({call}): the counter ends at {g}, Python's at {r}\n{text}"
            else:
                np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-9, atol=1e-12, err_msg=f"program {seed} ({call}), {steps} steps\n{text}")
        facts.setdefault("trips", f.trips)
        facts.setdefault("launches", f.launches)
    facts["steps"], facts["replayed"] = steps, bool(f._replays)
    return facts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--programs", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    taken = replayed = 0
    with tempfile.TemporaryDirectory() as folder:
        sys.path.insert(0, folder)
        for seed in range(args.seed, args.seed + args.programs):
            try:
                got = check(seed, Path(folder))
            except AssertionError as e:
                print(f"FAIL {e}")
                return 1
            taken += got["trips"] > 0
            replayed += got["replayed"]
    print(f"{args.programs} programs agree with NumPy; {taken} ran their loop's steady iterations in one kernel, "
          f"{replayed} were replayed on their second call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
