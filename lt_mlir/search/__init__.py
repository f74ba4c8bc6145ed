"""lt_mlir.search: schedule search (``lt-tune``, ``lt_mlir.tune``).

A strategy proposes, a measurer measures, a log records:
``space.py`` the moves (the RL environment's extended actions, one pass
each) and the features, ``model.py`` the learned cost model, ``tune.py``
the tuner (budget, cache, log, resume) and the strategies (random, greedy,
lookahead, beam, evolution), ``measure.py`` the measurers (this process,
worker processes, Ray actors; scores are speedups over the start schedule
measured on the same worker), ``cli.py`` the command and ``tune()``.
"""
