"""The kernels `make test` forks from a zygote (tests/forked_kernels.py) behave like new ones."""

import os
import signal
import socket
import sys
import time
from pathlib import Path

import forked_kernels
import pytest
from jupyter_client.manager import KernelManager

if not forked_kernels.forking():
    reason = "NOTEBOOK_KERNELS=fresh" if sys.platform == "linux" else f"not on {sys.platform}"
    pytest.skip(f"kernels are not forked: {reason}", allow_module_level=True)


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKED_KERNEL_CHECK", "from the test")
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(tmp_path))
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    yield manager, client
    client.stop_channels()
    if manager.has_kernel:
        manager.shutdown_kernel(now=True)


def run(client, code: str) -> str:
    """The text ``code`` prints in the kernel."""
    printed = []
    reply = client.execute_interactive(
        code, timeout=60, output_hook=lambda m: printed.append(m["content"].get("text", ""))
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(printed)


def is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_forked_kernel_has_the_folder_environment_and_imports_it_was_started_with(kernel):
    manager, client = kernel
    text = run(
        client,
        "import os, sys; print(os.getcwd()); print(os.environ['FORKED_KERNEL_CHECK']);"
        "print('tensorflow' in sys.modules, os.getpid() != os.getppid())",
    )
    assert text.splitlines() == [manager.provisioner.cwd, "from the test", "True True"]
    assert manager.provisioner.process.args[1] == forked_kernels.__file__  # the stand-in ran


def test_an_interrupt_reaches_a_forked_kernel(kernel):
    manager, client = kernel
    message = client.execute("print('asleep', flush=True); import time; time.sleep(60)")
    while client.get_iopub_msg(timeout=30)["content"].get("text") != "asleep\n":
        pass  # the cell runs: the interrupt lands in it
    manager.interrupt_kernel()
    reply = client.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == message
    assert reply["content"]["ename"] == "KeyboardInterrupt"


def test_a_killed_stand_in_takes_its_kernel_with_it(kernel):
    manager, client = kernel
    pid = int(run(client, "import os; print(os.getpid())"))
    os.kill(manager.provisioner.process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(pid)


def test_a_request_the_zygote_cannot_read_ends_only_that_request(kernel):
    with socket.socket(socket.AF_UNIX) as bad:
        bad.connect(os.environ[forked_kernels.SOCKET])
        bad.sendall((100).to_bytes(8, "little") + b"{not json")
        bad.shutdown(socket.SHUT_WR)
        assert bad.recv(32) == b""  # closed, no kernel started
    manager, client = kernel
    assert run(client, "print(6 * 7)") == "42\n"  # the kernel forked before it still works
    another = KernelManager(kernel_name="python3")
    another.start_kernel()
    client = another.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)  # and the zygote still forks new ones
    finally:
        client.stop_channels()
        another.shutdown_kernel(now=True)
