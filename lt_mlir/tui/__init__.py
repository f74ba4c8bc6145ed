"""``lt-ui``, the terminal UI: ``session.py`` the model (a Schedule with a
cursor, the moves, code views, live benchmark), ``app.py`` the Textual view
and the ``lt-ui`` command.  ``lt_mlir.ui(x, path)`` starts it."""
