"""How a notebook's process starts, one way for every notebook: a fresh child of a warm
parent (:class:`Zygote`, :mod:`labtools.inside.zygote`) that has imported the libraries
once, asked for by :func:`child`; the parent is a worker's, kept for the notebooks of one
lab (the warm start), or one started for this notebook alone (the cold start). Where no
warm parent can run (an ordinary user), each notebook gets a bubblewrap sandbox of its
own that imports the same modules (:func:`single`). :func:`end_server` ends a server (a
warm parent, the judge's). The notebook's process is then a
:class:`labtools.grader.sandbox.Sandbox`'s."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from labtools import wire
from labtools.grader.bwrap import (
    KEYCTL_JOIN_SESSION_KEYRING,
    NOBODY,
    SYS_KEYCTL,
    _child_setup,
    _filter_fd,
    _processes_of,
    sandbox_uid,
    single_command,
    unsafe_command,
    zygote_command,
)
from labtools.grader.memory import MemoryGroup, MemoryWatch


class Zygote:
    """A warm parent (:mod:`labtools.inside.zygote`) for the notebooks of one lab, in its
    bubblewrap sandbox with the lab's copy of the package (``package``);
    :class:`~labtools.grader.sandbox.Sandbox` asks it for a fresh child per notebook through
    :attr:`control` (:func:`child`). It ends when this process does (or when :meth:`close`
    is called)."""

    def __init__(self, package: Path, mpl_cache: Path | None = None, *, unsafe: bool = False):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        keyctl = SYS_KEYCTL.get(os.uname().machine)
        libc = ctypes.CDLL(None, use_errno=True)
        control = theirs.fileno()
        self.package = package

        def setup():  # a fresh session keyring; the control socket at 3
            import fcntl
            import resource

            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # bubblewrap waits for its child
            if keyctl is not None and not unsafe:
                libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)
            os.dup2(fcntl.fcntl(control, fcntl.F_DUPFD, 64), 3)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        if unsafe:
            argv, env = unsafe_command(package)
        else:
            argv, env = zygote_command(package, mpl_cache), None
        self.process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=(3,),
            preexec_fn=setup,
            start_new_session=True,
        )
        theirs.close()
        self.control = ours

    def ready(self, seconds: float = 120) -> bool:
        """Wait until the parent has imported everything (it says so once); False if it
        died or took longer than ``seconds``."""
        self.control.settimeout(seconds)
        try:
            return self.control.recv(16) == b"ready"
        except OSError:
            return False
        finally:
            self.control.settimeout(None)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        end_server(self.process, self.control)


def end_server(process: subprocess.Popen, control: socket.socket) -> None:
    """Close a server's control socket, on which it ends by itself; kill it if it has not
    within five seconds (the judge server and the warm parent)."""
    control.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _pid_of(pidfd: int) -> int | None:
    """The pid (in this process's namespace) of the process a pidfd refers to."""
    try:
        for line in Path(f"/proc/self/fdinfo/{pidfd}").read_text().splitlines():
            if line.startswith("Pid:"):
                pid = int(line.split()[1])
                return pid if pid > 0 else None
    except (OSError, ValueError):
        pass
    return None


def single(box) -> None:
    """A sandbox of this notebook's own, as an ordinary user (:func:`single_command`), for
    ``box`` (the :class:`~labtools.grader.sandbox.Sandbox` it starts, whose fields it sets)."""
    if box.package is None:
        raise ValueError("a notebook's own sandbox needs its lab's `package`")
    requests_r, box._requests = os.pipe()
    box._answers, answers_w = os.pipe()
    info_r, info_w = os.pipe()
    fds = [requests_r, answers_w, info_w, _filter_fd()]
    box.process = subprocess.Popen(
        single_command(box.limits, box.package, box.mpl_cache),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(3, 4, 5, 6),
        preexec_fn=_child_setup(box.limits, tuple(fds)),
        start_new_session=True,
    )
    box._output_file = box.process.stdout
    for fd in fds:
        os.close(fd)
    try:  # bubblewrap says which pid (outside) the agent has
        info = wire.read_exactly(info_r, 1, time.monotonic() + 30)
        while not info.rstrip().endswith(b"}"):
            info += wire.read_exactly(info_r, 1, time.monotonic() + 30)
        box.agent_pid = json.loads(info)["child-pid"]
        box._pidfd = os.pidfd_open(box.agent_pid)
    except (TimeoutError, EOFError, ValueError, KeyError, ProcessLookupError):
        box.stop("the sandbox did not start")
    os.close(info_r)
    if box.stopped is None:  # its imports done before its time starts (as a warm child's)
        try:
            ready = wire.read_frame(box._answers, 1024, time.monotonic() + 120)
            if ready is None or wire.decode_answer(ready, box.limits.budget()).id != "ready":
                box.stop("the sandbox did not start")
        except (TimeoutError, OSError, wire.NotPlainData, wire.FrameTooLarge):
            box.stop("the sandbox did not start")
        box.deadline = time.monotonic() + box.limits.notebook_seconds
    box.watch = MemoryWatch(box)  # an ordinary user has no memory cgroup to give it


def child(box, control: socket.socket) -> bool:
    """Ask a warm parent for a child, ``box``'s process (the
    :class:`~labtools.grader.sandbox.Sandbox` it starts, whose fields it sets); False
    (nothing left open) if it did not start."""
    limits = box.limits
    requests_r, requests_w = os.pipe()
    answers_r, answers_w = os.pipe()
    output_r, output_w = os.pipe()
    lifeline_r, lifeline_w = os.pipe()
    reply, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    uid = sandbox_uid()  # as the kernel counts its processes; inside, as root, the same
    job = {
        "uid": uid if os.geteuid() == 0 else NOBODY,  # (in a user namespace: nobody)
        "memory": limits.memory,
        "cpu_seconds": limits.cpu_seconds,
        "file_size": limits.file_size,
        "open_files": limits.open_files,
        "processes": _processes_of(uid) + limits.processes,
        "tmp": limits.tmp,
    }
    fds = []
    try:
        sent = [theirs.fileno(), requests_r, answers_w, output_w, lifeline_r]
        socket.send_fds(control, [json.dumps(job).encode()], sent)
        reply.settimeout(30)
        _, fds, _, _ = socket.recv_fds(reply, 64, 1)
    except OSError:
        pass
    finally:
        theirs.close()
        for fd in (requests_r, answers_w, output_w, lifeline_r):
            os.close(fd)
    if len(fds) != 1:
        reply.close()
        for fd in (*fds, requests_w, answers_r, output_r, lifeline_w):
            os.close(fd)
        return False
    box._pidfd, box._lifeline, box._keeper = fds[0], lifeline_w, reply
    box._requests, box._answers = requests_w, answers_r
    box._output_file = open(output_r, "rb")  # noqa: SIM115 - closed in Sandbox.__exit__
    box.agent_pid = _pid_of(box._pidfd)
    # before the first request, while the agent waits for it: every process the
    # notebook makes is in the group, which counts their memory together
    box.memory = None if box.unsafe else MemoryGroup.make(limits.notebook_memory)
    placed = box.memory is not None and box.agent_pid is not None
    if box.memory is not None and not (placed and box.memory.add(box.agent_pid)):
        box.memory.close()
        box.memory = None
    if box.memory is None and not box.unsafe:
        box.watch = MemoryWatch(box)
    return True
