// lt-opt --help ends with the lt passes that --pass-pipeline takes (the
// list --list-passes prints), each with its options and summary.
// RUN: lt-opt --help | filecheck %s
// CHECK: --list-passes
// CHECK: lt passes (mix with any upstream MLIR pass):
// CHECK: lt-split{loop=int factor=int}  Split a loop
// CHECK: (--list-passes prints this list alone)
