"""``from_torch``, ``from_onnx`` and ``from_linalg``: models to ``Model``s.

* ``from_torch(module, *example_inputs)``: ``torch.export`` (the example
  inputs fix the shapes), then torch-mlir's FX importer lowers it to
  linalg on tensors.  A hook of that importer takes every weight (a
  parameter, buffer or constant tensor) as a NumPy array, named after it
  (``fc1.weight``), instead of letting torch-mlir copy it element by
  element into the IR.  Needs torch (CPU build).
* ``from_onnx(path_or_model)``: torch-mlir's ONNX importer, the ONNX ops
  converted to torch's (``convert-torch-onnx-to-torch``) and lowered to
  linalg by the same backend pipeline; the initializers are the weights.
  Needs ``onnx`` only.
* ``from_linalg(text_or_path)``: a linalg-on-tensors module (as
  ``torch-mlir-opt``/``mlir-opt`` write it, weights in its
  ``dialect_resources``).

An op lt_mlir cannot take is an ``ImportError`` naming it and the model's
source line; torch-mlir's own failures (an op it cannot lower) are the same
error class with its message.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..errors import LtError, from_mlir_error, read_module_file
from ..mlir import ir, onnx_importers, passmanager, torch_importers
from .linalg import ImportError, import_linalg
from .model import Model

LINALG_PIPELINE = "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)"
ONNX_PIPELINE = ("builtin.module(func.func(convert-torch-onnx-to-torch), torch-lower-to-backend-contract,"
                 " func.func(cse, canonicalize), torch-backend-to-linalg-on-tensors-backend-pipeline)")

timings: dict = {}  # the last import's phases, in seconds (bench_torch.py reports them)


def from_torch(module, *example_inputs, name: str | None = None, **options) -> Model:
    """A torch ``nn.Module`` (or an ``ExportedProgram``) as a ``Model`` of
    the shapes of ``example_inputs``.  ``options`` go to ``Model`` (``target``,
    ``fuse``, ``parallel``, ``vectorize``; ``cpu``/``features``: the LLVM CPU
    and features whose vector register the default schedule is for)."""
    try:
        import torch
    except ModuleNotFoundError:
        raise ImportError("error: from_torch needs torch (pip install torch; the CPU build is enough)") from None
    fx, fx_importer, torch_dialect = torch_importers()
    t0 = time.perf_counter()
    if isinstance(module, torch.export.ExportedProgram):
        program = module
    else:
        if not isinstance(module, torch.nn.Module):
            raise ImportError(f"error: from_torch takes a torch.nn.Module or an ExportedProgram, got {type(module).__name__}")
        try:
            program = torch.export.export(module, tuple(example_inputs))
        except Exception as e:  # torch.export's own errors: many classes
            raise ImportError(f"error: torch.export failed: {_first_line(e)}") from None
    t1 = time.perf_counter()
    data: dict = {}
    names: dict = {}
    made: dict = {}  # a tensor's storage -> the literal made for it
    known = {}  # a weight's storage -> its name in the model (fc1.weight)
    for n, t in list(program.state_dict.items()) + list(getattr(program, "constants", {}).items()):
        if isinstance(t, torch.Tensor):
            known[(t.data_ptr(), tuple(t.shape), tuple(t.stride()))] = n

    class Weights(fx_importer.FxImporterHooks):
        def resolve_literal(self, gni, literal, info):
            if not isinstance(literal, torch.Tensor) or literal.numel() <= 1:
                return None
            identity = (literal.data_ptr(), tuple(literal.shape), tuple(literal.stride()), literal.dtype)
            if identity in made:  # a parameter used twice is one weight (its first literal dominates the rest)
                return made[identity]
            try:
                array = np.array(literal.detach().cpu().numpy(), order="C", copy=True)  # a snapshot, not the parameter
            except Exception:  # a fake tensor: torch-mlir's own path
                return None
            key = f"lt_weight_{len(data)}"
            data[key] = array
            target = getattr(getattr(info, "input_spec", None), "target", None)
            names[key] = str(target or known.get((literal.data_ptr(), tuple(literal.shape), tuple(literal.stride()))) or key)
            attr = ir.DenseResourceElementsAttr.get_from_buffer(array, key, fx_importer.create_mlir_tensor_type(literal))
            vtype = gni._cc.tensor_to_vtensor_type(literal)
            made[identity] = ir.Operation.create("torch.vtensor.literal", results=[vtype], attributes={"value": attr}).result
            return made[identity]

    user_inputs = list(program.graph_signature.user_inputs)
    for k, n in enumerate(user_inputs):
        names[("input", k)] = str(n)
    try:
        linalg = fx.export_and_import(program, output_type="linalg-on-tensors", hooks=Weights())
    except Exception as e:  # torch-mlir raises MLIRError, RuntimeError, NotImplementedError ...
        raise ImportError(f"error: torch-mlir could not lower the model to linalg: {_first_line(e)}") from None
    t2 = time.perf_counter()
    imported = import_linalg(linalg, resources=data, names=names)
    if len(imported.outputs) != len(program.graph_signature.user_outputs):  # torch-mlir returns the new buffers first
        raise ImportError(f"error: the module changes its own state when it runs ({len(imported.outputs) - len(program.graph_signature.user_outputs)} "
                          "buffers updated: a training-mode batch norm, an in-place update); lt_mlir imports pure functions: "
                          "call .eval() first, or return the state")
    t3 = time.perf_counter()
    flat, _ = torch.utils._pytree.tree_flatten(tuple(example_inputs))  # a list or dict argument: its tensors, in order
    example = [np.ascontiguousarray(x.detach().cpu().numpy()) if isinstance(x, torch.Tensor) else np.asarray(x)
               for x in flat]
    options.setdefault("example", example)
    model = Model(imported, name or type(module).__name__, **options)
    timings.update(export=t1 - t0, torch_mlir=t2 - t1, to_lt=t3 - t2, schedule=time.perf_counter() - t3)
    return model


def from_onnx(model, name: str | None = None, **options) -> Model:
    """An ONNX model (a path or an ``onnx.ModelProto``) as a ``Model``."""
    try:
        import onnx
        from onnx import numpy_helper
    except ModuleNotFoundError:
        raise ImportError("error: from_onnx needs the onnx package (pip install onnx)") from None
    onnx_importer, torch_dialect = onnx_importers()
    t0 = time.perf_counter()
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            proto = onnx.load(path)
        except (OSError, onnx.onnx_cpp2py_export.checker.ValidationError if hasattr(onnx, "onnx_cpp2py_export") else OSError) as e:
            raise ImportError(f"error: {path}: {_first_line(e)}") from None
        except Exception as e:  # a file that is not an ONNX protobuf
            raise ImportError(f"error: {path}: not an ONNX model ({_first_line(e)})") from None
        name = name or os.path.splitext(os.path.basename(path))[0]
    else:
        proto = model
    try:
        proto = onnx.shape_inference.infer_shapes(proto)
    except Exception as e:
        raise ImportError(f"error: ONNX shape inference failed: {_first_line(e)}") from None
    ctx = ir.Context()
    torch_dialect.register_dialect(ctx)
    try:
        info = onnx_importer.ModelInfo(proto)
        module = info.create_module(context=ctx)
        onnx_importer.NodeImporter.define_function(info.main_graph, module.operation).import_all()
    except Exception as e:
        raise ImportError(f"error: torch-mlir could not import the ONNX model: {_first_line(e)}") from None
    try:
        passmanager.PassManager.parse(ONNX_PIPELINE, context=ctx).run(module.operation)
    except ir.MLIRError as e:
        raise from_mlir_error(e, ImportError) from None
    t1 = time.perf_counter()
    data, names = {}, {}
    for init in proto.graph.initializer:
        key = _sanitize(init.name)
        data[key] = np.ascontiguousarray(numpy_helper.to_array(init))
        names[key] = init.name
        names[("bytes", tuple(data[key].shape), data[key].tobytes())] = init.name  # converted to a dense<...> constant
    initializers = {i.name for i in proto.graph.initializer}
    for k, inp in enumerate(i for i in proto.graph.input if i.name not in initializers):
        names[("input", k)] = inp.name
    imported = import_linalg(module, resources=data, names=names)
    t2 = time.perf_counter()
    result = Model(imported, name or proto.graph.name or "onnx", **options)
    timings.update(onnx_to_linalg=t1 - t0, to_lt=t2 - t1, schedule=time.perf_counter() - t2)
    return result


def from_linalg(source, name: str | None = None, filename: str = "-", **options) -> Model:
    """A linalg-on-tensors module (its text, or a file) as a ``Model``;
    ``filename`` names the text in errors."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if "func.func" not in source and os.path.exists(source):
        source, filename = read_module_file(source, "from_linalg")
    return Model(import_linalg(source, filename=filename), name or "linalg", **options)


def _sanitize(name: str) -> str:
    """The resource name torch-mlir's ONNX importer gives an initializer."""
    import re

    if not name.isidentifier():
        name = "_" + name
    return re.sub(r"[^\w\.]", "_", name)


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return " ".join(text.splitlines()[0].split())


__all__ = ["ImportError", "LtError", "Model", "from_linalg", "from_onnx", "from_torch", "timings"]
