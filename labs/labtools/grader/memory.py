"""The memory of one notebook, all its processes and its ``/tmp`` together: a memory
cgroup where the machine gives one (:class:`MemoryGroup`, the kernel counts and limits),
else a watch that adds it up and stops the notebook past the limit
(:class:`MemoryWatch`). The limit is ``notebook_memory``
(:class:`labtools.grader.limits.Limits`)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from pathlib import Path

from labtools.grader.bwrap import sandbox_uid


class MemoryGroup:
    """A memory cgroup that holds every process of one notebook: the kernel counts their
    memory together (and the pages of its /tmp, which they write), and a notebook over
    ``limit`` bytes loses a process to the kernel's out-of-memory killer, inside the group.

    cgroup v2 where the machine gives one a writable memory controller, else v1's memory
    hierarchy; :meth:`make` returns None where neither is writable (an ordinary user
    without a delegated cgroup): the grader then says so once, and each process keeps its
    own ``memory`` limit only."""

    def __init__(self, path: Path, version: int):
        self.path, self.version = path, version

    @classmethod
    def home(cls) -> tuple[Path, int] | None:
        """Where this process may make memory cgroups, and which version."""
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            number, controllers, path = line.split(":", 2)
            if number == "0":  # v2: the unified hierarchy, if memory is enabled below us
                top = Path("/sys/fs/cgroup") / path.lstrip("/")
                try:
                    if "memory" in (top / "cgroup.subtree_control").read_text().split():
                        return top, 2
                except OSError:
                    pass
            elif "memory" in controllers.split(","):
                top = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
                if (top / "memory.limit_in_bytes").exists() and os.access(top, os.W_OK):
                    return top, 1
        return None

    @classmethod
    def make(cls, limit: int) -> MemoryGroup | None:
        found = cls.home()
        if found is None:
            return None
        top, version = found
        path = top / f"labtools-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
            group = cls(path, version)
            if version == 2:
                group._write("memory.max", limit)
                group._write("memory.swap.max", 0, optional=True)
            else:
                group._write("memory.limit_in_bytes", limit)
                group._write("memory.memsw.limit_in_bytes", limit, optional=True)
            return group
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None

    def _write(self, name: str, value: int, optional: bool = False) -> None:
        try:
            (self.path / name).write_text(str(value))
        except OSError:
            if not optional:
                raise

    def add(self, pid: int) -> bool:
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
            return True
        except OSError:
            return False

    def ran_out(self) -> bool:
        """Whether the kernel killed a process of the group for want of memory."""
        try:
            if self.version == 2:
                events = (self.path / "memory.events").read_text().split()
                return int(events[events.index("oom_kill") + 1]) > 0
            control = (self.path / "memory.oom_control").read_text().split()
            killed = int(control[control.index("oom_kill") + 1]) if "oom_kill" in control else 0
            return killed > 0 or int((self.path / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError, IndexError):
            return False

    def close(self) -> None:
        """Remove the group once its processes are gone (they are, once the keeper has
        reaped the notebook's pid 1; a last one may take a moment to leave)."""
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


class MemoryWatch:
    """Where no memory cgroup can be made: the resident memory of every process of the
    notebook (its user id's, as root; the descendants of its bubblewrap, as an ordinary
    user) and of its /tmp, added up every ``interval`` seconds, and the notebook stopped
    once the sum passes the limit. A sampled bound, not a hard one: between two looks a
    notebook can allocate what it writes in ``interval`` seconds more."""

    def __init__(self, box, interval: float = 0.05):  # box: the Sandbox watched
        self.box, self.interval = box, interval
        self.done = threading.Event()
        self.peak = 0
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _processes(self) -> list[str]:
        box = self.box
        if box.process is None:  # a child of a warm parent: the notebook's user id
            uid = sandbox_uid()
            found = []
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    with contextlib.suppress(OSError):
                        if os.stat(f"/proc/{entry}").st_uid == uid:
                            found.append(entry)
            return found
        children: dict[str, list[str]] = {}  # a sandbox of its own: bubblewrap's descendants
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, IndexError):
                    parent = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]
                    children.setdefault(parent, []).append(entry)
        found, todo = [], [str(box.process.pid)]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += children.get(pid, [])
        return found

    @staticmethod
    def inside(pids: list[str]) -> str | None:
        """The first of ``pids`` whose root is the sandbox's: whose /tmp is the notebook's
        (bubblewrap itself sees this machine's /tmp)."""
        host = os.stat("/")
        for pid in pids:
            with contextlib.suppress(OSError):
                root = os.stat(f"/proc/{pid}/root")
                if (root.st_dev, root.st_ino) != (host.st_dev, host.st_ino):
                    return pid
        return None

    def used(self) -> int:
        total, pids = 0, self._processes()
        for pid in pids:
            with contextlib.suppress(OSError, ValueError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        inside = self.inside(pids)
        if inside is not None:  # its /tmp, as a process inside sees it
            with contextlib.suppress(OSError):
                stats = os.statvfs(f"/proc/{inside}/root/tmp")
                total += (stats.f_blocks - stats.f_bfree) * stats.f_frsize
        return total

    def _watch(self) -> None:
        limit = self.box.limits.notebook_memory
        while not self.done.wait(self.interval):
            used = self.used()
            self.peak = max(self.peak, used)
            if used > limit:
                self.box.stop(
                    "it used more memory than the limit for the whole notebook "
                    f"(notebook_memory = {limit / 2**30:g} GiB, all its processes and its /tmp "
                    "together, as sampled every 0.05 s: this machine gives no memory cgroup)"
                )
                return

    def close(self) -> None:
        self.done.set()
        self.thread.join(timeout=5)
