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


# lt-opt through a fork server (lt_opt_server.py says how and why): each RUN
# line's lt-opt is a process forked from one that has imported lt_mlir, not
# a fresh interpreter importing it again.  LT_LIT_FORKSERVER=0 turns it off.
def _start_lt_opt_server():
    import atexit
    import shutil
    import subprocess
    import tempfile
    import time

    here = config.test_source_root
    tmp = tempfile.mkdtemp(prefix="lt-opt-")  # a short path: Unix socket names are limited
    sock = os.path.join(tmp, "s")
    server_py = os.path.join(here, "lt_opt_server.py")
    with open(os.path.join(tmp, "log"), "wb") as log:
        proc = subprocess.Popen([sys.executable, server_py, "--serve", sock, str(os.getpid())], env=dict(config.environment),
                                cwd=tmp, stdin=subprocess.DEVNULL, stdout=log, stderr=log)

    def stop():
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    atexit.register(stop)
    deadline = time.monotonic() + 60
    while not os.path.exists(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            with open(os.path.join(tmp, "log"), errors="replace") as fh:
                lit_config.warning("lt-opt fork server did not start; running lt-opt directly\n" + fh.read()[-2000:])
            return
        time.sleep(0.02)
    config.environment["LT_OPT_SERVER"] = sock
    config.environment["LT_OPT_CLIENT"] = server_py
    config.environment["PATH"] = os.pathsep.join([os.path.join(here, "bin"), config.environment["PATH"]])


if os.environ.get("LT_LIT_FORKSERVER", "1") != "0":
    _start_lt_opt_server()

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
