"""A fork server for the lit suite's lt-opt runs.

Most of a short lt-opt run is Python importing lt_mlir, the MLIR bindings,
NumPy and llvmlite (about 0.4 s of CPU a process; the suite starts about
270).  lit.cfg.py starts one server (``lt_opt_server.py --serve SOCKET PID``)
that imports those modules once; each RUN line's ``lt-opt`` is then
``bin/lt-opt``, a client that hands the server its arguments, working
directory, environment and standard streams (over a Unix socket) and exits
with the status of a process the server forks for it.  That child runs the
same ``lt_mlir.tools.lt_opt.main`` with the client's streams, environment
and directory, exactly as ``python -m lt_mlir.tools.lt_opt`` would after
its imports; nothing is computed in the server before the fork (no MLIR
context, no LLVM target machine, no OpenMP runtime), so every run starts
from the state a fresh process has after importing.

The client falls back to the real ``tools/lt-opt`` when no server answers;
``LT_LIT_FORKSERVER=0 lit test/lit`` runs the suite without the server.
The server exits when lit (its parent) does.
"""

import os
import socket
import struct
import sys

# Modules an lt-opt run imports, on its every path (--emit=*, --run,
# --profile, ptx): imported once, in the server.
PRELOAD = (
    "lt_mlir",
    "lt_mlir.tools.lt_opt",
    "lt_mlir.compiler",
    "lt_mlir.dialect.loop_tree",
    "lt_mlir.dialect.entry",
    "lt_mlir.lowering.machine",
    "lt_mlir.lowering.lt_to_scf",
    "lt_mlir.lowering.profile",
    "lt_mlir.passes.registry",
    "lt_mlir.analysis.gpu_mapping",
    "lt_mlir.runtime.specs",
    "lt_mlir.runtime.kernel",
    "lt_mlir.runtime.native",
    "lt_mlir.profile",
    "numpy.random",
    "json",
    "hashlib",
)

_LEN = struct.Struct("!I")


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def client() -> int:
    """``lt-opt ARGS`` through the server at $LT_OPT_SERVER."""
    import marshal

    argv = sys.argv[1:]
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(os.environ["LT_OPT_SERVER"])
    except (OSError, KeyError):  # no server: the real lt-opt
        tool = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools", "lt-opt")
        os.execv(tool, [tool, *argv])
    payload = marshal.dumps((argv, os.getcwd(), dict(os.environ)))
    socket.send_fds(conn, [_LEN.pack(len(payload))], [0, 1, 2])
    conn.sendall(payload)
    try:
        (code,) = struct.unpack("!i", _recv_exact(conn, 4))
    except (EOFError, OSError):
        sys.stderr.write("lt-opt (lit fork server): the run ended without an exit status\n")
        return 1
    return code


def _child(conn: socket.socket) -> None:
    """In the forked process: become the client's lt-opt, run it, report the status."""
    import atexit
    import marshal

    code = 1
    try:
        msg, fds, _, _ = socket.recv_fds(conn, _LEN.size, 3)
        (n,) = _LEN.unpack(msg + _recv_exact(conn, _LEN.size - len(msg)))
        argv, cwd, env = marshal.loads(_recv_exact(conn, n))
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [os.path.join(os.path.dirname(__file__), "bin", "lt-opt"), *argv]
        from lt_mlir.tools import lt_opt

        try:
            code = lt_opt.main(argv)
        except SystemExit as e:  # argparse (--help, usage errors), as at the end of `python -m`
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                sys.stderr.write(f"{e.code}\n")
                code = 1
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - report it the way the interpreter would, then exit 1
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say
                pass
        try:
            conn.sendall(struct.pack("!i", code & 0xFF if code >= 0 else 1))
        except OSError:
            pass
        os._exit(code & 0xFF)


def serve(path: str, parent: int) -> None:
    """Serve on the Unix socket ``path`` while process ``parent`` (lit) is our parent."""
    import importlib
    import signal

    for name in PRELOAD:
        importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".tmp")
    server.listen(64)
    os.rename(path + ".tmp", path)  # the socket appears only when it is ready
    server.settimeout(1.0)
    sys.stdout.flush()
    sys.stderr.flush()
    while os.getppid() == parent:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # lt-opt may wait for its own children
            _child(conn)
        conn.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(client())
