"""Notebook kernels forked from a process that has already imported TensorFlow.

Every notebook's Setup cell imports TensorFlow: about 3 CPU-seconds, a third of executing the
shorter notebooks, and `make test` starts twenty kernels. So pytest starts one *zygote* that
imports TensorFlow, SciPy's stats and ipykernel the way a notebook kernel would (with the
environment `helpers.notebook.prepare_tensorflow` sets), and forks a kernel from it for every
kernel start. The kernel still runs every cell of the notebook, in a process of its own.

jupyter_client does not know: where it would run ``python -m ipykernel_launcher -f FILE``,
``install()`` makes it run this file as a small *stand-in* process instead. The stand-in
hands its working folder, environment and standard streams to the zygote, which forks the
kernel; the stand-in then lives exactly as long as the kernel, passes on the signals
jupyter_client sends (interrupt, terminate), and a killed stand-in takes its kernel with it;
it ends when the process that started it does, as ipykernel's parent poller would.

``NOTEBOOK_KERNELS=fresh`` turns this off (every kernel a new ``python -m ipykernel_launcher``);
`make stability` runs the notebook checks that way once. Off on other systems than Linux.
"""

import json
import os
import signal
import socket
import sys

STREAMS = [0, 1, 2]  # the stand-in's stdin, stdout and stderr become the kernel's own
SOCKET = "FORKED_KERNELS_SOCKET"  # the zygote's address, for the processes pytest starts


def forking() -> bool:
    """Whether kernels are forked: on Linux (macOS's system libraries do not survive a fork
    without exec), unless ``NOTEBOOK_KERNELS=fresh``."""
    return sys.platform == "linux" and os.environ.get("NOTEBOOK_KERNELS") != "fresh"


def install(start_now: bool = False) -> None:
    """Make jupyter_client start this interpreter's ipykernel as forks of a zygote.

    The zygote starts at the first kernel, or now (``start_now``: while xdist's workers are
    still collecting); it serves the workers started after it, which find it in ``SOCKET``.
    """
    if not forking():
        return
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.provisioning import local_provisioner

    # The zygote runs with the Python options of the kernel JupyterLab starts (-Xfrozen_modules=off:
    # the standard library loaded from files), and every kernel of this interpreter is its fork.
    argv = KernelSpecManager().get_kernel_spec("python3").argv
    flags = argv[1 : argv.index("-m")] if argv[0] == sys.executable else []
    launch = local_provisioner.launch_kernel

    def launch_kernel(cmd, **kwargs):
        # python [FLAGS] -m ipykernel_launcher ARGS
        module = cmd.index("ipykernel_launcher") if "ipykernel_launcher" in cmd else 0
        if cmd[0] != sys.executable or module < 2 or cmd[module - 1] != "-m":
            return launch(cmd, **kwargs)  # another interpreter or kernel: as usual
        return launch([sys.executable, __file__, zygote(flags), *cmd[module + 1 :]], **kwargs)

    local_provisioner.launch_kernel = launch_kernel
    if start_now:
        zygote(flags)


def zygote(flags: list[str]) -> str:
    """The zygote's socket; the zygote is started (``python FLAGS``) if there is none yet."""
    import subprocess
    import tempfile
    import time

    if SOCKET not in os.environ:
        path = os.path.join(tempfile.mkdtemp(prefix="zygote-"), "socket")
        process = subprocess.Popen(
            [sys.executable, *flags, __file__, "--serve", path], stdin=subprocess.PIPE
        )
        while not os.path.exists(path):  # bound and listening: stand-ins may connect
            if process.poll() is not None:
                raise RuntimeError(f"the kernel zygote exited ({process.returncode})")
            time.sleep(0.01)
        os.environ[SOCKET] = path
        zygote.process = process  # its pipe closes when this process ends: then it ends too
    return os.environ[SOCKET]


# ---------------------------------------------------------------- the zygote


def serve(path: str) -> None:
    """Import what every kernel imports, then fork a kernel for every stand-in that connects."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()  # the first stand-ins wait in line while TensorFlow is imported
    del sys.path[0]  # this file's folder: a kernel's path does not have it
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    os.environ.update(TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")
    import ipykernel.kernelapp  # noqa: F401
    import scipy.stats  # noqa: F401  (0.7 s more in notebooks 04, 08 and 10)
    import tensorflow  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # kernels are reaped by the system
    os.set_blocking(0, False)
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(0, selectors.EVENT_READ)  # a pipe from pytest's process: EOF when it ends
    while True:
        for key, _ in selector.select():
            if key.fileobj == 0:
                if not os.read(0, 4096):
                    listener.close()
                    os.unlink(path)
                    os.rmdir(os.path.dirname(path))
                    return
                continue
            connection, _ = listener.accept()
            fds = []
            try:  # a request that cannot be read ends its stand-in, not the zygote
                message, fds, _, _ = socket.recv_fds(connection, 1 << 20, len(STREAMS))
                size, message = int.from_bytes(message[:8], "little"), message[8:]
                while len(message) < size and (more := connection.recv(size - len(message))):
                    message += more
                request = json.loads(message)
            except (OSError, ValueError):
                request = None
            if request is not None and os.fork() == 0:
                listener.close()
                run_kernel(connection, request, fds)
            connection.close()
            for fd in fds:
                os.close(fd)


def run_kernel(connection: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: become the kernel the stand-in was asked to start; never return."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the notebook waits for its subprocesses
        os.setsid()  # a session of its own, like a kernel that jupyter_client starts
        for fd, stream in zip(fds, STREAMS, strict=True):
            os.dup2(fd, stream)
            os.close(fd)
        os.set_blocking(0, True)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        connection.sendall(f"{os.getpid()}\n".encode())
        import threading

        # The stand-in's end closes when it ends, even by SIGKILL: then this kernel ends too.
        threading.Thread(target=lambda: connection.recv(1) or os._exit(1), daemon=True).start()
        from ipykernel import kernelapp

        sys.argv = ["ipykernel_launcher", *request["argv"]]
        kernelapp.launch_new_instance(request["argv"])
        code = 0
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# ---------------------------------------------------------------- the stand-in


def stand_in(path: str, argv: list[str]) -> int:
    """Have the zygote fork a kernel with ``argv``; live as long as it does."""
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(path)
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    socket.send_fds(connection, [len(request).to_bytes(8, "little"), request], STREAMS)
    reply = b""
    while not reply.endswith(b"\n"):
        reply += connection.recv(32) or sys.exit("the kernel did not start")
    kernel = int(reply)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, _: os.kill(kernel, number))
    parent = os.getppid()
    connection.settimeout(1.0)
    while os.getppid() == parent:  # a kernel whose pytest has gone ends, as a new one would
        try:
            if not connection.recv(1):  # the kernel closes its end when it exits
                return 0
        except TimeoutError:
            pass
    return 1


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve(sys.argv[2])
    else:
        sys.exit(stand_in(sys.argv[1], sys.argv[2:]))
