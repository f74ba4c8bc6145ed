"""The pass registry and the pipeline driver shared by every front end.

lt passes are Python functions ``run(module_op, **options)`` registered
under their command-line name with typed options.  A pipeline string mixes
them with upstream passes, mlir-opt style::

    builtin.module(lower-lt-to-scf, canonicalize, func.func(cse))

Consecutive upstream elements run in one upstream ``PassManager``; lt passes
run as plain Python between them, so their errors surface as ``PassError``
with the loop's location, never as a crash inside the pass manager.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

from ..analysis.dependence import reorder_conflicts
from ..analysis.gpu_mapping import check_mapping
from ..analysis.vector_plan import plan
from ..dialect.loop_tree import preorder_loops
from ..errors import LtError, PassError, PipelineError, from_mlir_error
from ..mlir import ir, passmanager


@dataclass(frozen=True)
class Option:
    name: str
    type: type
    default: object = None  # None: required
    help: str = ""

    def parse(self, pass_name: str, text: str):
        if self.type is bool:
            if text in ("1", "true", "True"):
                return True
            if text in ("0", "false", "False"):
                return False
        else:
            try:
                return self.type(text)
            except ValueError:
                pass
        raise PipelineError(
            f"error: {pass_name}: option '{self.name}' expects {self.type.__name__}, got '{text}'"
        )


@dataclass
class PassInfo:
    name: str
    run: Callable
    options: dict[str, Option] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        doc = inspect.getdoc(self.run) or ""
        return doc.splitlines()[0] if doc else ""

    def bind(self, given: dict[str, str]) -> dict:
        """Typed option values from their text, with defaults filled in."""
        values = {}
        for key, text in given.items():
            if key not in self.options:
                known = ", ".join(self.options) or "none"
                raise PipelineError(f"error: {self.name}: unknown option '{key}' (options: {known})")
            values[key] = self.options[key].parse(self.name, text)
        for opt in self.options.values():
            if opt.name not in values:
                if opt.default is None:
                    raise PipelineError(f"error: {self.name}: missing required option '{opt.name}'")
                values[opt.name] = opt.default
        return values


REGISTRY: dict[str, PassInfo] = {}


def register(name: str, *options: Option):
    """Decorator: make ``run(module_op, **options)`` the pass ``name``."""

    def wrap(run):
        REGISTRY[name] = PassInfo(name, run, {o.name: o for o in options})
        return run

    return wrap


def registry() -> dict[str, PassInfo]:
    """Every registered pass by name.  The loop passes register when
    ``lt_mlir.passes`` is imported, the lowering steps when
    ``lt_mlir.lowering.passes`` is (the compiler imports both)."""
    return REGISTRY


# ------------------------------------------------------------ pipelines


def split_top_level(text: str, where: str) -> list[str]:
    parts, start = [], 0
    closing = {"(": ")", "{": "}"}
    stack = []
    for i, ch in enumerate(text):
        if ch in closing:
            stack.append(closing[ch])
        elif ch in ")}":
            if not stack or stack.pop() != ch:
                raise PipelineError(f"error: unbalanced '{ch}' in pipeline {where!r}")
        elif ch == "," and not stack:
            parts.append(text[start:i])
            start = i + 1
    if stack:
        raise PipelineError(f"error: unclosed '{stack[-1]}' expected in pipeline {where!r}")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def strip_module_anchor(text: str) -> str:
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        return text[len("builtin.module(") : -1]
    return text


def _parse_options(pass_name: str, text: str) -> dict[str, str]:
    """``key=value`` items separated by spaces (MLIR's syntax) or commas
    (``lt-split{loop=0,factor=4}``: no lt option takes a list)."""
    out = {}
    for item in text.replace(",", " ").split():
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise PipelineError(f"error: {pass_name}: malformed option '{item}' (expected key=value)")
        out[key] = value
    return out


@dataclass
class Stage:
    """One step of a pipeline: an lt pass with bound options, or upstream text."""

    lt_pass: PassInfo | None = None
    options: dict = field(default_factory=dict)
    upstream: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.lt_pass is not None:
            opts = " ".join(f"{k}={v}" for k, v in self.options.items())
            return f"{self.lt_pass.name}{{{opts}}}" if opts else self.lt_pass.name
        return ", ".join(self.upstream)


def parse_pipeline(text: str) -> list[Stage]:
    """Split a pipeline string into stages, validating lt pass options."""
    passes = registry()
    stages: list[Stage] = []
    for element in split_top_level(strip_module_anchor(text), text):
        name = element.split("{", 1)[0].split("(", 1)[0].strip()
        if name in passes:
            opts = ""
            if "{" in element:
                if not element.endswith("}"):
                    raise PipelineError(f"error: malformed options in {element!r}")
                opts = element[element.index("{") + 1 : -1]
            info = passes[name]
            stages.append(Stage(lt_pass=info, options=info.bind(_parse_options(name, opts))))
        else:
            if not stages or stages[-1].lt_pass is not None:
                stages.append(Stage())
            stages[-1].upstream.append(element)
    for stage in stages:
        if stage.lt_pass is None:
            _upstream_pass_manager(stage.upstream)  # report unknown passes before running anything
    return stages


def _upstream_pass_manager(elements: list[str], context: ir.Context | None = None):
    text = f"builtin.module({', '.join(elements)})"
    ctx = context or ir.Context()
    with ctx:
        try:
            return passmanager.PassManager.parse(text)
        except (ValueError, ir.MLIRError) as e:
            raise PipelineError(_upstream_message(str(e), elements)) from None


def _upstream_message(message: str, elements: list[str]) -> str:
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    detail = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "invalid pipeline")
    detail = detail.split("error:", 1)[-1].strip()
    return f"error: invalid pass pipeline '{', '.join(elements)}': {detail}"


def _broken_annotation(module_op) -> str | None:
    """A vectorize or GPU annotation some pass invalidated (moved the loop outward,
    rewrote its indices, put it under a parallel loop...), described."""
    loops = preorder_loops(module_op)
    for i, loop in enumerate(loops):
        if "lt.vectorize" not in loop.attributes:
            continue
        problem = plan(loop)
        why = str(problem) if problem is not None else reorder_conflicts(loop)
        if why:
            return f"L{i} vectorized although {why}"
    if not any("lt.gpu" in loop.attributes for loop in loops):
        return None  # nothing GPU-mapped: no mapping rule to break
    problem = check_mapping(module_op)
    if problem is not None:
        loop, why = problem
        index = next(i for i, l in enumerate(loops) if l == loop)
        return f"L{index} GPU-mapped although {why}"
    return None


def _saved_body(module_op) -> list:
    """Copies of the module's top-level ops (what ``_restore`` puts back)."""
    return [o.operation.clone() for o in module_op.regions[0].blocks[0].operations]


def _restore(module_op, saved: list) -> None:
    """Put the module back as it was when ``saved`` was taken (same Module object)."""
    body = module_op.regions[0].blocks[0]
    for o in list(body.operations):
        o.operation.erase()
    for o in saved:
        body.append(o)


@functools.lru_cache(maxsize=4096)
def _parsed_pipeline(text: str) -> tuple:
    return tuple(parse_pipeline(text))


def run_pipeline(module: ir.Module | ir.Operation, pipeline: str | list[Stage], restore: bool = True, verify: bool = True) -> list[str]:
    """Run a pipeline (string or parsed stages) on ``module`` in place.

    Returns the remarks the lt passes made (``"<pass>: <text>"``), e.g.
    lt-shrink-buffers' bytes before/after.  An lt pass whose result breaks
    an annotation is refused and the module put back as it was before it
    (``restore=False``: left as it is, for a caller that drops it anyway).
    ``verify=False`` skips the verifier after each lt pass (as mlir-opt's
    ``-verify-each=0``): for trying many moves, where verifying is half
    the cost.  The passes' output is verified on every fuzzer schedule, and
    a module is verified again when it is parsed or lowered."""
    stages = _parsed_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
    op = module.operation
    remarks = []
    for stage in stages:
        if stage.lt_pass is not None:
            with op.context, ir.Location.unknown():
                before = _saved_body(op) if restore else None
                remark = stage.lt_pass.run(op, **{k.replace("-", "_"): v for k, v in stage.options.items()})
                if remark:
                    remarks.append(f"{stage.lt_pass.name}: {remark}")
                if verify:
                    try:
                        op.verify()
                    except ir.MLIRError as e:
                        raise from_mlir_error(e, LtError) from None
                broken = _broken_annotation(op)
                if broken is not None:
                    if restore:
                        _restore(op, before)
                    raise PassError(
                        f"error: {stage.lt_pass.name}: refused: it would leave {broken}"
                    )
            continue
        pm = _upstream_pass_manager(stage.upstream, op.context)
        with op.context:
            try:
                pm.run(op)
            except ir.MLIRError as e:
                raise from_mlir_error(e, LtError) from None
    return remarks
