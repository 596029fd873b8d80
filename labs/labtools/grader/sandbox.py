"""A sandbox for one student's notebook: bubblewrap, its own user id and namespaces, limits,
and a Python environment that holds only what a lab may use.

What the sandbox gives the student's code:

- its own pid namespace (it sees and can signal only its own processes; when the agent,
  pid 1 there, ends, the kernel ends everything it started), no network, its own IPC and
  host name;
- a user id that is not the grader's: when the grader runs as root, a user id of its own
  (:func:`~labtools.grader.bwrap.sandbox_uid`, above 1 000 000, so each sandbox running at
  the same time has its own and the process limit counts that sandbox alone), with no
  capabilities; as an ordinary user, uid 65534 inside an unprivileged user namespace,
  which the kernel maps to the grader's own uid outside, with no capabilities and no
  further user namespaces;
- a file system built from nothing: the system's ``/usr`` and ``/etc`` and the Python
  installation with every ``site-packages`` and ``dist-packages`` folder emptied, the
  sandbox's own environment ``.venv-sandbox`` (numpy, matplotlib, IPython, ipywidgets: made
  by ``tasks.py`` from ``requirements-sandbox.txt``), the lab's copy of the package
  (:mod:`labtools.grader.closed`: the functions the lab closes are not in it) and the agent
  (:mod:`labtools.inside`), read-only; a private ``/tmp`` of a fixed size. No scipy, no
  scikit-learn, nothing of the grader (nbgrader, the rest of labtools), none of the lab
  sources, submissions or course folder;
- limits (:class:`~labtools.grader.limits.Limits`): address space per process, memory of
  the whole notebook (a memory cgroup, :mod:`labtools.grader.memory`), processes, CPU
  seconds, file size, open files, output, wall-clock time per request and for the whole
  notebook;
- a fresh, empty session keyring (the grader's keys stay out of reach) and a seccomp
  filter (:mod:`labtools.inside.seccomp`) that refuses the system calls Docker's default
  profile refuses: the kernel keyring, ptrace and other processes' memory, new namespaces,
  mounts, kernel modules, BPF, perf events, io_uring, clocks and the like.

Every notebook's process is made the same way: a fresh child of a parent that has imported
the libraries once (:mod:`labtools.grader.start`, :mod:`labtools.inside.zygote`). The warm
start keeps that parent for a worker's notebooks of one lab; the cold start (``--cold``)
starts one for each notebook. Nothing a notebook can observe tells the two apart.

What comes back is read by :func:`labtools.wire.read_frame` and parsed by
:func:`labtools.wire.decode_answer` alone, within the limits of the grader's side.

The command lines that start it are :mod:`labtools.grader.bwrap`'s;
:func:`labtools.grader.bwrap.available` says whether this machine can start it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

from labtools import wire
from labtools.grader import start
from labtools.grader.limits import Limits
from labtools.grader.memory import MemoryGroup, MemoryWatch


class SandboxError(Exception):
    """The sandbox stopped, timed out, or broke the protocol; the message says which."""


class Sandbox:
    """One notebook's process. ``with Sandbox(limits, package=...) as box: box.request(...)``.

    With ``zygote`` (the control socket of a :class:`~labtools.grader.start.Zygote` of this
    notebook's lab) it is a fresh child of that warm parent (the warm start); without it, a
    warm parent is started for this notebook alone, from the lab's copy of the package
    ``package``, and closed after it (the cold start, and the fallback when the warm parent
    does not answer, which :attr:`note` then says). Either way the notebook's process is
    made by the same code (:mod:`labtools.grader.start`).
    ``unsafe``: no bubblewrap and no namespaces (``--unsafe``), the same protocol."""

    def __init__(
        self,
        limits: Limits,
        *,
        package: Path | None = None,
        unsafe: bool = False,
        mpl_cache: Path | None = None,
        zygote: socket.socket | None = None,
    ):
        self.limits = limits
        self.package = package
        self.unsafe = unsafe
        self.mpl_cache = mpl_cache
        self.zygote = None if unsafe else zygote
        self.note: str | None = None  # what the instructor should know about the start
        self.stopped: str | None = None  # why it stopped, once it has
        self.output = bytearray()  # the start of what it wrote to stdout/stderr
        self.output_total = 0
        self.output_kept = float("inf")  # bytes of output kept (none after the hidden tests)
        self.deadline = float("inf")  # the notebook's time is up then (set on entering)
        self.own: start.Zygote | None = None  # the parent started for this notebook alone
        self.process: subprocess.Popen | None = None  # a notebook's own bubblewrap
        self.memory: MemoryGroup | None = None
        self.watch: MemoryWatch | None = None  # where no memory cgroup can be made
        self.agent_pid: int | None = None
        self._pidfd: int | None = None
        self._lifeline: int | None = None
        self._keeper: socket.socket | None = None
        self._requests: int | None = None
        self._answers: int | None = None
        self._output_file = None

    def __enter__(self) -> Sandbox:
        self.deadline = time.monotonic() + self.limits.notebook_seconds
        if os.geteuid() != 0 and not self.unsafe:  # no warm parent for an ordinary user
            start.single(self)
            self._drain = threading.Thread(target=self._read_output, daemon=True)
            self._drain.start()
            return self
        started = self.zygote is not None and start.child(self, self.zygote)
        if self.zygote is not None and not started:
            self.note = "the warm start did not answer: this notebook's own parent started it"
        if not started:
            if self.package is None:
                raise ValueError("a notebook without a warm parent needs its lab's `package`")
            self.own = start.Zygote(self.package, self.mpl_cache, unsafe=self.unsafe)
            started = self.own.ready() and start.child(self, self.own.control)
        if not started:
            self.stop("the sandbox did not start")
        # the notebook's time starts once its process is there (a parent of its own has
        # imported everything first, as a kept one has), warm or cold alike
        self.deadline = time.monotonic() + self.limits.notebook_seconds
        self._drain = threading.Thread(target=self._read_output, daemon=True)
        self._drain.start()
        return self

    def _signal(self, sig: int) -> None:
        try:
            if self._pidfd is not None:  # immune to the pid being reused
                signal.pidfd_send_signal(self._pidfd, sig)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def _read_output(self) -> None:
        if self._output_file is None:
            return
        for chunk in iter(lambda: self._output_file.read1(1 << 16), b""):
            self.output_total += len(chunk)
            keep = min(65536, self.output_kept)
            if len(self.output) < keep:
                self.output += chunk[: int(keep) - len(self.output)]
            if self.output_total > self.limits.output:
                self.stop(f"it wrote more than {self.limits.output // 2**20} MB of output")

    def stop(self, reason: str) -> None:
        """Kill everything in the sandbox and remember why (the first reason counts).

        Only the agent is killed: it is pid 1 of the notebook's pid namespace, so the kernel
        kills every other process in it, and the agent's exit completes only once they are
        all gone; its keeper then reaps it (and says so by closing its socket).
        """
        if self.stopped is None:
            self.stopped = reason
        self._signal(signal.SIGKILL)

    def __exit__(self, *exc) -> None:
        self.stop(self.stopped or "done")
        if self.process is not None:  # a notebook's own sandbox: bubblewrap ends with it
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._lifeline is not None:  # the keeper kills what is left once the lifeline
            os.close(self._lifeline)  # closes, reaps pid 1 (the last to go) and then closes
            self._keeper.settimeout(30)  # its socket
            with contextlib.suppress(OSError):
                while self._keeper.recv(64):
                    pass
            self._keeper.close()
        for fd in (self._requests, self._answers):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self._output_file is not None:
            self._drain.join(timeout=5)
            self._output_file.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self.own is not None:
            self.own.close()
        if self.memory is not None:
            self.memory.close()
        if self.watch is not None:
            self.watch.close()

    def request(
        self,
        message: wire.Request,
        seconds: float | None = None,
        callback=None,
    ) -> wire.Answer:
        """Send one request (:class:`~labtools.wire.Run`, :class:`~labtools.wire.Get` or
        :class:`~labtools.wire.Call`) and return the agent's answer, parsed by
        :func:`labtools.wire.decode_answer` and checked to belong to the request.

        The student's code may call back: the instructor's versions of the names in a
        :class:`~labtools.wire.Call`'s ``reference``, or a package function the lab closes.
        Each such call comes as a callback, which ``callback(call)`` answers here with a
        :class:`~labtools.wire.Reply` (``call``: the name and the arguments as sent, see
        :func:`labtools.wire.decode_arguments`; the time it takes counts in the request's
        time); without ``callback``, a callback stops the sandbox.

        A request that runs longer than ``seconds`` (default: the cell limit), or past the
        notebook's time limit, is interrupted (KeyboardInterrupt in the student's code); if
        the agent does not answer soon after, the sandbox is stopped. Once the notebook's
        time is up the sandbox is stopped. Raises :class:`SandboxError` once the sandbox has
        stopped, with the reason, which names the limit that stopped it.
        """
        limits = self.limits
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.stop(
                "the notebook ran longer than its time limit "
                f"(notebook_seconds = {limits.notebook_seconds:g} s)"
            )
        if self.stopped is not None:
            raise SandboxError(self.stopped)
        nonce = uuid.uuid4().hex
        self._send(wire.encode_request(message, nonce))
        seconds = min(limits.cell_seconds if seconds is None else seconds, left)
        deadline = time.monotonic() + seconds
        interrupted = False
        while True:
            try:
                if not interrupted and not wire.wait_readable(self._answers, deadline):
                    self._signal(signal.SIGINT)  # KeyboardInterrupt, as Jupyter does
                    interrupted = True
                if interrupted and not wire.wait_readable(self._answers, time.monotonic() + 5):
                    raise TimeoutError
                raw = wire.read_frame(self._answers, limits.message, time.monotonic() + 30)
                if raw is None:
                    raise EOFError
                answer = wire.decode_answer(raw, limits.budget())
            except TimeoutError:
                self.stop(
                    f"a cell or call ran longer than {seconds:g} s and could not be interrupted"
                )
                raise SandboxError(self.stopped) from None
            except (EOFError, OSError):
                time.sleep(0.05)  # let the output reader record a flood first
                self.stop(self._why_ended())
                raise SandboxError(self.stopped) from None
            except wire.FrameTooLarge:
                self.stop(
                    f"it sent an answer larger than the limit (message = {limits.message} bytes)"
                )
                raise SandboxError(self.stopped) from None
            except wire.NotPlainData as err:
                self.stop(f"it sent an answer the grader refused: {err}")
                raise SandboxError(self.stopped) from None
            if answer.id != nonce:
                self.stop("it wrote something that is not an answer to the grader's channel")
                raise SandboxError(self.stopped)
            if answer.callback is None:
                break
            if callback is None:
                self.stop(f"it called {answer.callback[0]!r}, which the grader did not offer")
                raise SandboxError(self.stopped)
            if interrupted:  # past its time: no more of the grader's work for it
                reply = wire.Reply(raised="KeyboardInterrupt: the call ran out of time")
            else:
                reply = callback(answer.callback)
                if reply is None:
                    self.stop(f"it called {answer.callback[0]!r}, which the grader did not offer")
                    raise SandboxError(self.stopped)
            self._send(wire.encode_request(reply, nonce))
        if interrupted:
            cause = (
                f"the notebook's time limit (notebook_seconds = {limits.notebook_seconds:g} s)"
                if seconds >= left
                else f"the cell limit (cell_seconds = {seconds:g} s)"
            )
            answer.interrupted = f"it ran longer than {seconds:g} s and was interrupted at {cause}"
        return answer

    def _send(self, payload: bytes) -> None:
        try:
            wire.write_frame(self._requests, payload)
        except OSError:
            self.stop(self._why_ended())
            raise SandboxError(self.stopped) from None

    def _why_ended(self) -> str:
        if self.memory is not None and self.memory.ran_out():
            return (
                "it used more memory than the limit for the whole notebook "
                f"(notebook_memory = {self.limits.notebook_memory / 2**30:g} GiB, all its "
                "processes and its /tmp together)"
            )
        return "the notebook's process ended"
