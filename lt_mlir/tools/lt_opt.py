"""lt-opt: an mlir-opt-style driver for lt modules.

    lt-opt input.mlir --pass-pipeline='builtin.module(lower-lt-to-scf)'
    lt-opt input.mlir --emit=loop-tree
    lt-opt input.mlir --emit=asm -o kernel.s
    lt-opt input.mlir --emit=asm --mcpu=skylake-avx512 --mattr=-fma
    lt-opt input.mlir --run
    lt-opt input.mlir --profile           # each loop's share and own time on the loop tree
    lt-opt input.mlir -p 'builtin.module(lt-gpu-auto)' --emit=ptx --gpu-arch=sm_90
    lt-opt model.mlir --import=linalg --emit=loop-tree   # a linalg-on-tensors module (torch-mlir's output)

Errors are one line (``file:line:col: error: ...``) on stderr with exit code 1.
"""

from __future__ import annotations

import argparse
import os
import sys

EMITS = ("mlir", "loop-tree", "llvm", "asm", "ptx", "launch-plan")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 1, as for every other user error
        sys.stderr.write(f"lt-opt: error: {message}\n")
        sys.exit(1)

    def format_help(self) -> str:  # --help ends with the passes --pass-pipeline takes
        return super().format_help() + "\n" + _passes_help()


def _passes_help() -> str:
    """The pass list for --help (the registry loads only when help is asked for)."""
    try:
        listing = _list_passes()
    except ImportError as e:  # no MLIR bindings: say where the list is
        return f"lt-opt --list-passes lists the lt passes (it needs the MLIR bindings: {e})\n"
    return listing + "\n(--list-passes prints this list alone)\n"


def _arg_parser() -> argparse.ArgumentParser:
    from ..targets import TARGETS

    p = _Parser(prog="lt-opt", description="Transform, lower, print and run lt modules.")
    p.add_argument("input", nargs="?", default="-", help="input .mlir file ('-' or nothing: stdin)")
    p.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    p.add_argument("--pass-pipeline", "-p", action="append", default=[], metavar="PIPELINE",
                   help="pipeline of lt and upstream passes, e.g. 'builtin.module(lower-lt-to-scf,canonicalize)'")
    p.add_argument("--emit", choices=EMITS, default=None, help="what to print (default: mlir; not with --run or --profile)")
    p.add_argument("--gpu-arch", default="sm_90", help="GPU architecture for --emit=ptx|launch-plan (default sm_90)")
    p.add_argument("--mcpu", default=None, metavar="NAME",
                   help="CPU for --emit=llvm|asm and --run (default: this host; 'help' lists CPUs and features)")
    p.add_argument("--mattr", default=None, metavar="+f1,-f2", help="CPU features to add (+) or remove (-)")
    p.add_argument("--fastmath", default=None, metavar="MODE",
                   help="floating-point mode of every function: default (FMA contraction; NaNs propagate through "
                   "max/min, the sign of their zero unspecified), strict (IEEE 754), fast, or LLVM flags such as "
                   "nnan,nsz (sets lt.fastmath)")
    p.add_argument("--entry", default=None, help="function to compile/run (default: the first)")
    p.add_argument("--import", dest="import_", choices=("linalg",), default=None,
                   help="the input is a linalg-on-tensors module (torch-mlir's output): import it into lt loop nests "
                        "with the default schedule first (weights become arguments)")
    run = p.add_mutually_exclusive_group()
    run.add_argument("--run", action="store_true", help="compile, run on random inputs, report the time")
    run.add_argument("--profile", action="store_true",
                     help="time the loops (an instrumented build; loops entered over 4096 times a call "
                          "count in their parent; on a GPU mapping, thread 0 of each block times them) on random inputs; "
                          "print the annotated loop tree")
    p.add_argument("--target", choices=tuple(TARGETS), default="cpu",
                   help="what --run and --profile compile for (cuda-emulated: the GPU lowering on the CPU)")
    p.add_argument("--repeat", type=int, default=20, help="timed runs for --run and --profile (default 20)")
    p.add_argument("--seed", type=int, default=0, help="random seed for --run and --profile inputs")
    p.add_argument("--split-input-file", action="store_true",
                   help="process each '// -----' separated chunk on its own (errors keep their line numbers)")
    p.add_argument("--list-passes", action="store_true", help="list the lt passes and exit")
    return p


def _read(path: str) -> tuple[str, str]:
    from ..errors import read_module_file

    return read_module_file(path, "lt-opt")


_PYTHON_STARTS = ("import ", "from ", "def ", "#!", "class ", "print(", '"""')


def looks_like_python(text: str) -> bool:
    """Whether ``text`` is Python source rather than MLIR (its first
    statement line)."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        return line.startswith(_PYTHON_STARTS) or (line.startswith("#") and not line.startswith("#loc") and not line.startswith("#map"))
    return False


def _write(path: str, text: str) -> None:
    if not text.endswith("\n"):
        text += "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as e:
        from ..errors import LtError

        raise LtError(f"error: cannot write '{path}': {e.strerror}") from None


def _list_passes() -> str:
    from ..passes.registry import registry

    lines = []
    for name, info in sorted(registry().items()):
        opts = " ".join(
            f"{o.name}={o.type.__name__}" + ("" if o.default is None else f"(={o.default})")
            for o in info.options.values()
        )
        lines.append(f"  {name}{'{' + opts + '}' if opts else ''}  {info.summary}")
    return "lt passes (mix with any upstream MLIR pass):\n" + "\n".join(lines)


def _random_arrays(specs, seed: int) -> list:
    """Seeded random inputs (standard normal floats, integers in [-100, 100)) and zeroed outputs."""
    import numpy as np

    from ..runtime.specs import random_inputs

    inputs = iter(random_inputs(specs, seed))
    return [np.zeros(spec.shape, spec.dtype) if spec.written else next(inputs) for spec in specs]


PROGRESS_AFTER = 2.0  # seconds: a --run expected to take longer reports its progress


def _timed_runs(fn, repeat: int, name: str) -> list[float]:
    """Run ``fn`` once to warm up, then up to ``repeat`` timed runs; when the
    whole would take over PROGRESS_AFTER seconds, say so on stderr and show
    progress.  Ctrl-C stops at once with the runs measured so far."""
    import time

    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    verbose = first * repeat > PROGRESS_AFTER
    if verbose:
        sys.stderr.write(f"lt-opt: timing @{name}: {repeat} runs of about {first:.2f} s (about {first * repeat:.0f} s; Ctrl-C stops and reports what was measured)\n")
    times: list[float] = []
    try:
        for i in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
            if verbose:
                sys.stderr.write(f"\rlt-opt: run {i + 1} of {repeat}")
                sys.stderr.flush()
    except KeyboardInterrupt:
        if verbose:
            sys.stderr.write("\n")
        sys.stderr.write(f"lt-opt: interrupted after {len(times)} of {repeat} timed runs\n")
        if not times:
            raise
    else:
        if verbose:
            sys.stderr.write("\n")
    return times


def _run(module, args) -> str:
    import numpy as np

    from ..compiler import compile as compile_module

    kernel = compile_module(module, args.entry, target=args.target, cpu=args.mcpu, features=args.mattr)
    arrays = _random_arrays(kernel.specs, args.seed)
    times = sorted(_timed_runs(lambda: kernel(*arrays), args.repeat, kernel.name))
    median = times[len(times) // 2]
    lines = [f"@{kernel.name}: {median * 1e3:.4f} ms (median of {len(times)} runs after warm-up)"]
    for spec, a in zip(kernel.specs, arrays):
        if spec.written:
            lines.append(f"  arg{spec.index} {spec.element}{list(spec.shape)} checksum {float(a.sum(dtype=np.float64)):.6g}")
    return "\n".join(lines)


def _profile(module, args) -> str:
    from ..dialect.entry import find_function, signature
    from ..dialect.loop_tree import loop_tree
    from ..errors import LtError
    from ..profile import profile_loops

    if args.mcpu or args.mattr:
        raise LtError("error: --profile runs on this host's CPU or GPU; drop --mcpu/--mattr")
    specs = signature(find_function(module.operation, args.entry))
    inputs = [a for spec, a in zip(specs, _random_arrays(specs, args.seed)) if not spec.written]
    profile = profile_loops(module, args.entry, inputs, args.repeat, args.target)  # compiles copies of the module
    return profile.annotate(loop_tree(module, args.entry))


def run(argv: list[str] | None = None) -> int:
    parser = _arg_parser()
    args = parser.parse_args(argv)
    if args.emit is not None and (args.run or args.profile):
        parser.error(f"--emit={args.emit} prints a module; --{'run' if args.run else 'profile'} prints timings: use one")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    args.emit = args.emit or "mlir"
    if args.list_passes:
        _write(args.output, _list_passes())
        return 0

    from .. import compiler
    from ..dialect.loop_tree import loop_tree
    from ..errors import LtError, with_filename
    from ..lowering import machine
    from ..lowering.lt_to_scf import fastmath_flags, set_fastmath
    from ..passes.registry import parse_pipeline, run_pipeline

    if args.mcpu == "help":
        _write(args.output, machine.help_text())
        return 0
    cpu_target = machine.cpu_target(args.mcpu, args.mattr)  # bad names: an error before any work
    if args.fastmath is not None:
        fastmath_flags(args.fastmath)  # a bad mode too
    stages = [s for text in args.pass_pipeline for s in parse_pipeline(text)]
    text, filename = _read(args.input)

    def process(chunk: str) -> str:
        if args.import_ == "linalg":
            from ..importers import from_linalg

            chunk = from_linalg(chunk, filename=filename, cpu=args.mcpu, features=args.mattr).start.file_text
        elif "linalg." in chunk and "lt.loop" not in chunk:
            sys.stderr.write("remark: the module holds linalg ops; --import=linalg turns them into lt loop nests\n")
        try:
            module = compiler.parse_module(chunk, filename)
        except LtError:
            if looks_like_python(chunk):
                raise LtError(
                    f"{filename}: error: this is Python source, not an MLIR module; lt-opt reads .mlir files "
                    "(run the program with python, or print a frontend tensor's `.code` into a file)"
                ) from None
            raise
        set_fastmath(module.operation, args.fastmath)
        for remark in run_pipeline(module, stages):
            sys.stderr.write(f"remark: {remark}\n")
        if args.run:
            return _run(module, args)
        if args.profile:
            return _profile(module, args)
        if args.emit == "mlir":
            return str(module)
        if args.emit == "loop-tree":
            return loop_tree(module, args.entry)
        if args.emit in ("ptx", "launch-plan"):
            import json

            from ..analysis.gpu_mapping import mapping
            from ..dialect.loop_tree import preorder_loops

            if not any(mapping(loop) for loop in preorder_loops(module.operation)):
                sys.stderr.write(
                    "remark: no loop is mapped to the GPU: every statement runs on one GPU thread "
                    "(map loops with lt-gpu-map or lt-gpu-auto, e.g. -p 'builtin.module(lt-gpu-auto)')\n"
                )
            cuda = compiler.lower_cuda(module, args.entry, filename, arch=args.gpu_arch)
            if args.emit == "ptx":
                return cuda.ptx
            lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in cuda.meta.items() if k != "launches"]
            launches = ",\n  ".join(json.dumps(launch) for launch in cuda.meta["launches"])
            return "{" + ",\n ".join(lines) + ',\n "launches": [\n  ' + launches + "]}"
        lowered = compiler.lower(module, args.entry, filename, vector_math=True, cpu=args.mcpu, features=args.mattr)  # what --run runs
        mod = machine.optimize(lowered.llvm_ir, cpu_target)
        return str(mod) if args.emit == "llvm" else machine.emit_assembly(mod, cpu_target)

    if not args.split_input_file:
        try:
            _write(args.output, process(text))
        except LtError as e:
            raise with_filename(e, filename) from None
        return 0
    outputs, failed = [], False
    for chunk in _split_chunks(text):
        try:
            outputs.append(process(chunk))
        except LtError as e:
            sys.stderr.write(f"{with_filename(e, filename)}\n")
            failed = True
    _write(args.output, "\n// -----\n".join(o.rstrip("\n") for o in outputs))
    return 1 if failed else 0


def _split_chunks(text: str) -> list[str]:
    """Chunks between '// -----' lines, each padded with blank lines so that
    locations keep the line numbers of the whole file."""
    chunks, current, offset = [], [], 0
    for line in text.splitlines():
        if line.strip() == "// -----":
            chunks.append("\n" * offset + "\n".join(current))
            offset += len(current) + 1
            current = []
        else:
            current.append(line)
    chunks.append("\n" * offset + "\n".join(current))
    return chunks


def main(argv: list[str] | None = None) -> int:
    from ..errors import LtError, is_interrupt

    try:
        code = run(argv)
    except LtError as e:
        msg = str(e)
        sys.stderr.write((msg if "error:" in msg else f"error: {msg}") + "\n")
        code = 1
    except KeyboardInterrupt:
        code = 130
    except Exception as e:  # a bug in lt_mlir, not the user's: still one line
        if is_interrupt(e):  # a Ctrl-C in an IR walk's callback, as MLIR's RuntimeError
            code = 130
        elif os.environ.get("LT_OPT_DEBUG"):
            raise
        else:
            sys.stderr.write(f"lt-opt: internal error: {type(e).__name__}: {e} (set LT_OPT_DEBUG=1 for a traceback)\n")
            code = 1
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
