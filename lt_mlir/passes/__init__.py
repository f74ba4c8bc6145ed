"""The loop passes, one per file; importing this package registers them all
in ``registry.REGISTRY`` (the lowering steps register in
``lt_mlir.lowering.passes``)."""

from . import (  # noqa: F401
    cache,
    canonicalize,
    distribute,
    double_buffer,
    expand,
    factor,
    fuse,
    gpu_map,
    hoist,
    merge,
    min_blocks,
    online_softmax,
    pad,
    parallel,
    prefetch,
    prefetch_data,
    prepack,
    resize,
    shrink_buffers,
    sink_factor,
    split,
    swap,
    symmetric,
    unannotate,
    unroll,
    vectorize,
    vectorize_data,
)
