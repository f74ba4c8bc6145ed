"""``lt-ui``: optimise a loop nest by hand in the terminal (Textual).

A thin view over ``session.Session``: the loop tree with a cursor on the
left, the selected loop's facts under it, the code on the right, live
figures on top, the runtime of every schedule measured as a sparkline, the
schedule as a pipeline and a status line at the bottom.  Benchmarks run in
a worker thread; the figures say "measuring" while a new one runs.

    lt-ui matmul.mlir [-o out.mlir] [--entry NAME] [--target cpu|cuda|cuda-emulated]
    >>> lt_mlir.ui(tensor_or_schedule_or_module, path=None)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Sparkline, Static, TextArea

from ..errors import LtError, with_filename
from ..frontend import Tensor
from ..moves import action
from ..schedule import Schedule
from ..targets import TARGETS
from .session import CODE_VIEWS, Session

KEYS = [
    ("up / down", "move the cursor over loops and statements"),
    ("enter", "start / stop dragging: up and down then move the loop by swapping"),
    ("shift+up / shift+down", "swap the loop with the one around it / inside it"),
    ("s", "split the loop (asks the inner size)"),
    ("backspace", "merge the loop into the one before it (or its parent)"),
    ("v", "vectorize (asks the width; default: this CPU's vector width)"),
    ("n", "unroll (asks the factor; 0 = fully)"),
    ("p", "run the loop's iterations in parallel (CPU threads)"),
    ("g / G", "map the loop to GPU blocks or threads / map every nest automatically"),
    ("c", "cache an input of the loop's nest (asks which operand)"),
    ("d", "distribute the loop over the parts of its body"),
    ("m", "any move by name, on the loop: split_8, swap_down, unroll_4, resize_-1, uncache, gpu_auto_128 (lt_mlir.moves)"),
    ("u / r", "undo / redo (unbounded)"),
    ("tab", "next code view: lt, scf, llvm, asm, ptx"),
    ("P", "per-loop profile beside the tree (an instrumented build)"),
    ("w / W", "write the module to the path / an object + header (PTX + JSON for cuda)"),
    ("?", "this help"),
    ("q", "quit (writes the module if a path was given)"),
]


class Prompt(ModalScreen):
    """Asks one question; dismisses with the answer, or None on escape."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    Prompt { align: center middle; }
    Prompt > Vertical { width: 50; height: auto; border: round $accent; background: $panel; padding: 0 1; }
    """

    def __init__(self, question: str, default: str = ""):
        super().__init__()
        self.question, self.default = question, default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question)
            yield Input(value=self.default, id="answer")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Help(ModalScreen):
    """Every key, on any key closed."""

    DEFAULT_CSS = """
    Help { align: center middle; }
    Help > Static { width: 90; height: auto; border: round $accent; background: $panel; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        text = Text("lt-ui keys (any key closes)\n\n", style="bold")
        for key, what in KEYS:
            text.append(f"{key:>22}  ", style="bold cyan")
            text.append(what + "\n")
        yield Static(text, id="help")

    def on_key(self, event) -> None:
        event.stop()
        self.dismiss(None)


class LtUi(App):
    """The app; ``session`` holds every state worth keeping."""

    TITLE = "lt-ui"
    CSS = """
    #figures { height: 1; background: $boost; padding: 0 1; }
    #main { height: 1fr; }
    #left { width: 1fr; }
    #right { width: 1fr; }
    #tree-scroll { height: 1fr; border: round $primary; }
    #facts { height: auto; max-height: 6; border: round $primary; padding: 0 1; }
    #views { height: 1; padding: 0 1; }
    #code { height: 1fr; }
    #spark { height: 2; }
    #pipeline { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    #status { height: 1; background: $boost; padding: 0 1; }
    """
    BINDINGS = [
        Binding("up", "cursor(-1)", "up", show=False),
        Binding("down", "cursor(1)", "down", show=False),
        Binding("shift+up", "swap('up')", "swap up", show=False),
        Binding("shift+down", "swap('down')", "swap down", show=False),
        Binding("enter", "drag", "drag", show=False),
        Binding("s", "split", "split", show=False),
        Binding("backspace", "simple('merge')", "merge", show=False),
        Binding("v", "vectorize", "vectorize", show=False),
        Binding("n", "unroll", "unroll", show=False),
        Binding("p", "simple('parallel')", "parallel", show=False),
        Binding("g", "gpu_map", "GPU map", show=False),
        Binding("G", "simple('gpu_auto')", "GPU auto", show=False),
        Binding("c", "cache", "cache", show=False),
        Binding("d", "simple('distribute')", "distribute", show=False),
        Binding("m", "any_move", "any move", show=False),
        Binding("u", "undo", "undo", show=False),
        Binding("r", "redo", "redo", show=False),
        Binding("tab", "next_view", "code view", show=False, priority=True),
        Binding("P", "toggle_profile", "profile", show=False),
        Binding("w", "write", "write", show=False),
        Binding("W", "write_aot", "write object", show=False),
        Binding("question_mark", "help", "help", show=False),
        Binding("q", "quit_ui", "quit", show=False),
    ]

    def __init__(self, session: Session, on_exit=None, write_on_quit: bool = False):
        super().__init__()
        self.session = session
        self.on_exit = on_exit  # called with the session when the app quits
        self.write_on_quit = write_on_quit
        self.dragging = False
        self.show_profile = False
        self.profile = None  # (schedule text, LoopProfile)
        self.moved_at: float | None = None
        self.latencies: list[float] = []  # seconds from a move to its figures on screen
        self.status_text = "? for help"

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static("", id="figures")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                with VerticalScroll(id="tree-scroll"):
                    yield Static("", id="tree")
                yield Static("", id="facts")
            with Vertical(id="right"):
                yield Static("", id="views")
                yield TextArea("", read_only=True, show_line_numbers=True, soft_wrap=False, id="code")
        yield Sparkline([], id="spark")
        yield Static("", id="pipeline")
        yield Static("", id="status")

    def on_mount(self) -> None:
        # Nothing on the main screen takes focus: every key is the app's
        # (scroll the code with the mouse).
        for widget in (self.query_one("#tree-scroll"), self.query_one("#code")):
            widget.can_focus = False
        self.set_focus(None)
        self.refresh_view()
        self.measure()

    # ------------------------------------------------------------ rendering
    def refresh_view(self) -> None:
        s = self.session
        lines = s.lines
        profile = self._profile_columns()
        tree = Text()
        for i, line in enumerate(lines):
            prefix = profile.get(line.loop, " " * 23) if profile is not None else ""
            style = ("reverse bold yellow" if self.dragging else "reverse bold") if i == s.cursor else ""
            tree.append(prefix + line.text, style=style)
            tree.append("\n")
        self.query_one("#tree", Static).update(tree)
        scroll = self.query_one("#tree-scroll", VerticalScroll)
        scroll.scroll_to(y=max(0, s.cursor - 3), animate=False)
        self.query_one("#facts", Static).update("\n".join(s.facts()))
        self.query_one("#pipeline", Static).update(f"lt-opt -p '{s.pipeline}'")
        self._render_views()
        self._render_figures()
        self._render_status()
        self.refresh_code()

    def _profile_columns(self) -> dict | None:
        if not self.show_profile or self.profile is None:
            return None
        text, prof = self.profile
        if text != self.session.schedule.text:
            return {loop.index: f"{'(stale)':>8} {'':>13} " for loop in prof.loops}
        return {
            loop.index: f"{loop.share * 100:6.1f}% {_own(loop.own_s)} " if loop.timed else f"{'in L' + str(loop.within):>21} "
            for loop in prof.loops
        }

    def _render_views(self) -> None:
        text = Text()
        for view in CODE_VIEWS:
            text.append(f" {view} ", style="reverse" if view == self.session.code_view else "")
        text.append("   (tab)", style="dim")
        self.query_one("#views", Static).update(text)

    def _render_figures(self) -> None:
        s = self.session
        current = s.cached_figures()
        if current is not None:
            self.query_one("#figures", Static).update(Text(current.line(), style="bold"))
        else:
            last = s.latest_figures()
            old = last.line() if last is not None else "no figures yet"
            self.query_one("#figures", Static).update(Text(f"measuring... (was: {old})", style="dim"))
        self.query_one("#spark", Sparkline).data = [t * 1e3 for t in s.history] or [0.0]

    def _render_status(self) -> None:
        drag = "[drag] " if self.dragging else ""
        self.query_one("#status", Static).update(drag + self.status_text)

    def refresh_code(self) -> None:
        self._load_code(self.session.code_view, self.session.schedule.text, self.session.cursor)

    @work(thread=True, exclusive=True, group="code")
    def _load_code(self, view: str, text: str, cursor: int) -> None:
        try:
            code, line = self.session.code(view)
        except LtError as e:
            code, line = str(e), 0
        except Exception as e:  # never a crash
            code, line = f"internal error: {type(e).__name__}: {e}", 0
        self.call_from_thread(self._show_code, code, line)

    def _show_code(self, code: str, line: int) -> None:
        area = self.query_one("#code", TextArea)
        if area.text != code:
            area.load_text(code)
        # after the new text is laid out: the selected loop's line, centred
        area.call_after_refresh(area.move_cursor, (line, 0), center=True)

    # ------------------------------------------------------------ benchmark
    def measure(self) -> None:
        self._benchmark(self.session.schedule.text)

    @work(thread=True, exclusive=True, group="bench")
    def _benchmark(self, text: str) -> None:
        self.session.benchmark(text, on_first=lambda first: self.call_from_thread(self._figures_ready, text, first))
        self.call_from_thread(self._figures_ready, text, None)

    def _figures_ready(self, text: str, first) -> None:
        """A figure for ``text``: a first one (``first``) or the final one."""
        if text == self.session.schedule.text and self.moved_at is not None:
            self.latencies.append(time.perf_counter() - self.moved_at)
            self.moved_at = None
        if first is not None:
            if text == self.session.schedule.text:
                self.query_one("#figures", Static).update(Text(first.line(), style="bold"))
            return
        self._render_figures()

    # ------------------------------------------------------------ moves
    def _after_move(self, error: str | None, done: str) -> None:
        if error:
            self.status_text = error
        else:
            remark = getattr(self.session, "last_remark", None)
            self.status_text = f"{done} ({remark})" if remark else done
            self.moved_at = time.perf_counter()
            self.measure()
        self.refresh_view()

    def action_cursor(self, delta: int) -> None:
        if self.dragging:
            self.action_swap("up" if delta < 0 else "down")
            return
        self.session.move_cursor(delta)
        self.refresh_view()

    def action_swap(self, direction: str) -> None:
        error = self.session.move("swap_up" if direction == "up" else "swap_down")
        self._after_move(error, f"swapped {direction}")

    def action_drag(self) -> None:
        if self.session.selected_loop is None and not self.dragging:
            self.status_text = "select a loop to drag"
        else:
            self.dragging = not self.dragging
            self.status_text = "dragging: up/down swap the loop, enter stops" if self.dragging else "drag stopped"
        self.refresh_view()

    def action_simple(self, name: str) -> None:
        self._after_move(self.session.move(name), f"{name.replace('_', ' ')} done")

    def _ask(self, question: str, default: str, make) -> None:
        def answered(value):
            if value is None or not value.strip():
                self.status_text = "cancelled"
                self.refresh_view()
                return
            try:
                args = make(value.strip())
            except ValueError as e:
                self.status_text = f"error: {e}"
                self.refresh_view()
                return
            name, *rest = args
            self._after_move(self.session.move(name, *rest), f"{name.replace('_', ' ')} done")

        if self.session.selected_loop is None and question != "" and not question.startswith("move?"):
            self.status_text = "error: the cursor is on a statement: select a loop"
            self.refresh_view()
            return
        self.push_screen(Prompt(question, default), answered)

    def action_split(self) -> None:
        self._ask("inner size?", "", lambda v: ("split", _int(v, "the inner size")))

    def action_vectorize(self) -> None:
        self._ask("vector width?", str(self.session.target.vector_width()), lambda v: ("vectorize", _int(v, "the width")))

    def action_unroll(self) -> None:
        self._ask("unroll factor? (0 = fully)", "0", lambda v: ("unroll", _int(v, "the factor")))

    def action_gpu_map(self) -> None:
        self._ask("map to block or thread?", "block", lambda v: ("gpu_map", v))

    def action_any_move(self) -> None:
        def make(value):
            try:
                kind, arg = action(value)
            except LtError as e:
                raise ValueError(str(e).removeprefix("error: ")) from None
            return (kind,) if arg is None else (kind, arg)

        self._ask("move? (e.g. split_8, swap_down, unroll_4, gpu_auto)", "", make)

    def action_cache(self) -> None:
        self._ask("cache which operand? (0 = first input)", "0", lambda v: ("cache", _int(v, "the operand")))

    def action_undo(self) -> None:
        error = self.session.undo()
        self._after_move(error, "undone")

    def action_redo(self) -> None:
        error = self.session.redo()
        self._after_move(error, "redone")

    # ------------------------------------------------------------ views and output
    def action_next_view(self) -> None:
        views = list(CODE_VIEWS)
        self.session.code_view = views[(views.index(self.session.code_view) + 1) % len(views)]
        self.refresh_view()

    def action_toggle_profile(self) -> None:
        self.show_profile = not self.show_profile
        if self.show_profile:
            self.status_text = "profiling (an instrumented build)..."
            self._profile(self.session.schedule.text)
        else:
            self.status_text = "profile hidden"
        self.refresh_view()

    @work(thread=True, exclusive=True, group="profile")
    def _profile(self, text: str) -> None:
        try:
            prof = self.session.profile()
            message = f"profile: {prof.total_s * 1e3:.3f} ms instrumented, {prof.plain_s * 1e3:.3f} ms plain ({prof.overhead * 100:+.1f}% overhead)"
        except LtError as e:
            prof, message = None, str(e)
        except Exception as e:  # never a crash
            prof, message = None, f"internal error: {type(e).__name__}: {e}"
        self.call_from_thread(self._profile_ready, text, prof, message)

    def _profile_ready(self, text: str, prof, message: str) -> None:
        if prof is not None:
            self.profile = (text, prof)
        else:
            self.show_profile = False
        self.status_text = message
        self.refresh_view()

    def action_write(self) -> None:
        try:
            self.status_text = f"wrote {self.session.write()}"
        except LtError as e:
            self.status_text = str(e)
        self._render_status()

    def action_write_aot(self) -> None:
        try:
            self.status_text = "wrote " + ", ".join(self.session.write_aot())
        except LtError as e:
            self.status_text = str(e)
        self._render_status()

    def action_help(self) -> None:
        self.push_screen(Help())

    def action_quit_ui(self) -> None:
        if self.write_on_quit:
            try:
                self.session.write()
            except LtError as e:
                self.status_text = str(e)
                self._render_status()
                return
        if self.on_exit is not None:
            self.on_exit(self.session)
        self.exit()


def _own(seconds: float) -> str:
    """A loop's own time in a 13-character column."""
    return f"{seconds * 1e3:10.3f} ms" if seconds >= 1e-4 else f"{seconds * 1e6:10.2f} us"


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what} must be a whole number, got '{text}'") from None


# ------------------------------------------------------------ entry points


def session_for(obj, path: str | None = None, entry: str | None = None, target: str = "cpu", reference=None) -> tuple[Session, object]:
    """A session over a frontend tensor, a Schedule, an MLIR module or lt
    text; returns (session, what to call with it on exit)."""
    if isinstance(obj, Tensor):
        session = Session(Schedule(obj.code, entry), target, inputs=obj.arguments, reference=reference, path=path)
        return session, lambda s: obj.set(s.schedule)
    if isinstance(obj, Schedule):
        session = Session(obj, target, reference=reference, path=path)
        return session, None
    session = Session(Schedule(obj, entry), target, reference=reference, path=path)
    return session, None


def ui(obj, path: str | None = None, entry: str | None = None, target: str = "cpu", reference=None) -> Session:
    """Optimise ``obj`` (a tensor, Schedule, module or lt text) by hand in
    the terminal; returns the session.  A tensor keeps the schedule made
    (loop_tool's ``lt.ui(T, path)``); a Schedule is changed in place."""
    session, on_exit = session_for(obj, path, entry, target, reference)
    try:
        LtUi(session, on_exit, write_on_quit=path is not None).run()
    finally:
        session.close()
    return session


def _arg_parser() -> argparse.ArgumentParser:
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            sys.stderr.write(f"lt-ui: error: {message}\n")
            sys.exit(1)

    p = Parser(prog="lt-ui", description="Optimise an lt module by hand in the terminal.")
    p.add_argument("input", help="input .mlir file ('-': stdin)")
    p.add_argument("-o", dest="output", default=None, help="where w (and quitting) writes the module (default: the input file)")
    p.add_argument("--entry", default=None, help="function to optimise (default: the first)")
    p.add_argument("--target", choices=tuple(TARGETS), default="cpu", help="what the figures measure (default: cpu)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    try:
        if args.input == "-":
            text, name = sys.stdin.read(), "<stdin>"
            os.dup2(os.open("/dev/tty", os.O_RDONLY), 0)  # keys come from the terminal, not the pipe
        else:
            name = args.input
            try:
                with open(args.input) as fh:
                    text = fh.read()
            except OSError as e:
                raise LtError(f"error: cannot read '{args.input}': {e.strerror}") from None
        path = args.output or (None if args.input == "-" else args.input)
        try:
            session = Session(Schedule(text, args.entry), args.target, path=path)
        except LtError as e:
            raise with_filename(e, name) from None
    except LtError as e:
        msg = str(e)
        sys.stderr.write((msg if "error:" in msg else f"error: {msg}") + "\n")
        return 1
    except OSError as e:
        sys.stderr.write(f"lt-ui: error: {e}\n")
        return 1
    # w saves to the path (the input file unless -o); quitting writes only with -o
    try:
        LtUi(session, write_on_quit=args.output is not None).run()
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
