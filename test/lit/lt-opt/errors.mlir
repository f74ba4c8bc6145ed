// Every user mistake is one line on stderr and exit code 1, never a traceback.
// RUN: not lt-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | filecheck %s --check-prefix=PASS
// PASS: error: invalid pass pipeline 'no-such-pass': 'no-such-pass' does not refer to a registered pass or pass pipeline
// RUN: not lt-opt %s --pass-pipeline='builtin.module(lower-lt-to-scf{fast=1})' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: error: lower-lt-to-scf: unknown option 'fast' (options: check-bounds)
// RUN: not lt-opt %s --pass-pipeline='builtin.module(canonicalize{max-iterations=x})' 2>&1 | filecheck %s --check-prefix=UPOPTION
// UPOPTION: error: invalid pass pipeline 'canonicalize{max-iterations=x}'
// RUN: not lt-opt %s --pass-pipeline='builtin.module(canonicalize' 2>&1 | filecheck %s --check-prefix=PAREN
// PAREN: error: unclosed ')' expected in pipeline
// RUN: not lt-opt %s --emit=pdf 2>&1 | filecheck %s --check-prefix=EMIT
// EMIT: lt-opt: error: argument --emit: invalid choice: 'pdf'
// RUN: not lt-opt %s --frobnicate 2>&1 | filecheck %s --check-prefix=FLAG
// FLAG: lt-opt: error: unrecognized arguments: --frobnicate
// RUN: not lt-opt %s.missing 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: error: cannot read '{{.*}}errors.mlir.missing': No such file or directory
// RUN: not lt-opt %s --run --entry nope 2>&1 | filecheck %s --check-prefix=ENTRY
// ENTRY: error: no function @nope in the module (it has @copy)
// RUN: not lt-opt %s --emit=llvm --pass-pipeline='builtin.module(lower-lt-to-llvm)' 2>&1 | filecheck %s --check-prefix=TWICE
// TWICE: error: the module has no func.func with a body to compile (was it lowered already?)
// RUN: not lt-opt %s --pass-pipeline='builtin.module(lower-lt-to-scf)' --emit=loop-tree -o %S/no-such-dir/out.txt 2>&1 | filecheck %s --check-prefix=OUT
// OUT: error: cannot write '{{.*}}no-such-dir/out.txt': No such file or directory
func.func @copy(%A: memref<4xf32>, %B: memref<4xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %B[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
