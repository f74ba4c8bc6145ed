"""lt_mlir.search: every strategy on a small program with measurement
replaced by a cost function (deterministic under a seed), the cost model,
the log and --resume, the lt-tune command and lt_mlir.tune on a tensor.
The measuring backends (processes, Ray, dying workers) are
tests/test_search_measure.py."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.env import LoopToolEnv
from lt_mlir.moves import try_move
from lt_mlir.schedule import Schedule
from lt_mlir.search import space
from lt_mlir.search.cli import main, tune
from lt_mlir.search.measure import Measurer, Result, allowed_cpus
from lt_mlir.search.model import CostModel
from lt_mlir.search.model import target as cost_model_target
from lt_mlir.search.tune import STRATEGIES, Candidate, Tuner

TEXT = programs.matmul(16, 16, 32)
# N = 64 is wider than one register tile with AVX2 (24) and AVX-512 (48)
# lanes, so register_tile packs B (lt.cache) on either host.
WIDE = programs.matmul(16, 64, 32)


def cost(text: str) -> float:
    """A made-up speedup: parallel and vectorized loops pay, size does not."""
    return 1.0 + 0.6 * text.count("lt.parallel") + 0.4 * text.count("lt.vectorize") + 0.05 * text.count("lt.unroll")


class FakeMeasurer(Measurer):
    def __init__(self):
        self.measured = []

    def measure(self, texts, codes=None):
        self.measured += texts
        return [Result(t, 1e-3 / cost(t), 1e-3, cost(t), True, "fake") for t in texts]

    def close(self):
        pass


def _cand(*moves):
    """A candidate made from TEXT by ``moves``."""
    ms = [space.Move.parse(m) for m in moves]
    return Candidate(ms, space.replay(Schedule(TEXT), ms, "cpu"))


def search(strategy, seed=0, budget=24, model=True, log=None, resume=None):
    m = FakeMeasurer()
    tuner = Tuner(Schedule(TEXT), m, budget=budget, use_model=model, log_path=log)
    if resume:
        tuner.resume(resume)
    tuner.open_log({"start": TEXT})
    STRATEGIES[strategy](tuner, np.random.default_rng(seed), 1)
    tuner.close()
    return tuner, m


@pytest.mark.parametrize("strategy", sorted(set(STRATEGIES) - {"policy"}))  # the policy searches nothing: tests/test_policy.py
def test_each_strategy_improves_within_budget_and_is_deterministic(strategy):
    tuner, m = search(strategy)
    assert 0 < len(tuner.evaluations) <= 24
    assert len(set(m.measured)) == len(m.measured)  # nothing measured twice
    assert tuner.best.score >= 1.6, (strategy, tuner.best.pipeline)  # found a parallel loop at least
    # the best schedule is what its pipeline says, and computes the same numbers
    replayed = Schedule(TEXT)
    for element in tuner.best.pipeline[len("builtin.module("):-1].split(", "):
        replayed.apply(element)
    assert str(replayed.module) == str(Schedule(tuner.best.text).module)  # same IR (locations aside)
    A = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    B = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    np.testing.assert_allclose(lt_mlir.compile(tuner.best.text)(A, B), A @ B, rtol=1e-4, atol=1e-4)
    again, m2 = search(strategy)
    assert m2.measured == m.measured  # deterministic under a seed
    other, m3 = search(strategy, seed=1)
    assert m3.measured != m.measured or strategy in ("beam", "greedy", "lookahead")  # those start deterministic


def test_moves_are_the_environments_actions():
    s = Schedule(TEXT)
    got = space.neighbours(s)
    assert got and all(isinstance(m, space.Move) for m, _ in got)
    move, after = next((m, t) for m, t in got if m.kind == "parallel")
    assert "[parallel]" in after.loop_tree and after.pipeline.endswith(f"lt-parallel{{loop={move.loop}}})")
    assert try_move(s, space.Move("split", 0, 1024)) is None  # refused: no candidate
    assert str(space.Move.parse("split_4@L2")) == "split_4@L2" and space.Move.parse("split_4@L2") == space.Move("split", 2, 4)
    # the environment's extended actions are the search's moves, name for name
    env = LoopToolEnv(TEXT, "extended", reward=None)
    names = {str(space.Move(kind, None, arg)) for kind, arg in space.search_moves("cpu")}
    assert names == set(env.actions) - {"up", "down"}


def test_cost_model_learns_to_rank():
    model = CostModel()
    rng = np.random.default_rng(0)
    schedules = []
    s = Schedule(TEXT)
    for _ in range(40):
        step = space.random_move(s if rng.random() < 0.7 else Schedule(TEXT), rng)
        if step:
            s = step[1]
            schedules.append(s)
    for s in schedules[:30]:
        model.add(space.feature_vector(s), cost(s.text))
    model.fit()
    test = schedules[30:]
    predicted = model.predict([space.feature_vector(s) for s in test])
    actual = np.log([cost(s.text) for s in test])
    assert np.corrcoef(predicted, actual)[0, 1] > 0.7


def test_log_and_resume(tmp_path):
    log = str(tmp_path / "tune.jsonl")
    first, m1 = search("random", budget=10, log=log)
    lines = [json.loads(x) for x in open(log)]
    assert "header" in lines[0] and len(lines) == 11
    assert {"moves", "pipeline", "text", "speedup", "worker", "correct", "elapsed_s"} <= set(lines[1])
    second, m2 = search("random", budget=20, log=log, resume=log)
    assert len(second.evaluations) == 20 and len(m2.measured) == 10  # only the new ten measured
    assert not set(m2.measured) & set(m1.measured)
    assert len(open(log).read().splitlines()) == 21
    assert second.best.score >= first.best.score
    with pytest.raises(lt_mlir.LtError, match="another program"):
        t = Tuner(Schedule(programs.matmul(8, 8, 8)), FakeMeasurer())
        t.resume(log)
    with open(log, "a") as fh:
        fh.write('{"index": 20, "moves": ["par')  # killed mid-write: the cut line is dropped
    third = Tuner(Schedule(TEXT), FakeMeasurer())
    third.resume(log)
    assert len(third.evaluations) == 20


def test_log_header_names_the_program_the_target_and_the_host(tmp_path):
    import hashlib
    import os

    from lt_mlir.lowering.machine import cpu_target

    log = tmp_path / "tune.jsonl"
    search("random", budget=2, log=str(log))
    header = json.loads(log.read_text().splitlines()[0])["header"]
    # the program as printed without locations: the same whatever file or spelling it came from
    assert header["program"] == hashlib.sha256(Schedule(TEXT).file_text.encode()).hexdigest()
    assert header["target"] == "cpu"
    host = cpu_target()
    assert header["host"]["cpu"] == host.cpu and header["host"]["cores"] == os.cpu_count()
    assert set(header["host"]["features"].split(",")) == set(host.features.split(","))


def _logged_by_another(path, **changes) -> None:
    """A log whose header is this search's with ``changes`` (host fields as ``cpu=``/``cores=``)."""
    identity = Tuner(Schedule(TEXT), FakeMeasurer()).identity
    for key, value in changes.items():
        (identity["host"] if key in ("cpu", "cores", "features") else identity)[key] = value
    path.write_text(json.dumps({"header": identity}) + "\n")


@pytest.mark.parametrize("changes, named", [
    ({"program": "0" * 64}, "another program: sha256 000000000000 in the log"),
    ({"target": "cuda"}, "another target: cuda in the log, cpu here"),
    ({"cpu": "pentium4"}, "another host CPU: pentium4 in the log"),
    ({"cores": 4096}, "another host core count: 4096 in the log"),
    ({"features": "+sse2"}, "other host CPU features"),
])
def test_a_log_of_another_search_is_neither_resumed_nor_appended_to(tmp_path, changes, named):
    log = tmp_path / "other.jsonl"
    _logged_by_another(log, **changes)
    tuner = Tuner(Schedule(TEXT), FakeMeasurer(), log_path=str(log))
    with pytest.raises(lt_mlir.LtError, match=f"cannot resume from .*{named}"):
        tuner.resume(str(log))
    with pytest.raises(lt_mlir.LtError, match=f"--log .* records another search .*{named}"):
        tuner.open_log({})
    assert len(log.read_text().splitlines()) == 1  # untouched


def test_lt_tune_command(tmp_path, capsys):
    out, log, png = tmp_path / "best.mlir", tmp_path / "t.jsonl", tmp_path / "t.png"
    code = main(["matmul:16,16,32", "--strategy", "random", "--budget", "6", "--quiet", "-o", str(out), "--log", str(log), "--plot", str(png)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "best:" in printed and "pipeline: builtin.module(" in printed
    records = [json.loads(line) for line in open(log).read().splitlines()]
    assert out.exists() and png.stat().st_size > 1000 and len(records) in (7, 8)  # header, 6 evaluations, the finalists
    final = [r["final"] for r in records if "final" in r]
    assert len(records) == 7 + len(final) and all(f["remeasured_speedup"] is None or f["remeasured_speedup"] > 0 for f in sum(final, []))
    A = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    B = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    np.testing.assert_allclose(lt_mlir.compile(out.read_text())(A, B), A @ B, rtol=1e-4, atol=1e-4)
    assert main(["nosuch:1,2", "--quiet"]) == 1
    assert capsys.readouterr().err.startswith("lt-tune: error: cannot read 'nosuch:1,2'")
    assert main(["matmul:16,16,32", "--workers", "many", "--quiet"]) == 1


def test_tune_a_tensor_keeps_the_best_schedule():
    s = lt_mlir.SymbolGenerator()
    A = np.random.default_rng(2).standard_normal((16, 64)).astype(np.float32)
    c = (lt_mlir.Tensor(A).to(s.m, s.k)).sum(s.k)
    result = tune(c, strategy="greedy", budget=8)
    assert result.evaluations <= 8 and result.speedup >= 1.0
    assert c.loop_tree == result.schedule.loop_tree
    np.testing.assert_allclose(c.numpy(), A.sum(1), rtol=1e-4, atol=1e-4)


def test_recipe_seeds_are_the_recipes_schedules_as_replayable_moves():
    """evolution starts from ``recipes.register_tile``'s variants: each a
    move sequence that replays from the start to the same module, and
    that computes the product; a nest no recipe takes gives no seed."""
    from lt_mlir.search.tune import recipe_seeds

    start = Schedule(WIDE)
    seeds = recipe_seeds(start)
    assert len(seeds) >= 4 and len({c.schedule.key for c in seeds}) == len(seeds)
    assert any("lt.cache" in c.text for c in seeds) and any("lt.parallel" in c.text for c in seeds)
    # the default rows and the larger tiles of register_tile_shapes, for the target's width
    from lt_mlir.recipes import default_rows, register_tile_shapes
    from lt_mlir.targets import get_target

    width = get_target("cpu").vector_width(4)
    splits = {str(m) for c in seeds for m in c.moves}
    rows = {int(m.split("@")[0][len("split_"):]) for m in splits if m.startswith("split_")}
    assert {default_rows(width)} | {r for r, _ in register_tile_shapes(width)} <= rows
    A = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    B = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)
    for c in seeds:
        again = space.replay(start, c.moves)
        assert again is not None and again.key == c.schedule.key
    for c in seeds[:2]:
        np.testing.assert_allclose(lt_mlir.compile(c.text)(A, B), A @ B, rtol=1e-4, atol=1e-4)
    assert recipe_seeds(Schedule(programs.softmax(8, 3))) == []  # rows shorter than any vector
    rows = recipe_seeds(Schedule(programs.softmax(8, 64)))  # vector_loops: each pass over a row one vector loop
    assert [str(m).split("_")[0] for m in rows[0].moves] == ["vectorize"] * 3
    assert [str(m).split("_")[0] for m in rows[1].moves] == ["vectorize"] * 3 + ["parallel"]


def test_evolution_on_a_gpu_target_starts_from_the_shared_memory_tiles():
    """On a GPU target evolution's seeds are ``gpu_tiled_matmul``'s tiles
    as moves that replay on that target (a seed list of another shape once
    stopped ``lt-tune --target cuda`` before its first measurement), and
    the search runs; a seed computes the product (emulated)."""
    from lt_mlir import recipes
    from lt_mlir.search.tune import _GPU_TILES, recipe_seeds

    start = Schedule(programs.matmul(64, 64, 64))
    seeds = recipe_seeds(start, "cuda-emulated")
    assert len(seeds) == len(_GPU_TILES) and len({c.schedule.key for c in seeds}) == len(seeds)
    assert seeds[0].schedule.key == recipes.gpu_tiled_matmul(start.copy(), **_GPU_TILES[0]).key
    for c in seeds:
        assert space.replay(start, c.moves, "cuda-emulated").key == c.schedule.key
    A = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    B = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(lt_mlir.compile(seeds[0].text, target="cuda-emulated")(A, B), A @ B, rtol=1e-4, atol=1e-4)
    m = FakeMeasurer()
    tuner = Tuner(start, m, budget=8, use_model=False, target="cuda-emulated")
    STRATEGIES["evolution"](tuner, np.random.default_rng(0), 1)
    assert [c.text for c in seeds] == m.measured[: len(seeds)] and len(tuner.evaluations) == 8


def test_recipe_seeds_tile_an_imported_convolutions_channels():
    """An imported convolution (the form torch's conv2d takes in lt) gets
    ``channel_tile``'s schedules as seeds, one core and all, each a move
    sequence that replays to the same module and computes the convolution."""
    from lt_mlir.importers.linalg import import_linalg
    from lt_mlir.search.tune import recipe_seeds

    text = """
func.func @main(%x: tensor<1x2x6x34xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x4x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x4x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x4x32xf32>) -> tensor<1x6x4x32xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
       ins(%x, %w : tensor<1x2x6x34xf32>, tensor<6x2x3x3xf32>) outs(%f : tensor<1x6x4x32xf32>) -> tensor<1x6x4x32xf32>
  return %y : tensor<1x6x4x32xf32>
}
"""
    start = Schedule(import_linalg(text).text)
    seeds = [c for c in recipe_seeds(start) if any(str(m).startswith("unroll") for m in c.moves)]
    assert len(seeds) == 2 and sum("lt.parallel" in c.text for c in seeds) == 1, [c.moves for c in seeds]
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((1, 2, 6, 34)).astype(np.float32), rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    ref = sum(np.einsum("oc,cyx->oyx", W[:, :, a, b].astype(np.float64), X[0, :, a : a + 4, b : b + 32]) for a in range(3) for b in range(3))
    for c in seeds:
        again = space.replay(start, c.moves)
        assert again is not None and again.key == c.schedule.key
        np.testing.assert_allclose(lt_mlir.compile(c.text)(X, W)[0], ref, rtol=1e-4, atol=1e-4)


def test_evolution_measures_the_seeds_first_and_keeps_the_best_of_them():
    """With a measure that rewards only the packed register tile (lt.cache),
    evolution's first batch holds the seeds, so its best is a seed's
    schedule or better after one batch."""
    class TileMeasurer(FakeMeasurer):
        def measure(self, texts, codes=None):
            self.measured += texts
            return [Result(t, 1e-3, 1e-3, 3.0 if "lt.cache" in t else 1.0, True, "fake") for t in texts]

    tuner = Tuner(Schedule(WIDE), TileMeasurer(), budget=16)
    STRATEGIES["evolution"](tuner, np.random.default_rng(0), 1)
    assert tuner.best is not None and tuner.best.score == 3.0 and tuner.best.index < 16
    assert "lt.cache" in tuner.best.text


class _Reversed:
    """A ready model that ranks candidates in reverse order of arrival."""

    ready = True

    def predict(self, xs):
        return np.arange(len(xs), dtype=float)

    def rank(self, xs):
        return np.arange(len(xs))[::-1]

    def add(self, x, speedup, group=None):
        pass

    def fit(self):
        pass


def test_measure_keeps_the_models_pick_and_explores_a_quarter_at_random(tmp_path):
    """``Tuner.measure(keep=4, explore=0.25)``: three of the model's top
    four and one candidate from the rest; the batch's Spearman between the
    model's scores and the measured speedups is logged."""
    s = Schedule(TEXT)
    cands = [Candidate([m], t) for m, t in space.neighbours(s)][:12]
    log = str(tmp_path / "t.jsonl")

    class Distinct(FakeMeasurer):  # no two speedups alike: the batch has a ranking
        def measure(self, texts, codes=None):
            self.measured += texts
            return [Result(t, 1e-3, 1e-3, 1.0 + len(self.measured) / 10 + i / 100, True, "fake") for i, t in enumerate(texts)]

    tuner = Tuner(s, Distinct(), budget=100, log_path=log)
    tuner.open_log({})
    tuner.model = _Reversed()
    tuner.measure(cands, keep=4, explore=0.25, rng=np.random.default_rng(0))
    measured = tuner.measurer.measured
    ranked = [c.text for c in reversed(cands)]
    assert len(measured) == 4 and measured[:3] == ranked[:3] and measured[3] in ranked[4:]
    tuner.close()
    records = [json.loads(line) for line in open(log)]
    batch = [r for r in records if "spearman" in r]
    assert len(batch) == 1 and batch[0]["n"] == 4 and -1.0 <= batch[0]["spearman"] <= 1.0
    assert tuner.batch_spearman == [batch[0]["spearman"]]


def test_the_hand_schedules_reach_the_final_even_when_the_search_underrates_them():
    """A search figure is one noisy timing: evolution's recipe seeds are
    re-measured with the finalists whatever they scored, and a seed that
    the re-measure finds fastest wins."""
    from lt_mlir.search.cli import _final

    class Skewed(FakeMeasurer):  # the search sees register tiles (unrolled) at 1.1x; the re-measure the packed ones at 5x
        def measure(self, texts, codes=None):
            self.measured += texts
            return [Result(t, 1e-3, 1e-3, 1.1 if "lt.unroll" in t else cost(t), True, "fake") for t in texts]

        def remeasure(self, texts, rounds=5):
            return [Result(t, 1e-3, 1e-3, 5.0 if "lt.cache" in t else 1.1 if "lt.unroll" in t else cost(t), True, "fake")
                    for t in texts]

    tuner = Tuner(Schedule(WIDE), Skewed(), budget=40, use_model=False)
    STRATEGIES["evolution"](tuner, np.random.default_rng(0), 1)
    assert tuner.anchors and max(tuner.known[t].score for t in tuner.anchors) < tuner.best.score  # underrated
    winner, speedup, remeasured = _final(tuner, tuner.measurer, 4)
    assert winner.text in tuner.anchors and speedup == 5.0 and len(remeasured) == 6


def test_hand_schedules_close_to_the_best_figure_are_finalists_too():
    """Beyond the two best hand schedules, any other within 10% of the
    best search figure is re-measured (a hand tile one noisy timing ranked
    third among them can still win); one further off is not."""
    from types import SimpleNamespace

    from lt_mlir.search.cli import _final

    figures = {"a": 3.0, "b": 2.9, "h1": 2.8, "h2": 2.75, "h3": 2.72, "h4": 2.0}
    evaluations = [SimpleNamespace(index=i, text=t, score=f) for i, (t, f) in enumerate(figures.items())]
    tuner = SimpleNamespace(evaluations=evaluations, anchors={"h1", "h2", "h3", "h4"}, best=evaluations[0],
                            _write=lambda record: None)

    class Remeasure:
        asked: list = []

        def remeasure(self, texts, rounds=5):
            self.asked = list(texts)
            return [Result(t, 1e-3, 1e-3, 4.0 if t == "h3" else 1.5, True, "fake") for t in texts]

    m = Remeasure()
    winner, speedup, _ = _final(tuner, m, 2)
    assert m.asked == ["a", "b", "h1", "h2", "h3"] and winner.text == "h3" and speedup == 4.0


def test_a_hand_schedule_within_the_tie_of_the_best_re_measured_is_named():
    """A finalist re-measured less than ``HAND_TIE`` ahead of a hand
    schedule is not named over it (below the re-measure's resolution); one
    further ahead is."""
    from types import SimpleNamespace

    from lt_mlir.search.cli import HAND_TIE, _final

    figures = {"a": 3.0, "b": 2.9, "h1": 2.8, "h2": 2.7}
    evaluations = [SimpleNamespace(index=i, text=t, score=f) for i, (t, f) in enumerate(figures.items())]
    tuner = SimpleNamespace(evaluations=evaluations, anchors={"h1", "h2"}, best=evaluations[0], _write=lambda record: None)

    class Remeasure:
        def __init__(self, again):
            self.again = again

        def remeasure(self, texts, rounds=5):
            return [Result(t, 1e-3, 1e-3, self.again[t], True, "fake") for t in texts]

    close = {"a": 2.0, "b": 1.9, "h1": 2.0 * (1 - HAND_TIE / 2), "h2": 2.0 * (1 - HAND_TIE / 4)}
    winner, speedup, _ = _final(tuner, Remeasure(close), 2)
    assert winner.text == "h2" and speedup == close["h2"]  # the faster of the two hand schedules within the tie
    far = {"a": 2.0, "b": 1.9, "h1": 2.0 * (1 - 2 * HAND_TIE), "h2": 1.5}
    winner, speedup, _ = _final(tuner, Remeasure(far), 2)
    assert winner.text == "a" and speedup == 2.0


def test_the_ir_model_ranks_candidates_by_what_their_ir_executes(tmp_path):
    """``use_model="ir"`` (``lt-tune --model ir``): the tuner's features are
    each candidate's ``space.ir_feature_vector`` against the start, the
    model the IR one; a target without host code refuses it in one line."""
    tuner, m = search("evolution", budget=12, model="ir")
    assert tuner.ir and tuner.model is not None and not tuner.model.problem
    assert all(len(x) == len(space.IR_FEATURE_NAMES) for x in tuner._features.values())
    assert len(m.measured) == 12 and tuner.best is not None
    with pytest.raises(lt_mlir.LtError, match="--model ir reads the host code's LLVM IR; target 'cuda'"):
        Tuner(Schedule(TEXT), FakeMeasurer(), target="cuda", use_model="ir")
    log = tmp_path / "t.jsonl"
    assert main(["matmul:16,16,32", "--model", "ir", "--budget", "6", "--quiet", "--log", str(log)]) == 0
    header = json.loads(open(log).readline())["header"]
    assert header["model"] == "ir" and header["distinct_code"] is True


def test_the_default_model_is_the_irs_on_the_cpu_and_the_lt_ones_elsewhere(tmp_path):
    """``model="auto"`` (``tune``'s and lt-tune's default): the IR's model
    where the target makes host code, measuring each code once; the lt
    features' pre-trained model on a target that makes none (CUDA)."""
    cpu = Tuner(Schedule(TEXT), FakeMeasurer(), use_model="auto")
    assert cpu.use_model == "ir" and cpu.ir and cpu.distinct and type(cpu.model.base).__name__ == "CycleEstimate"
    cuda = Tuner(Schedule(TEXT), FakeMeasurer(), target="cuda", use_model="auto")
    assert cuda.use_model is True and not cuda.ir and not cuda.distinct and type(cuda.model.base).__name__ != "CycleEstimate"
    assert len(cuda.features(cuda.start)) == len(space.FEATURE_NAMES)
    log = tmp_path / "t.jsonl"
    assert main(["matmul:16,16,32", "--budget", "4", "--quiet", "--log", str(log)]) == 0
    header = json.loads(open(log).readline())["header"]
    assert header["model"] == "ir" and header["distinct_code"] is True
    log = tmp_path / "lt.jsonl"
    assert main(["matmul:16,16,32", "--model", "lt", "--budget", "4", "--quiet", "--log", str(log)]) == 0
    header = json.loads(open(log).readline())["header"]
    assert header["model"] is True and header["distinct_code"] is False


@pytest.mark.skipif(len(allowed_cpus()) < 2, reason="one CPU: --model ir lowers its candidates in the search's own process")
def test_the_ir_models_lowering_processes_count_what_this_process_counts():
    """``--model ir`` lowers a batch's candidates on processes of its own
    (``Lowerers``, one a CPU): their code keys and IR features are what
    lowering here gives; a process that dies is replaced and its job given
    to the new one."""
    moves = [("split_2@L0",), ("unroll@L2",), ("swap_down@L1",), ("split_4@L0", "unroll@L3"), ("split_8@L1",), ("swap_down@L0",),
             ("split_2@L1", "unroll@L3"), ("split_4@L1",)]
    pooled = Tuner(Schedule(TEXT), FakeMeasurer(), budget=10, use_model="ir")
    here = Tuner(Schedule(TEXT), FakeMeasurer(), budget=10, use_model="ir")
    try:
        first = [_cand(*m).schedule for m in moves[:4]]
        pooled._prelower(first)
        assert pooled._pool is not None and all(s.text in pooled._features for s in first)
        pool = pooled._pool
        pool.children[0].process.kill()
        pool.children[0].process.wait()
        rest = [_cand(*m).schedule for m in moves[4:]]
        pooled._prelower(rest)
        assert pooled._pool is pool and pool.deaths == 1 and pool.crashed == [] and not pooled._pool_broken
        for s in first + rest:
            np.testing.assert_allclose(pooled.features(s), here.features(s), err_msg=s.text)
            assert pooled._code[s.text] == here._code[s.text] is not None
    finally:
        pooled.close()
        here.close()
    assert pool.children == []


@pytest.mark.skipif(len(allowed_cpus()) < 2, reason="one CPU: --model ir lowers its candidates in the search's own process")
def test_a_candidate_whose_lowering_crashes_is_ranked_a_failure_and_logged(monkeypatch, tmp_path):
    """A candidate that kills the process lowering it twice (a crash in
    LLVM: ``$LT_LOWER_DIE_ON``) is ranked as a failure, logged with its
    schedule, and the search goes on; the others are lowered right."""
    cands = [_cand(*m) for m in [("split_2@L0",), ("swap_down@L1",), ("split_4@L1",), ("split_8@L1",), ("swap_down@L0",)]]
    victim = cands[2]
    marker = next(line for line in victim.text.splitlines() if all(line not in c.text for c in cands if c is not victim))
    monkeypatch.setenv("LT_LOWER_DIE_ON", marker)
    log = str(tmp_path / "t.jsonl")
    tuner = Tuner(Schedule(TEXT), FakeMeasurer(), budget=10, use_model="ir", log_path=log)
    here = Tuner(Schedule(TEXT), FakeMeasurer(), budget=10, use_model="ir")
    try:
        tuner.open_log({"start": TEXT})
        tuner._prelower([c.schedule for c in cands])
        assert tuner._pool.crashed == [victim.text] and tuner._pool.deaths == 2 and not tuner._pool_broken
        assert np.isnan(tuner.features(victim.schedule)).all() and tuner._code[victim.text] is None
        assert tuner.model.predict([tuner.features(victim.schedule)])[0] == cost_model_target(None)
        for c in cands:
            if c is not victim:
                np.testing.assert_allclose(tuner.features(c.schedule), here.features(c.schedule))
    finally:
        tuner.close()
        here.close()
    crashed = [json.loads(x) for x in open(log) if "lowering_crashed" in x]
    assert [d["text"] for d in crashed] == [victim.text] and crashed[0]["lowering_crashed"]


@pytest.mark.skipif(len(allowed_cpus()) < 2, reason="one CPU: --model ir lowers its candidates in the search's own process")
def test_a_candidate_whose_lowering_takes_too_long_is_ranked_a_failure_and_logged(monkeypatch, tmp_path):
    """A candidate the lowering processes spend longer than the compile
    limit on (``$LT_LOWER_HANG_ON``: one never answers) is ranked as a
    failure and logged, its process replaced, the job not tried again;
    the batch waits no longer than the limit, and the others lower right."""
    cands = [_cand(*m) for m in [("split_2@L0",), ("swap_down@L1",), ("split_4@L1",), ("split_8@L1",), ("swap_down@L0",)]]
    victim = cands[3]
    marker = next(line for line in victim.text.splitlines() if all(line not in c.text for c in cands if c is not victim))
    monkeypatch.setenv("LT_LOWER_HANG_ON", marker)
    log = str(tmp_path / "t.jsonl")
    tuner = Tuner(Schedule(TEXT), FakeMeasurer(), budget=10, use_model="ir", log_path=log, lower_limit_s=3.0)
    here = Tuner(Schedule(TEXT), FakeMeasurer(), budget=10, use_model="ir")
    try:
        tuner.open_log({"start": TEXT})
        tuner._start_ir()
        t0 = time.monotonic()
        tuner._prelower([c.schedule for c in cands])
        waited = time.monotonic() - t0
        assert 3.0 <= waited < 20.0, waited
        assert tuner._pool.timed_out == [victim.text] and tuner._pool.crashed == [] and tuner._pool.deaths == 0
        assert np.isnan(tuner.features(victim.schedule)).all() and tuner._code[victim.text] is None
        for c in cands:
            if c is not victim:
                np.testing.assert_allclose(tuner.features(c.schedule), here.features(c.schedule))
        again = [_cand("split_2@L0", "split_4@L2"), _cand("split_8@L0", "swap_down@L1"), _cand("split_16@L1"), _cand("split_2@L1", "swap_down@L0")]
        tuner._prelower([c.schedule for c in again])  # the replaced process lowers
        assert tuner._pool.timed_out == [victim.text] and all(not np.isnan(tuner.features(c.schedule)).all() for c in again)
    finally:
        tuner.close()
        here.close()
    slow = [json.loads(x) for x in open(log) if "lowering_timed_out" in x]
    assert [d["text"] for d in slow] == [victim.text] and slow[0]["lowering_timed_out"]


def test_a_script_without_a_main_guard_is_not_run_again(tmp_path):
    """The lowering processes start with ``python -c`` (as the measuring
    ones do): a user's script that tunes at its top level, with no ``if
    __name__ == "__main__"``, runs once."""
    import subprocess
    import sys

    script = tmp_path / "tune_me.py"
    script.write_text(
        "print('ran', flush=True)\n"
        "from lt_mlir.search import tune as T\n"
        "made = T.Lowerers.__init__\n"
        "T.Lowerers.__init__ = lambda self, *a: (print('lowerers', flush=True), made(self, *a))[1]\n"
        "from lt_mlir.search.cli import main\n"
        f"main(['matmul:16,16,32', '--model', 'ir', '--budget', '8', '--quiet', '--no-db', '--log', {str(tmp_path / 'l.jsonl')!r},"
        f" '-o', {str(tmp_path / 'o.mlir')!r}, '--plot', {str(tmp_path / 'p.png')!r}])\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("ran") == 1
    if len(allowed_cpus()) >= 2:
        assert out.stdout.count("lowerers") == 1


def _code_groups():
    """Candidates of TEXT by which code the host's LLVM makes of them (which
    splits it folds back is its to say: found here, not assumed): one with
    the start's code, three or more with one code of their own, and one
    whose code no other has."""
    from lt_mlir.lowering.ir_counts import code_key

    pool = [_cand(*m) for m in [("split_2@L0",), ("unroll@L2",), ("split_4@L0", "unroll@L3"), ("split_8@L0", "unroll@L3"), ("split_4@L0",),
                                ("split_8@L0",), ("unroll@L3",), ("split_2@L1",), ("swap_down@L1",), ("swap_down@L0",), ("split_4@L1",)]]
    pool = [c for c in pool if c.schedule is not None]  # the moves that apply
    start_key = code_key(space.optimized_ir(Schedule(TEXT))[0])
    groups: dict = {}
    for c in pool:
        groups.setdefault(code_key(space.optimized_ir(c.schedule)[0]), []).append(c)
    same_as_start = groups[start_key][0] if start_key in groups else None
    twins = next((g for k, g in groups.items() if k != start_key and len(g) >= 3), None)
    other = next((g[0] for k, g in groups.items() if k != start_key and len(g) == 1), None)
    assert None not in (same_as_start, twins, other), "LLVM here folds none of these splits back"
    return same_as_start, twins, other


@pytest.mark.parametrize("model, distinct", [("ir", None), (False, True), (True, True)])
def test_each_code_is_measured_once(model, distinct):
    """With ``--model ir``, or ``--distinct-code`` with any model or none,
    a candidate whose optimised code (``code_key``) is the start's scores
    1.0 unmeasured, and of candidates sharing their code one is measured
    and the others score as it: on this matmul most splits are folded back
    by LLVM (which ones, the host's LLVM says)."""
    same_as_start, twins, other = _code_groups()
    twin_a, twin_b, twin_c = twins[:3]
    m = FakeMeasurer()
    tuner = Tuner(Schedule(TEXT), m, budget=10, use_model=model, distinct_code=distinct)
    scores = dict((c.text, sc) for c, sc in tuner.measure([same_as_start, twin_a, twin_b, other]))
    assert len(m.measured) == 2 and other.text in m.measured and len(tuner.evaluations) == 2 and tuner.same_code == 2
    measured_twin = next(t for t in m.measured if t != other.text)
    assert measured_twin in (twin_a.text, twin_b.text)
    assert scores[same_as_start.text] == 1.0 and scores[twin_a.text] == scores[twin_b.text] == cost(measured_twin)
    tuner.measure([twin_c])  # the twins' code again: free
    assert len(m.measured) == 2 and tuner.same_code == 3
    tuner.close()
    if model == "ir":
        searched, measured = search("evolution", budget=16, model="ir")
        keys = [searched._code[t] for t in measured.measured if t in searched._code]
        assert len(keys) == len(set(keys)) and searched.same_code > 0


@pytest.mark.parametrize("model, distinct", [(False, None), ("ir", False)])
def test_without_distinct_code_every_candidate_is_measured(model, distinct):
    """The default without ``--model ir`` (no candidate is lowered before it
    is measured), or --no-distinct-code: twins, and a candidate with the
    start's code, are each measured."""
    m = FakeMeasurer()
    tuner = Tuner(Schedule(TEXT), m, budget=10, use_model=model, distinct_code=distinct)
    tuner.measure([_cand("split_2@L0"), _cand("unroll@L2"), _cand("split_4@L0", "unroll@L3")])
    assert len(m.measured) == 3 and tuner.same_code == 0 and bool(tuner._code) == (model == "ir")
    with pytest.raises(lt_mlir.LtError, match="--distinct-code compares the host code's LLVM IR; target 'cuda'"):
        Tuner(Schedule(TEXT), m, target="cuda", use_model=False, distinct_code=True)


def test_a_resumed_search_measures_no_code_again(tmp_path):
    """A measured candidate's code key is logged (``code``), so a resumed
    search with --distinct-code does not measure a twin of it."""
    log = str(tmp_path / "t.jsonl")
    m = FakeMeasurer()
    first = Tuner(Schedule(TEXT), m, budget=10, use_model=False, distinct_code=True, log_path=log)
    first.open_log({"start": TEXT})
    _, twins, _ = _code_groups()
    first.measure([twins[0]])
    first.close()
    assert json.loads(open(log).read().splitlines()[1])["code"] == first._code[m.measured[0]]
    again = FakeMeasurer()
    second = Tuner(Schedule(TEXT), again, budget=10, use_model=False, distinct_code=True, log_path=log)
    second.resume(log)
    (_, score), = second.measure([twins[1]])
    assert again.measured == [] and second.same_code == 1 and score == cost(m.measured[0])

def test_lt_tune_distinct_code_without_a_model(tmp_path, capsys):
    """``lt-tune --no-model --distinct-code``: the log's header says so, no
    two measured evaluations have one code, and what was not measured is
    counted."""
    from lt_mlir.lowering.ir_counts import code_key

    log = tmp_path / "t.jsonl"
    assert main(["matmul:16,16,32", "--no-model", "--distinct-code", "--budget", "10", "--quiet", "--log", str(log), "--no-db",
                 "-o", str(tmp_path / "o.mlir"), "--plot", str(tmp_path / "p.png")]) == 0
    lines = [json.loads(x) for x in open(log)]
    assert lines[0]["header"]["distinct_code"] is True and lines[0]["header"]["model"] is False
    texts = [d["text"] for d in lines[1:] if "moves" in d]
    keys = [code_key(space.optimized_ir(Schedule(t))[0]) for t in texts]
    assert 0 < len(texts) <= 10 and len(keys) == len(set(keys))


def test_the_measurer_compiles_from_the_ir_the_ranking_lowered(monkeypatch):
    """Under ``--model ir`` every ranked candidate is lowered and optimised
    for the model; a measurer on this host gets that IR with the text
    (only code generation left in it), the IR of that very text, and the
    results are right.  A measurer with other options gets none."""
    from lt_mlir.lowering.ir_counts import code_key
    from lt_mlir.search.measure import LocalMeasurer, make_measurer

    seen = []
    real = LocalMeasurer.measure

    def recording(self, texts, codes=None):
        seen.append((list(texts), codes))
        return real(self, texts, codes)

    monkeypatch.setattr(LocalMeasurer, "measure", recording)
    m = make_measurer(WIDE, repeat=3, min_sample_s=1e-4)
    tuner = Tuner(Schedule(WIDE), m, budget=16, use_model="ir")
    try:
        STRATEGIES["evolution"](tuner, np.random.default_rng(0), 1)
        assert tuner._reuse_code
        handed = [(t, c) for texts, codes in seen if codes for t, c in zip(texts, codes) if c is not None]
        assert handed, "no batch was handed its IR"
        for text, code in handed:
            assert code_key(code) == tuner._code[text] == code_key(space.optimized_ir(Schedule(text), "cpu")[0])
        assert all(e.correct and not e.error for e in tuner.evaluations)
    finally:
        tuner.close()
        m.close()
    other = make_measurer(WIDE, repeat=3, min_sample_s=1e-4)
    other.config = type(other.config)(type(other.config.bench)(**{**other.config.bench.__dict__, "options": lt_mlir.CompileOptions(opt=2)}),
                                      other.config.limits)
    assert not Tuner(Schedule(WIDE), other, budget=1, use_model="ir")._reuse_code
    other.close()
