# lit configuration: `lt-opt` from tools/ (run with this interpreter), the
# Python FileCheck clone as `filecheck`.
import os
import sys

import lit.formats

config.name = "lt_mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
config.excludes = ["Output"]

root = os.path.dirname(os.path.dirname(config.test_source_root))
path = [os.path.join(root, "tools"), os.path.dirname(sys.executable), config.environment.get("PATH", os.environ["PATH"])]
config.environment["PATH"] = os.pathsep.join(path)
config.environment["LT_PYTHON"] = sys.executable
config.environment["PYTHONPATH"] = root

# Nothing here depends on the host CPU: tests that check vector widths or
# instruction choice pin it (lt-opt --mcpu=znver2 for AVX2, znver4 for
# AVX-512); tests that run code run it on the host.

# ptxas from the nvidia-cuda-nvcc wheel (a test dependency): PTX the compiler
# emits must assemble.
import glob

_ptxas = sorted(glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "nvidia", "cu*", "bin", "ptxas")))
if _ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas[-1]))
