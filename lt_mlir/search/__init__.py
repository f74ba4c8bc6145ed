"""lt_mlir.search: schedule search (``lt-tune``, ``lt_mlir.tune``, ``Tensor.optimize``).

A strategy proposes, a measurer measures, a log records:
``space.py`` the moves (the RL environment's extended actions, one pass
each) and the features, ``model.py`` the learned cost model, ``tune.py``
the tuner (budget, cache, log, resume) and the strategies (random, greedy,
lookahead, beam, evolution), ``measure.py`` the measurers (this process,
worker processes, Ray actors; scores are speedups over the start schedule
measured on the same worker), ``cli.py`` the command, ``tune()`` and
``optimize()``, which this package registers as the frontend's
``Tensor.optimize`` (the frontend sits below the search and cannot import it).
"""

from ..frontend import register_optimizer


def _optimize(tensor, **options):
    """``cli.optimize``, imported when first called (``python -m
    lt_mlir.search.cli`` must find cli.py not yet imported)."""
    from .cli import optimize

    return optimize(tensor, **options)


register_optimizer(_optimize)
