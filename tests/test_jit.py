"""The JIT survives many kernels in one process: its code is built for the
large code model with static relocations, so no reference between its
sections is a 32-bit offset (the small model's PC-relative offsets overflow
when the memory manager places sections over 2 GiB apart: RuntimeDyldELF's
``isInt<32>(RealOffset)`` abort seen in long searches)."""

from __future__ import annotations

import struct

import numpy as np

from lt_mlir import compile, programs
from lt_mlir.lowering import machine
from lt_mlir.schedule import Schedule
from lt_mlir.targets import CompileOptions, get_target

# x86-64 relocation types (ELF psABI)
R_X86_64_64 = 1
NAMES = {1: "R_X86_64_64", 2: "R_X86_64_PC32", 4: "R_X86_64_PLT32", 9: "R_X86_64_GOTPCREL", 10: "R_X86_64_32",
         11: "R_X86_64_32S", 41: "R_X86_64_GOTPCRELX", 42: "R_X86_64_REX_GOTPCRELX"}


def relocation_types(obj: bytes) -> list[int]:
    """The type of every relocation in an ELF64 little-endian object (its
    SHT_RELA sections), read from the bytes."""
    assert obj[:4] == b"\x7fELF" and obj[4] == 2 and obj[5] == 1, "not an ELF64 little-endian object"
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    types = []
    for i in range(shnum):
        _, sh_type, _, _, offset, size, _, _, _, entsize = struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
        if sh_type == 4:  # SHT_RELA: r_offset, r_info, r_addend
            for at in range(offset, offset + size, entsize or 24):
                _, info, _ = struct.unpack_from("<QQq", obj, at)
                types.append(info & 0xFFFFFFFF)
    return types


def _optimized(text: str):
    _, mod, cpu = get_target("cpu").optimized(text, None, CompileOptions(), "-")
    return mod, cpu


def test_jit_code_has_only_64_bit_absolute_relocations():
    s = Schedule(programs.softmax(64, 256))  # calls expf; parallel: calls the OpenMP runtime
    s.parallel(0)
    mod, cpu = _optimized(s.text)
    types = relocation_types(machine.jit_target_machine(cpu).emit_object(mod))
    assert types, "the kernel references no other section?"
    assert set(types) == {R_X86_64_64}, sorted({NAMES.get(t, t) for t in types})
    # the small model (files, assembly) does use 32-bit offsets: the check can tell them apart
    small = relocation_types(machine.target_machine(cpu).emit_object(_optimized(s.text)[0]))
    assert set(small) - {R_X86_64_64}


def test_many_kernels_in_one_process_each_computes_its_result():
    rng = np.random.default_rng(0)
    kernels = []
    for n in range(1, 121):  # 120 distinct modules, each its own JIT engine, all alive at once
        kernel = compile(programs.pointwise_add(n))
        a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        kernels.append((kernel, a, b))
    for kernel, a, b in kernels:
        np.testing.assert_array_equal(kernel(a, b), a + b)


def test_bound_calls_keep_their_kernel_alive():
    """A call made by ``bind``/``bind_inputs`` runs after every other
    reference to its kernel is gone (it holds the JIT code; a freed engine
    was a segmentation fault).  In a child process: a crash must not take
    the test run with it."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent('''
        import gc
        import numpy as np
        import lt_mlir
        text = """
        func.func @f(%A: memref<64xf32>, %B: memref<64xf32>) {
          "lt.loop"() ({
          ^bb0(%i0: index):
            %i = "lt.dim"() {dim = "i"} : () -> index
            %a = memref.load %A[%i] : memref<64xf32>
            %b = arith.addf %a, %a : f32
            memref.store %b, %B[%i] : memref<64xf32>
          }) {dim = "i", size = 64 : i64, tail = 0 : i64} : () -> ()
          return
        }
        """
        a = np.arange(64, dtype=np.float32)
        out = np.zeros(64, np.float32)
        run = lt_mlir.compile(text).bind(a, out)
        fresh = lt_mlir.compile(text).bind_inputs(a)
        gc.collect()
        for _ in range(3):
            lt_mlir.compile(text.replace("addf", "mulf"))  # new engines where the old ones were
            gc.collect()
        run()
        assert np.array_equal(out, 2 * a)
        assert np.array_equal(fresh(), 2 * a)
        print("ok")
    ''')
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-2000:])


def _softmax_parallel_text() -> str:
    s = Schedule(programs.softmax(64, 256))  # exp: a libmvec call; parallel: the OpenMP runtime
    s.parallel(0)
    return s.text


def test_an_object_compiled_once_loads_and_computes_what_compile_makes():
    """``compile_object`` is ``compile``'s code as bytes: loaded back (after
    a pickle round trip) it gives the same bits as ``compile``'s kernel."""
    import pickle

    text = _softmax_parallel_text()
    obj = pickle.loads(pickle.dumps(get_target("cpu").compile_object(text)))
    assert obj.openmp and obj.data[:4] == b"\x7fELF"
    x = np.random.default_rng(1).standard_normal((64, 256)).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    got = obj.kernel()(x)
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(got, compile(text)(x))


VECTOR_EXP = """
func.func @f(%A: memref<1024xf32>, %B: memref<1024xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<1024xf32>
    %e = math.exp %a : f32
    memref.store %e, %B[%i] : memref<1024xf32>
  }) {dim = "i", size = 1024 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_an_object_loads_in_another_process(tmp_path):
    """What one process compiled runs in another that compiled nothing (the
    fuzzer's workers share object code): its OpenMP calls and (on a host
    with AVX2 and glibc's libmvec) its vector exp calls resolve there."""
    import pickle
    import subprocess
    import sys

    rng = np.random.default_rng(2)
    exp = Schedule(VECTOR_EXP).vectorize(0, 8).text
    cases = [(_softmax_parallel_text(), rng.standard_normal((64, 256)).astype(np.float32)),
             (exp, rng.uniform(-80, 80, 1024).astype(np.float32))]
    for i, (text, x) in enumerate(cases):
        obj = get_target("cpu").compile_object(text)
        if i == 1 and machine.vector_math_abi(machine.cpu_target()) is not None:
            assert b"_ZGVdN8v_expf" in obj.data
        (tmp_path / f"k{i}.pickle").write_bytes(pickle.dumps(obj))
        np.save(tmp_path / f"x{i}.npy", x)
    code = (
        "import pickle, sys, numpy as np; d = sys.argv[1]\n"
        "for i in range(2):\n"
        "    k = pickle.load(open(f'{d}/k{i}.pickle', 'rb')).kernel()\n"
        "    np.save(f'{d}/y{i}.npy', k(np.load(f'{d}/x{i}.npy')))\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=120)
    for i, (text, x) in enumerate(cases):
        np.testing.assert_array_equal(np.load(tmp_path / f"y{i}.npy"), compile(text)(x))
