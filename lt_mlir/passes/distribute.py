"""``lt-distribute{loop=L}``: distribute a loop over the parts of its body.

The inverse of ``lt-merge``: L's body is cut into parts (each inner loop is
a part of its own; consecutive other statements form one part) and L
becomes one loop per part, in order, with the same dim, sizes and
annotations.  Index computations (``lt.dim``, constants, index arithmetic)
are recomputed in every part that uses them.

Refuses when a value other than an index computation flows from one part to
another; when L holds a level of its own dim inside (L is the outer level of
a split) and a part that does not reads ``lt.dim`` of it (in its own loop the
dim would count single elements instead of the inner levels' chunks; a part
that reads no dim gets L's iterations, its tail iteration as a full one); or when two parts access a buffer that one of them writes at
elements other iterations of L also access (see ``dependence.reorder_conflicts``).
"""

from __future__ import annotations

from ..analysis.dependence import accesses, is_pure_index_op, reads_dim, reorder_conflicts
from ..dialect import lt
from ..mlir import ir
from .common import find_loop, loop_label, new_loop, refuse
from .registry import Option, register

NAME = "lt-distribute"


@register(NAME, Option("loop", int, help="loop to distribute (L-number)"))
def distribute_pass(module_op, loop: int) -> None:
    """Distribute a loop over the statements of its body (one loop per part)."""
    target = find_loop(module_op, loop, NAME)
    parts = body_parts(target)
    if len(parts) < 2:
        raise refuse(NAME, f"L{loop} {loop_label(target)} has only one part; nothing to distribute", target)
    distribute(target, parts, NAME)


def body_parts(loop) -> list[list]:
    """Non-index statements of ``loop``'s body: each loop alone, other runs together."""
    parts: list[list] = []
    run: list = []
    for op in lt.body_ops(lt.loop_body(loop)):
        if is_pure_index_op(op):
            continue
        if lt.is_loop(op):
            if run:
                parts.append(run)
                run = []
            parts.append([op])
        else:
            run.append(op)
    if run:
        parts.append(run)
    return parts


def crossing_values(loop) -> list:
    """The values one part of ``loop``'s body (``body_parts``) computes and
    another uses: ``(value, the op computing it, the ops of other parts
    that use it)``, in program order."""
    parts = body_parts(loop)
    part_of: dict = {}
    for k, part in enumerate(parts):
        for op in _nested_ops(part):
            part_of[op] = k
    out = []
    for k, part in enumerate(parts):
        for op in part:
            for v in op.results:
                users = [u for u in (use.owner.operation if hasattr(use.owner, "operation") else use.owner for use in v.uses)
                         if part_of.get(u, k) != k]
                if users:
                    out.append((v, op, users))
    return out


def _nested_ops(ops: list) -> list:
    out = []
    for op in ops:
        op.walk(lambda o: (out.append(o), ir.WalkResult.ADVANCE)[1])
    return out


def check_distributable(loop, parts: list[list], pass_name: str) -> None:
    """Refuse (PassError) unless ``loop`` may be cut into ``parts``."""
    for part in parts:
        if _flat_part(loop, part) and _reads_dim(loop, part):
            # lt.dim d in a part without a level over d inside would count single
            # elements in its own loop instead of the chunks of the levels inside
            raise refuse(
                pass_name,
                f"a part of {loop_label(loop)}'s body reads dim '{lt.loop_dim(loop)}' and has no level over it inside, as "
                "another part has: in a loop of its own the dim would count single elements instead of the inner levels' chunks",
                part[0],
            )
    owner = {}
    for i, part in enumerate(parts):
        for op in _nested_ops(part):
            owner[op] = i
    for i, part in enumerate(parts):
        for op in _nested_ops(part):
            for v in op.operands:
                src = v.owner
                if isinstance(src, ir.Block):
                    continue
                j = owner.get(src.operation)
                if j is not None and j != i:
                    raise refuse(
                        pass_name,
                        "a value computed in one part of the body is used in another; cannot distribute "
                        f"{loop_label(loop)}",
                        op,
                    )
    # Only buffers touched by two parts can have their order changed.
    part_of: dict = {}
    for i, part in enumerate(parts):
        for a in (a for op in part for a in accesses(op)):
            part_of.setdefault(a.buffer, set()).add(i)
    shared = [op for part in parts for op in part if any(len(part_of[a.buffer]) > 1 for a in accesses(op))]
    if shared:
        why = reorder_conflicts(loop, shared)
        if why:
            raise refuse(pass_name, f"cannot distribute {loop_label(loop)}: {why}", loop)


def _flat_part(loop, part: list) -> bool:
    """``loop`` holds a level of its dim inside, ``part`` none."""
    dim = lt.loop_dim(loop)
    return bool(lt.inner_levels(loop)) and not any(o.name == "lt.loop" and lt.loop_dim(o) == dim for o in _nested_ops(part))


def _reads_dim(loop, part: list) -> bool:
    """Whether ``part`` reads ``lt.dim`` of ``loop``'s dim (directly, or an
    index computed from it in ``loop``'s body)."""
    dim = lt.loop_dim(loop)
    body = lt.loop_body(loop)
    for op in _nested_ops(part):
        if op.name == "lt.dim" and ir.StringAttr(op.attributes["dim"]).value == dim:
            return True
        for v in op.operands:
            src = v.owner
            if not isinstance(src, ir.Block) and src.operation.block == body and reads_dim(src.operation, dim):
                return True
    return False


def distribute(loop, parts: list[list], pass_name: str) -> list:
    """Cut ``loop`` into one loop per part (in order); returns the new loops."""
    check_distributable(loop, parts, pass_name)
    body = lt.loop_body(loop)
    pure = [op for op in lt.body_ops(body) if is_pure_index_op(op)]
    annotations = {f"lt.{k}": loop.attributes[f"lt.{k}"] for k in lt.annotations(loop)}
    created = []
    for part in parts:
        size, tail = lt.loop_size(loop), lt.loop_tail(loop)
        if _flat_part(loop, part):
            size, tail = size + (1 if tail else 0), 0  # (it reads no dim: the same iterations, the tail's as a full one)
        with ir.InsertionPoint(loop), loop.location:
            new, block = new_loop(lt.loop_dim(loop), size, tail, annotations)
        mapping = {body.arguments[0]: block.arguments[0]}
        with ir.InsertionPoint(block):
            for op in pure:
                clone = op.clone()
                for old, new_value in zip(op.results, clone.results):
                    mapping[old] = new_value
        for op in part:
            op.detach_from_parent()
            block.append(op)
        _remap(list(lt.body_ops(block)), mapping)
        _erase_unused(block)
        created.append(new)
    loop.erase()
    return created


def _remap(ops: list, mapping: dict) -> None:
    for op in _nested_ops(ops):
        for i, v in enumerate(op.operands):
            if v in mapping:
                op.operands[i] = mapping[v]


def _erase_unused(block: ir.Block) -> None:
    """Drop index computations nothing uses (recomputed copies a part did not need)."""
    changed = True
    while changed:
        changed = False
        for op in reversed(lt.body_ops(block)):
            if is_pure_index_op(op) and all(not list(r.uses) for r in op.results):
                op.erase()
                changed = True
