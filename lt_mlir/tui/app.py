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
import math
import os
import sys
import tempfile
import time
import traceback

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Sparkline, Static, TextArea

from ..errors import LtError, is_interrupt, read_module_file, with_filename
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
    ("v", "vectorize (asks the width; default: this CPU's vector width); on a vectorized loop: undo that"),
    ("n", "unroll (asks the factor; 0 = fully); on an unrolled loop: undo that"),
    ("p", "run the loop's iterations in parallel (CPU threads)"),
    ("g / G", "map the loop to GPU blocks or threads / map every nest automatically (GPU targets)"),
    ("c", "cache an input of the loop's nest (asks which operand)"),
    ("d", "distribute the loop over the parts of its body"),
    ("m", "any move by name, on the loop: split_8, swap_down, unroll_4, resize_-1, uncache, gpu_auto_128 (lt_mlir.moves)"),
    ("a", "suggest: the trained policy's next action here, made (undo takes a move back)"),
    ("u / r", "undo / redo (unbounded)"),
    ("tab", "next code view: lt, scf, llvm, asm, ptx"),
    ("pgup / pgdn", "scroll the code view"),
    ("click", "select the loop or statement clicked in the tree"),
    ("P", "per-loop profile beside the tree (an instrumented build); after a move: profile again"),
    ("escape", "cancel the measurement under way (a prompt: cancel it)"),
    ("w", "write the module to -o PATH, else to the input file"),
    ("W", "write an object + header beside that path (PTX + JSON for cuda)"),
    ("?", "this help"),
    ("q", "quit; writes the module first only to -o PATH (lt.ui's path), if given"),
]


class Prompt:
    """One question being answered in the prompt box: the app feeds it every
    key in the order typed (a burst of keys, a paste, all land here).  The
    default answer is replaced by the first character typed."""

    def __init__(self, question: str, default: str, answered):
        self.question, self.value, self.answered = question, default, answered
        self.fresh = True  # the default is shown: typing replaces it

    def key(self, event: events.Key) -> str | None:
        """Edit the answer; returns "submit", "cancel" or None."""
        if event.key == "enter":
            return "submit"
        if event.key == "escape":
            return "cancel"
        if event.key in ("backspace", "ctrl+h"):
            self.value = "" if self.fresh else self.value[:-1]
        elif event.key == "ctrl+u":
            self.value = ""
        elif event.is_printable and event.character:
            self.value = (event.character if self.fresh else self.value + event.character)
        else:
            return None
        self.fresh = False
        return None

    def render(self) -> Text:
        text = Text(self.question + " ", style="bold")
        text.append(self.value, style="reverse" if self.fresh else "")
        text.append("_", style="blink")
        text.append("   (enter: answer, escape: cancel)", style="dim")
        return text


def help_text() -> Text:
    text = Text("lt-ui keys (any key closes)\n\n", style="bold")
    for key, what in KEYS:
        text.append(f"{key:>22}  ", style="bold cyan")
        text.append(what + "\n")
    return text


class Tree(Static):
    """The loop tree: a click selects the row clicked."""

    def on_click(self, event: events.Click) -> None:
        self.app.select_row(event.y)


class LtUi(App):
    """The app; ``session`` holds every state worth keeping."""

    TITLE = "lt-ui"
    CSS = """
    #figures { height: auto; background: $boost; padding: 0 1; }
    #main { height: 1fr; }
    #left { width: 1fr; }
    #right { width: 1fr; }
    #tree-scroll { height: 1fr; border: round $primary; }
    #facts { height: auto; max-height: 6; border: round $primary; padding: 0 1; }
    #views { height: 1; padding: 0 1; }
    #code { height: 1fr; }
    #help { height: 1fr; border: round $accent; padding: 0 1; display: none; }
    #spark { height: 2; }
    #pipeline { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    #ask { height: auto; border: round $accent; background: $panel; padding: 0 1; display: none; }
    #status { height: auto; max-height: 4; background: $boost; padding: 0 1; }
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
        Binding("a", "suggest", "suggest", show=False),
        Binding("u", "undo", "undo", show=False),
        Binding("U", "hint_u", "not a key", show=False),
        Binding("r", "redo", "redo", show=False),
        Binding("tab", "next_view", "code view", show=False),
        Binding("pageup", "scroll_code(-1)", "code up", show=False),
        Binding("pagedown", "scroll_code(1)", "code down", show=False),
        Binding("P", "toggle_profile", "profile", show=False),
        Binding("escape", "cancel_measurement", "cancel", show=False),
        Binding("w", "write", "write", show=False),
        Binding("W", "write_aot", "write object", show=False),
        Binding("question_mark", "help", "help", show=False),
        Binding("q", "quit_ui", "quit", show=False),
    ]

    def __init__(self, session: Session, on_exit=None, write_on_quit: bool = False):
        super().__init__()
        self.session = session
        self.on_exit = on_exit  # called with the session however the app ends
        self.write_on_quit = write_on_quit  # q writes to session.path first (lt-ui -o, lt.ui's path)
        self.prompt: Prompt | None = None  # the question being answered: every key goes to it
        self.help_shown = False
        self.crash: str | None = None  # an unexpected error that ended the app, in one line
        self.rescued = ""  # where the schedule went when it did
        self.dragging = False
        self.show_profile = False
        self.profile = None  # (schedule text, LoopProfile)
        self.moved_at: float | None = None
        self.latencies: list[float] = []  # seconds from a move to its figures on screen
        self.status_text = "? for help"
        self.unkept = None  # the figures of a measurement not kept (cancelled), while its schedule is shown

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static("", id="figures")
        yield Static(help_text(), id="help")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                with VerticalScroll(id="tree-scroll"):
                    yield Tree("", id="tree")
                yield Static("", id="facts")
            with Vertical(id="right"):
                yield Static("", id="views")
                yield TextArea("", read_only=True, show_line_numbers=True, soft_wrap=False, id="code")
        yield Sparkline([], id="spark")
        yield Static("", id="pipeline")
        yield Static("", id="ask")
        yield Static("", id="status")

    def on_mount(self) -> None:
        # Nothing takes focus: every key comes to the app, in the order
        # typed (pgup/pgdn scroll the code).
        for widget in (self.query_one("#tree-scroll"), self.query_one("#code")):
            widget.can_focus = False
        self.set_focus(None)
        self.refresh_view()
        self.measure()

    # ------------------------------------------------------------ keys
    def check_action(self, action: str, parameters) -> bool | None:
        """While a prompt or the help is up, no key runs its action (not
        even a priority binding's).  Nothing here takes focus, so the
        screen's tab (focus the next widget) never runs: tab is the code
        view's."""
        if action in ("focus_next", "focus_previous"):
            return False
        return self.prompt is None and not self.help_shown

    def on_key(self, event: events.Key) -> None:
        """Runs before the key's binding: a prompt or the help takes it."""
        if self.help_shown or self.prompt is not None:
            event.prevent_default()  # no binding runs
            event.stop()
            if self.help_shown:
                self.help_shown = False
                self._show_overlays()
            else:
                self._prompt_key(event)

    def _prompt_key(self, event: events.Key) -> None:
        prompt = self.prompt
        outcome = prompt.key(event)
        if outcome is None:
            self._show_overlays()
            return
        self.prompt = None  # answered once: a second enter is a key of the main view
        self._show_overlays()
        prompt.answered(prompt.value if outcome == "submit" else None)

    def _show_overlays(self) -> None:
        ask = self.query_one("#ask", Static)
        ask.display = self.prompt is not None
        if self.prompt is not None:
            ask.update(self.prompt.render())
        self.query_one("#help").display = self.help_shown
        self.query_one("#main").display = not self.help_shown

    def select_row(self, row: int) -> None:
        """A click on row ``row`` of the tree (the profile's header is row 0
        when shown)."""
        if self.prompt is not None or self.help_shown:
            return
        row -= 1 if self._profile_columns() is not None else 0
        if 0 <= row < len(self.session.lines):
            self.dragging = False
            self.session.cursor = row
            self.refresh_view()

    def action_scroll_code(self, pages: int) -> None:
        area = self.query_one("#code", TextArea)
        area.scroll_to(y=max(0, area.scroll_offset.y + pages * max(1, area.scrollable_content_region.height - 1)), animate=False)

    def action_hint_u(self) -> None:
        self.status_text = "U is no key: u undoes, r redoes, n unrolls"
        self._render_status()

    # ------------------------------------------------------------ rendering
    def refresh_view(self) -> None:
        s = self.session
        lines = s.lines
        profile = self._profile_columns()
        tree = Text()
        if profile is not None:
            tree.append(f"{'share':>7} {'own time':>13}   {'(P: profile again)' if self._profile_stale() else ''}\n", style="bold dim")
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

    def _profile_stale(self) -> bool:
        return self.profile is not None and self.profile[0] != self.session.schedule.text

    def _profile_columns(self) -> dict | None:
        if not self.show_profile or self.profile is None:
            return None
        text, prof = self.profile
        if self._profile_stale():
            return {loop.index: f"{'(stale)':>8} {'':>13} " for loop in prof.loops}
        return {loop.index: f"{loop.share * 100:6.1f}% {_own(loop.own_s)} " if loop.timed else f"{_untimed(loop):>21} " for loop in prof.loops}

    def _render_views(self) -> None:
        text = Text()
        for view in CODE_VIEWS:
            text.append(f" {view} ", style="reverse" if view == self.session.code_view else "")
        text.append("   (tab)", style="dim")
        self.query_one("#views", Static).update(text)

    def _render_figures(self) -> None:
        s = self.session
        current = s.cached_figures()
        if current is None and self.unkept is not None and self.unkept.text == s.schedule.text:
            current = self.unkept
        if current is not None:
            self.query_one("#figures", Static).update(Text(current.line(), style="bold"))
        else:
            last = s.latest_figures()
            old = last.line() if last is not None else "no figures yet"
            self.query_one("#figures", Static).update(Text(f"measuring... (was: {old})", style="dim"))
        self.query_one("#spark", Sparkline).data = spark_points(s.history)

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
        self._from_worker(self._show_code, code, line)

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
        figures = self.session.benchmark(text, on_first=lambda first: self._from_worker(self._figures_ready, text, first))
        self._from_worker(self._figures_ready, text, None, figures)

    def _from_worker(self, callback, *args) -> None:
        """``callback`` on the UI thread, unless the app has ended meanwhile."""
        if self.is_running:
            try:
                self.call_from_thread(callback, *args)
            except RuntimeError:  # the app stopped between the check and the call
                pass

    def _figures_ready(self, text: str, first, final=None) -> None:
        """A figure for ``text``: a first one (``first``) or the final one."""
        self.unkept = final if final is not None and self.session.cached_figures(text) is None else None
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
        self.prompt = Prompt(question, default, answered)
        self._show_overlays()

    def action_split(self) -> None:
        self._ask("inner size?", "", lambda v: ("split", _int(v, "the inner size")))

    def action_vectorize(self) -> None:
        if not self._unannotated("vectorize"):
            self._ask("vector width?", str(self.session.target.vector_width()), lambda v: ("vectorize", _int(v, "the width")))

    def action_unroll(self) -> None:
        if not self._unannotated("unroll"):
            self._ask("unroll factor? (0 = fully)", "0", lambda v: ("unroll", _int(v, "the factor")))

    def _unannotated(self, name: str) -> bool:
        """loop_tool's toggles: on a loop that carries ``name`` already, the
        key takes it off (lt-unannotate, one undoable move)."""
        if name not in self.session.annotations():
            return False
        self._after_move(self.session.move("unannotate", name), f"{name} removed")
        return True

    def action_gpu_map(self) -> None:
        error = self.session.refusal("gpu_map")
        if error:
            self._after_move(error, "")
            return
        self._ask("map to block or thread?", "block", lambda v: ("gpu_map", v))

    def action_any_move(self) -> None:
        def make(value):
            try:
                kind, arg = action(value)
            except LtError as e:
                raise ValueError(str(e).removeprefix("error: ")) from None
            return (kind,) if arg is None else (kind, arg)

        self._ask("move? (e.g. split_8, swap_down, unroll_4, gpu_auto)", "", make)

    def action_suggest(self) -> None:
        name, error = self.session.suggest()
        if error:
            self.status_text = error
            self.refresh_view()
            return
        self._after_move(None, f"policy: {name}")

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
        self.show_profile = not self.show_profile or self._profile_stale()
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
        self._from_worker(self._profile_ready, text, prof, message)

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
        self.help_shown = True
        self._show_overlays()

    def action_cancel_measurement(self) -> None:
        self.status_text = "measurement cancelled (the next move measures again)" if self.session.cancel() else "no measurement under way"
        self._render_status()

    def action_quit_ui(self) -> None:
        if self.write_on_quit:
            try:
                self.session.write()
            except LtError as e:
                self.status_text = str(e)
                self._render_status()
                return
        self.finish()
        self.exit()

    async def action_quit(self) -> None:  # Textual's ctrl+q
        self.action_quit_ui()

    def finish(self) -> None:
        """However the app ends: the measurement under way is stopped now
        (quitting never waits for a kernel) and the caller gets the
        schedule."""
        self.session.cancel()
        if self.on_exit is not None:
            on_exit, self.on_exit = self.on_exit, None
            on_exit(self.session)

    def _handle_exception(self, error: Exception) -> None:
        """An unexpected error anywhere in the app (Textual's hook): the
        work is kept (the caller gets the schedule, and it is written out),
        the app ends with status 1 and says so in one line, never a
        traceback on the terminal (it goes to a file)."""
        if self.crash is not None:
            return
        self.crash = f"{type(error).__name__}: {error}".splitlines()[0]
        try:
            self.rescued = self._rescue(error)
            self.finish()
        finally:
            self._return_code = 1
            self.exit(return_code=1)

    def _rescue(self, error: Exception) -> str:
        """Write the schedule (to -o / lt.ui's path, else a new file) and
        the traceback; says where."""
        details = tempfile.NamedTemporaryFile("w", prefix="lt-ui-crash-", suffix=".txt", delete=False)
        with details:
            details.write("".join(traceback.format_exception(error)))
        try:
            if self.write_on_quit:
                where = self.session.write()
            else:
                fd, where = tempfile.mkstemp(prefix="lt-ui-schedule-", suffix=".mlir")
                os.close(fd)
                self.session.write(where)
        except LtError as e:
            return f"the schedule could not be written ({e}); details in {details.name}"
        return f"the schedule is in {where}; details in {details.name}"

    def crash_message(self) -> str:
        return f"error: lt-ui stopped on an internal error ({self.crash}); {self.rescued}"


def _untimed(loop) -> str:
    """Where an untimed loop's time went, and why on a GPU (``threads, in
    L4``), within the 21 characters of the column."""
    where = f"in L{loop.within}" if loop.within is not None else "untimed"
    label = f"{loop.note}, {where}" if loop.note else where
    return label if len(label) <= 21 else loop.note[:21]


def _own(seconds: float) -> str:
    """A loop's own time in a 13-character column."""
    return f"{seconds * 1e3:10.3f} ms" if seconds >= 1e-4 else f"{seconds * 1e6:10.2f} us"


def spark_points(history: list) -> list:
    """The sparkline's heights: log of the runtimes, so that one slow
    schedule does not flatten the others."""
    return [math.log10(max(t, 1e-9) * 1e9) for t in history] or [0.0]


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
    (loop_tool's ``lt.ui(T, path)``), however the app ends; a Schedule is
    changed in place.  ``q`` writes to ``path`` first, if given.  An
    internal error of the app raises ``LtError`` saying where the schedule
    was written."""
    session, on_exit = session_for(obj, path, entry, target, reference)
    app = LtUi(session, on_exit, write_on_quit=path is not None)
    try:
        app.run()
    finally:
        app.finish()
        session.close()
    if app.crash is not None:
        raise LtError(app.crash_message())
    return session


def _arg_parser() -> argparse.ArgumentParser:
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            sys.stderr.write(f"lt-ui: error: {message}\n")
            sys.exit(1)

    p = Parser(prog="lt-ui", description="Optimise an lt module by hand in the terminal.",
               epilog="q quits, writing the module to -o PATH first if given (without -o nothing is written); "
                      "w writes it any time, to -o PATH or else to the input file.")
    p.add_argument("input", help="input .mlir file ('-': stdin)")
    p.add_argument("-o", dest="output", default=None,
                   help="where q writes the module on quitting, and w writes it (without -o: q writes nothing, w writes the input file)")
    p.add_argument("--entry", default=None, help="function to optimise (default: the first)")
    p.add_argument("--target", choices=tuple(TARGETS), default="cpu", help="what the figures measure (default: cpu)")
    return p


def _read_module(path: str) -> tuple[str, str]:
    """(text, name to report) of the input file or stdin."""
    return read_module_file(path, "lt-ui")


def app_for(argv: list[str] | None = None) -> LtUi:
    """The app ``lt-ui ARGV`` runs (``LtError`` for an input it cannot read)."""
    args = _arg_parser().parse_args(argv)
    text, name = _read_module(args.input)
    if args.input == "-":
        os.dup2(os.open("/dev/tty", os.O_RDONLY), 0)  # keys come from the terminal, not the pipe
    # w saves to -o or the input file; q writes only to -o
    try:
        session = Session(Schedule(text, args.entry), args.target, path=args.output or (None if args.input == "-" else args.input))
    except LtError as e:
        raise with_filename(e, name) from None
    return LtUi(session, write_on_quit=args.output is not None)


def main(argv: list[str] | None = None) -> int:
    try:
        app = app_for(argv)
    except LtError as e:
        msg = str(e)
        sys.stderr.write((msg if "error:" in msg else f"error: {msg}") + "\n")
        return 1
    except OSError as e:
        sys.stderr.write(f"lt-ui: error: {e}\n")
        return 1
    except (KeyboardInterrupt, RuntimeError) as e:  # Ctrl-C while the program loads (in an IR walk: MLIR's RuntimeError)
        if not is_interrupt(e):
            raise
        sys.stderr.write("lt-ui: interrupted while loading\n")
        return 130
    try:
        app.run()
    finally:
        app.finish()
        app.session.close()
    if app.crash is not None:
        sys.stderr.write(f"lt-ui: {app.crash_message()}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
