"""What a kernel's optimised LLVM IR executes: each block's instructions by
kind, times the trip counts of the loops around it (pure text analysis of
the IR ``machine.optimize`` returns: nothing is run).

The schedule search's features read the lt module before LLVM sees it, so
they cannot tell what LLVM's vectorisers, unrolling and scalar
replacement make of a schedule: a clipped matmul LLVM vectorised after a
full unroll, or a strided read it could not.  Read after O3, the code
says it.

Loops are the natural loops of the control-flow graph's back edges (an
edge to a block on the depth-first search's path from the entry: LLVM
prints blocks in no order that says which branch goes back), a loop's
blocks those that reach its latch without passing its header.
A loop's trip count is read from its latch: ``br i1 %c`` on ``%c = icmp
<pred> iN %x, C`` where ``%x`` is the induction variable (``phi [S, ...]``)
or it plus a constant step; loops whose count this does not find count
``UNKNOWN_TRIPS`` iterations and are counted in ``unknown_trips``.  A
block executes the product of the trip counts of the loops around it, a
loop's header once more than its body where the loop was rotated is not
modelled (the counts are estimates of the steady state).

A vector wider than the target's register (``vector_bits``: what
``lt_mlir.lowering.machine.host_vector_width`` reads, 256 bits for AVX2)
is split by the backend into registers: an instruction on ``<128 x
float>`` is 16 AVX2 instructions, and counts 16 of each kind it is
(``lanes`` stays the elements it computes); a horizontal reduction
(``llvm.vector.reduce.*``) of ``n`` registers is ``n - 1`` vertical
operations, then a shuffle and an operation per halving of one register.
SLP vectorisation of a fully unrolled body makes such vectors.

A vector ``exp``/``log``/... is counted as the backend makes it: LLVM's
intrinsic (``@llvm.exp.v8f32``, what LLVM's loop vectoriser makes of a
scalar ``exp``) is split into one libm call a lane, moving each lane out
and back; a call of libmvec's function (``_ZGVdN8v_expf``, what a vector
``exp`` lt vectorised calls in JIT code) is one call a register.  In the
cost dataset a softmax whose exp loop lt vectorised ran 1.66x the one
LLVM vectorised, which the two counted alike.

Register pressure: the vector values an innermost loop carries from one
iteration to the next (its header's vector phis, in registers) and
``SPARE_REGISTERS`` for its operands must fit the target's vector
registers (16 with AVX2, 32 with AVX-512); each one more is spilled, a
store and a load an iteration (``spills``: those registers, times the
iterations).  In the cost dataset a matmul whose inner loop carried 32
AVX2 registers of accumulators ran 3.7x slower than ones carrying 8.

``cycles`` is a throughput estimate of its own: each block's instructions
issued ``ISSUE`` a cycle, memory operations ``MEMORY`` a cycle, stores
``STORES`` a cycle, shuffles and element moves ``SHUFFLES`` a cycle (one
port does them), floating-point operations ``FLOPS`` a cycle, the
largest of these; and in an innermost loop, at least the latency of its
longest chain of floating-point operations carried from one iteration
to the next (``CHAIN_LATENCY`` a link: a reduction into one
accumulator).  The constants are a generic x86 core's; ISSUE and MEMORY
were chosen from a grid by how ``cycles`` ranks the cost dataset's
batches (``make_cost_dataset.py --ir``), on the programs the shipped
model trains on.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field

UNKNOWN_TRIPS = 8
ISSUE = 6.0  # IR instructions a cycle: address arithmetic and casts fold into the instructions that use them
MEMORY = 1.25  # two loads a cycle on paper; 1.25 ranks the cost dataset best (make_cost_dataset.py --ir)
STORES = 1.0
SHUFFLES = 1.0
FLOPS = 2.0
CHAIN_LATENCY = 4.0
TRANSCENDENTAL = 10.0  # floating-point operations an exp, log, ... costs (a libm call a lane, or a libmvec call a register)
FORK_CYCLES = 3000.0  # starting and joining an OpenMP team
SPILL_COST = 1  # stores and loads an iteration a spilled register costs
SPARE_REGISTERS = 4  # vector registers a loop body needs besides the values it carries (loaded and broadcast operands)

KINDS = ("instructions", "vector_flops", "scalar_flops", "vector_loads", "scalar_loads", "vector_stores", "scalar_stores",
         "gathers", "shuffles", "element_moves", "horizontal", "transcendental", "calls", "lanes", "spills", "forks")

_FP_BINARY = frozenset(("fadd", "fsub", "fmul", "fdiv", "frem", "fneg"))
_FP_CALLS = ("fma", "fmuladd", "maxnum", "minnum", "maximum", "minimum", "fabs", "copysign")
_TRANSCENDENTAL = ("exp", "log", "sqrt", "tanh", "erf", "pow", "sin", "cos")
_CALL = frozenset(("call", "tail", "notail", "musttail"))
_SKIP = frozenset(("br", "ret", "switch", "phi", "unreachable"))
_VECTOR = re.compile(r"<(\d+) x (?:float|double|half|bfloat)>")
_VECTOR_PHI = re.compile(r"^%[-\w.$]+ = phi <\d+ x ")
_ANY_VECTOR = re.compile(r"<(\d+) x (float|double|half|bfloat|i\d+|ptr)>")
_BITS = {"float": 32, "double": 64, "half": 16, "bfloat": 16, "ptr": 64}
VECTOR_BITS = 256  # AVX2's register, the default of ``ir_counts``
_DEF = re.compile(r"^(%[-\w.$]+) = (.*)$")
_DEFINE = re.compile(r"^define [^@]*@([-\w.$]+)\(")
_FORK = re.compile(r"@__kmpc_fork_call\(.*?, ptr (?:nonnull )?@([-\w.$]+)")
_STATIC_BOUND = re.compile(r"^store i(?:32|64) (-?\d+), ptr %p\.(lowerbound|upperbound)")
_LABEL = re.compile(r"^([-\w.$]+):")
_TARGET = re.compile(r"label %([-\w.$]+)")
_NAME = re.compile(r"%[-\w.$]+")
_INT = r"i(?:8|16|32|64)"
_COND_BR = re.compile(r"^br i1 (%[-\w.$]+), label %([-\w.$]+), label %([-\w.$]+)")
_ICMP = re.compile(rf"^icmp (?:samesign )?(\w+) {_INT} (%[-\w.$]+), (-?\d+)")
_STEP = re.compile(rf"^(?:add|or)(?: nuw| nsw| disjoint)* {_INT} (%[-\w.$]+), (-?\d+)")
_PHI_START = re.compile(rf"^phi {_INT} .*\[ (-?\d+), %")
_FIRST_PASS = re.compile(r"^phi i1 \[ true, %[-\w.$]+ \], \[ false, %[-\w.$]+ \]$")


@dataclass
class Loop:
    header: int  # block indices in printed order
    latch: int
    trips: int
    known: bool
    chain: int = 0  # floating-point operations on the longest carried chain
    body: frozenset = frozenset()  # the blocks of the loop, header and latch included


@dataclass
class IrCounts:
    """Dynamic counts a call (``KINDS``), the loops found, and ``cycles``."""

    counts: dict = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    static: dict = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    loops: int = 0
    unknown_trips: int = 0
    vectorized_loops: int = 0  # loops LLVM's loop vectoriser made (its metadata)
    cycles: float = 0.0


def _opcode(instruction: str) -> str:
    m = _DEF.match(instruction)
    head = m.group(2) if m else instruction
    return head.split(" ", 1)[0]


def _parts(instruction: str, vector_bits: int) -> tuple[int, int]:
    """(registers of ``vector_bits`` the widest vector of ``instruction``
    takes, the lanes of its element type one register holds)."""
    parts, lanes = 1, 1
    for n, elem in _ANY_VECTOR.findall(instruction):
        bits = _BITS.get(elem) or int(elem[1:])
        got = -(-int(n) * bits // vector_bits)
        if got >= parts:
            parts, lanes = got, max(1, vector_bits // bits)
    return parts, lanes


def _kinds(instruction: str, vector_bits: int = VECTOR_BITS) -> dict:
    """The kinds one instruction counts as (``lanes``: floating-point
    lanes), a vector wider than ``vector_bits`` counted once a register."""
    op = _opcode(instruction)
    if op in _SKIP or not op:
        return {}
    out = {"instructions": 1}
    vector = _VECTOR.search(instruction)
    width = int(vector.group(1)) if vector else 1
    flops = "vector_flops" if vector else "scalar_flops"
    if op in _FP_BINARY or (op in ("fcmp", "select") and ("float" in instruction or "double" in instruction)):
        out[flops], out["lanes"] = 1, width
    elif op == "load":
        out["vector_loads" if vector else "scalar_loads"] = 1
    elif op == "store":
        out["vector_stores" if vector else "scalar_stores"] = 1
    elif op == "shufflevector":
        out["shuffles"] = 1
    elif op in ("extractelement", "insertelement"):
        out["element_moves"] = 1
    elif op in _CALL:
        callee = instruction[instruction.find("@"):].split("(", 1)[0]
        if "masked.gather" in callee or "masked.scatter" in callee:
            out["gathers"] = 1
        elif "vector.reduce" in callee:
            parts, lanes = _parts(instruction, vector_bits)
            halvings = max(0, lanes.bit_length() - 1)
            out["horizontal"] = 1
            out["instructions"] = parts + 2 * halvings
            out["shuffles"] = halvings
            if "fadd" in callee or "fmul" in callee or "fmax" in callee or "fmin" in callee:
                out["vector_flops"] = parts - 1 + halvings
            return out
        elif any(f".{name}." in callee + "." for name in ("fma", "fmuladd")):
            out[flops], out["lanes"] = 2, 2 * width
        elif any(f".{name}." in callee + "." for name in _FP_CALLS):
            out[flops], out["lanes"] = 1, width
        elif any(name in callee for name in _TRANSCENDENTAL):
            if vector and callee.startswith("@llvm."):  # no vector library: the backend calls libm once a lane
                return {"instructions": 3 * width, "transcendental": width, "element_moves": 2 * width, "calls": width}
            out["transcendental"] = 1
        else:
            out["calls"] = 1
    parts, _ = _parts(instruction, vector_bits)
    if parts > 1:
        out = {k: v if k == "lanes" else v * parts for k, v in out.items()}
    return out


def _functions(text: str) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """Each defined function: (its name, its blocks: (label, instructions),
    in printed order)."""
    out: list = []
    blocks = None
    for line in text.splitlines():
        if line.startswith("define "):
            blocks = [("", [])]
            m = _DEFINE.match(line)
            out.append((m.group(1) if m else "", blocks))
            continue
        if blocks is None:
            continue
        if line.startswith("}"):
            blocks = None
            continue
        s = line.strip()
        if not s or s.startswith(";"):
            continue
        m = _LABEL.match(line)
        if m:
            if blocks == [("", [])]:  # the entry block has a label
                blocks.clear()
            blocks.append((m.group(1), []))
            continue
        blocks[-1][1].append(s.split(", !", 1)[0])
    return out


def _trips(blocks: list, header: int, latch: int, defs: dict, order: dict) -> int | None:
    for s in blocks[latch][1]:
        m = _COND_BR.match(s)
        if not m:
            continue
        cond = defs.get(m.group(1), "")
        if _FIRST_PASS.match(cond):  # true the first time round, false the second: LLVM's loop of two
            return 2 if order.get(m.group(2)) == header else None
        cmp = _ICMP.match(cond)
        if not cmp:
            return None
        pred, x, bound = cmp.group(1), cmp.group(2), int(cmp.group(3))
        if pred not in ("eq", "ne", "ult", "slt", "ule", "sle"):
            return None
        step = _STEP.match(defs.get(x, ""))
        if step is None:  # not an induction variable after its step
            return None
        start = _PHI_START.match(defs.get(step.group(1), ""))
        inc = int(step.group(2))
        if start is None or inc <= 0:
            return None
        # the stepped variable leaves at the bound (eq/ne/ult...), or one past it (ule)
        span = bound - int(start.group(1)) + (1 if pred in ("ule", "sle") else 0)
        if span <= 0:
            return None
        return max(1, math.ceil(span / inc))
    return None


def _loops(blocks: list, order: dict) -> list[Loop]:
    """The natural loops of one function's blocks (trip counts unset)."""
    succ = [[order[t] for s in body for t in _TARGET.findall(s) if t in order] for _, body in blocks]
    pred: list = [[] for _ in blocks]
    for i, targets in enumerate(succ):
        for j in targets:
            pred[j].append(i)
    back: dict = {}  # header -> its latches
    state = [0] * len(blocks)  # 0 unseen, 1 on the path, 2 done
    stack = [(0, iter(succ[0]))] if blocks else []
    if blocks:
        state[0] = 1
    while stack:
        node, it = stack[-1]
        for j in it:
            if state[j] == 1:
                back.setdefault(j, []).append(node)
            elif state[j] == 0:
                state[j] = 1
                stack.append((j, iter(succ[j])))
                break
        else:
            state[node] = 2
            stack.pop()
    loops = []
    for header, latches in sorted(back.items()):
        body, work = {header}, [lt for lt in latches if lt != header]
        body.update(work)
        while work:
            for q in pred[work.pop()]:
                if q not in body:
                    body.add(q)
                    work.append(q)
        loops.append(Loop(header, max(latches), UNKNOWN_TRIPS, False, body=frozenset(body)))
    return loops


def _chain(blocks: list, loop: Loop, defs: dict) -> int:
    """Floating-point operations on the longest chain a header phi carries
    from one iteration to the next."""
    inside = {name for i in loop.body for s in blocks[i][1] if (m := _DEF.match(s)) for name in [m.group(1)]}
    best = 0
    for s in blocks[loop.header][1]:
        m = _DEF.match(s)
        if not m or not m.group(2).startswith("phi") or not ("float" in s or "double" in s):
            continue
        phi = m.group(1)
        memo: dict = {}

        def depth(name: str, seen: int = 0) -> int:
            """FP operations from the phi to ``name`` (-1: not reached)."""
            if name == phi:
                return 0
            if name not in inside or seen > 64:
                return -1
            if name in memo:
                return memo[name]
            memo[name] = -1
            body = defs[name]
            if body.startswith("phi"):
                return -1
            reached = [d for d in (depth(n, seen + 1) for n in _NAME.findall(body)) if d >= 0]
            got = -1
            if reached:
                got = max(reached) + (1 if _kinds(f"{name} = {body}").get("lanes") else 0)
            memo[name] = got
            return got

        for incoming in _NAME.findall(m.group(2)):
            if incoming in inside:
                best = max(best, depth(incoming))
    return best


def _block_cycles(kinds: dict) -> float:
    memory = kinds["vector_loads"] + kinds["scalar_loads"] + kinds["vector_stores"] + kinds["scalar_stores"] + 4 * kinds["gathers"]
    flops = kinds["vector_flops"] + kinds["scalar_flops"] + TRANSCENDENTAL * kinds["transcendental"]
    stores = kinds["vector_stores"] + kinds["scalar_stores"]
    shuffles = kinds["shuffles"] + kinds["element_moves"]
    return max(kinds["instructions"] / ISSUE, memory / MEMORY, stores / STORES, shuffles / SHUFFLES, flops / FLOPS)


def _count(blocks: list, vector_bits: int, threads: int) -> tuple[IrCounts, list[tuple[str, float]]]:
    """One function's counts, each block times the loops around it, and the
    functions it forks an OpenMP team on: (name, times)."""
    out = IrCounts()
    order = {label: i for i, (label, _) in enumerate(blocks)}
    defs = {m.group(1): m.group(2) for _, body in blocks for s in body if (m := _DEF.match(s))}
    bounds = {m.group(2): int(m.group(1)) for _, body in blocks for s in body if (m := _STATIC_BOUND.match(s))}
    share = None  # a thread's iterations of the loop OpenMP's static schedule splits
    if "lowerbound" in bounds and "upperbound" in bounds:
        share = max(1, math.ceil((bounds["upperbound"] - bounds["lowerbound"] + 1) / max(1, threads)))
    loops = _loops(blocks, order)
    for lp in loops:
        trips = _trips(blocks, lp.header, lp.latch, defs, order)
        if trips is None and share is not None and not any(o is not lp and lp.body < o.body for o in loops):
            trips = share  # its bounds are the ones __kmpc_for_static_init hands this thread
        lp.trips, lp.known = trips or UNKNOWN_TRIPS, trips is not None
    out.loops += len(loops)
    out.unknown_trips += sum(not lp.known for lp in loops)
    innermost = [lp for lp in loops if not any(o is not lp and o.body < lp.body for o in loops)]
    per_block, before, forks = [], [], []
    for i, (_, body) in enumerate(blocks):
        kinds = dict.fromkeys(KINDS, 0)
        runs = math.prod(lp.trips for lp in loops if i in lp.body)
        for s in body:
            for k, v in _kinds(s, vector_bits).items():
                kinds[k] += v
            fork = _FORK.search(s)
            if fork:
                kinds["forks"] += 1
                forks.append((fork.group(1), runs))
        per_block.append(kinds)
        for k in KINDS:
            out.counts[k] += runs * kinds[k]
            out.static[k] += kinds[k]
        before.append(_block_cycles(kinds))
        out.cycles += runs * before[-1]
    registers = 32 if vector_bits >= 512 else 16
    for lp in innermost:
        carried = sum(_parts(s, vector_bits)[0] for s in blocks[lp.header][1] if _VECTOR_PHI.match(s))
        spilled = max(0, carried + SPARE_REGISTERS - registers)
        if spilled:
            moves = SPILL_COST * spilled
            kinds = per_block[lp.header]
            runs = math.prod(o.trips for o in loops if lp.header in o.body)
            for k, v in (("spills", spilled), ("vector_loads", moves), ("vector_stores", moves), ("instructions", 2 * moves)):
                kinds[k] += v
                out.counts[k] += runs * v
                out.static[k] += v
            out.cycles += runs * (_block_cycles(kinds) - before[lp.header])
    for lp in innermost:
        lp.chain = _chain(blocks, lp, defs)
        if lp.chain:
            runs = math.prod(o.trips for o in loops if lp.header in o.body)
            body = sum(_block_cycles(per_block[i]) for i in lp.body)
            out.cycles += runs * max(0.0, lp.chain * CHAIN_LATENCY - body)
    return out, forks


def ir_counts(llvm_ir: str, vector_bits: int = VECTOR_BITS, threads: int = 1) -> IrCounts:
    """The dynamic counts of ``llvm_ir`` (optimised LLVM IR text) on a
    target whose vector registers hold ``vector_bits``, OpenMP teams of
    ``threads``: a function a parallel loop was outlined into counts once
    for every time it is forked, and its loop one thread's share of the
    iterations (the time of the team is that thread's), each fork
    ``FORK_CYCLES`` more."""
    out = IrCounts(vectorized_loops=llvm_ir.count('"llvm.loop.isvectorized"'))
    counted = {name: _count(blocks, vector_bits, threads) for name, blocks in _functions(llvm_ir)}
    sites: dict = {}
    for caller, (_, forks) in counted.items():
        for callee, runs in forks:
            sites.setdefault(callee, []).append((caller, runs))

    def times(name: str, depth: int = 0) -> float:
        """How often ``name`` runs a call of the kernel (entry points once)."""
        if name not in sites or depth > 8:
            return 1.0
        return sum(runs * times(caller, depth + 1) for caller, runs in sites[name])

    for name, (c, forks) in counted.items():
        n = times(name)
        for k in KINDS:
            out.counts[k] += n * c.counts[k]
            out.static[k] += c.static[k]
        out.cycles += n * (c.cycles + FORK_CYCLES * sum(runs for _, runs in forks))
        out.loops += c.loops
        out.unknown_trips += c.unknown_trips
    return out


_LOCAL = re.compile(r"(?<![\w.$@])(%[-\w.$]+|![-\w.$]+|^[-\w.$]+(?=:))", re.M)
_COMMENT = re.compile(r"\s*;.*$", re.M)


def code_key(llvm_ir: str) -> str:
    """A digest of what ``llvm_ir`` (optimised LLVM IR text) computes, the
    same for two modules that differ only in the names of their values,
    blocks and metadata and in comments: schedules whose code LLVM made
    identical (a split it folded back, an unroll of a loop it unrolls
    anyway) have one key, and one measurement tells both."""
    names: dict = {}

    def rename(m: re.Match) -> str:
        name = m.group(1)
        kind = name[0] if name[0] in "%!" else ""
        return names.setdefault(name, f"{kind or 'L'}{len(names)}")

    text = _COMMENT.sub("", llvm_ir)
    lines = [line.rstrip() for line in text.splitlines() if line.strip() and not line.startswith("source_filename")]
    return hashlib.sha1(_LOCAL.sub(rename, "\n".join(lines)).encode()).hexdigest()
