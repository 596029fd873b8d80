"""The system calls a grading sandbox refuses: a seccomp filter, as the BPF program that
``bwrap --seccomp FD`` installs on the student's processes before they start.

What is refused follows Docker's default profile for a process without capabilities: the
kernel keyring (``keyctl``, ``add_key``, ``request_key``: a grader's session may hold
tokens there, and keyrings are not namespaced), other processes' memory (``ptrace``,
``process_vm_readv``, ``pidfd_getfd``, ``kcmp``), new namespaces (``unshare``, ``setns``,
``clone`` with a ``CLONE_NEW*`` flag), mounts, kernel modules, ``bpf``, ``perf_event_open``,
``userfaultfd``, ``io_uring``, clocks, swap, reboot, NUMA policies and the kernel's log.
Each refused call fails with EPERM, as an unprivileged call would; ``clone3`` fails with
ENOSYS, so that the C library falls back to ``clone``, whose flags the filter can read.
A process of another architecture's system call table (x32 on x86-64, or a foreign
``AUDIT_ARCH``) is refused every call.

The program is written here, instruction by instruction, rather than through libseccomp:
it is short, and the grader then needs no library beyond the standard one. Only x86-64
has its table; :func:`program` raises :class:`Unsupported` elsewhere, which
:func:`labtools.grader.bwrap.available` reports.
"""

from __future__ import annotations

import errno
import platform
import struct

# the refused calls, by name, with their numbers on x86-64 (arch/x86/entry/syscalls)
REFUSED_X86_64 = {
    "keyctl": 250, "add_key": 248, "request_key": 249,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "pidfd_getfd": 438,
    "unshare": 272, "setns": 308,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "create_module": 174,
    "get_kernel_syms": 177, "query_module": 178, "kexec_load": 246, "kexec_file_load": 320,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "lookup_dcookie": 212,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "fanotify_init": 300,
    "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
    "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179,
    "iopl": 172, "ioperm": 173, "uselib": 134, "ustat": 136, "sysfs": 139, "_sysctl": 156,
    "vhangup": 153, "nfsservctl": 180, "syslog": 103,
    "move_pages": 279, "mbind": 237, "set_mempolicy": 238, "get_mempolicy": 239,
    "migrate_pages": 256,
}  # fmt: skip
CLONE_X86_64, CLONE3_X86_64 = 56, 435
X32_BIT = 0x40000000  # x32 system calls have this bit set in their number
AUDIT_ARCH_X86_64 = 0xC000003E
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (linux/sched.h)
CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
CLONE_NEW_ANY |= 0x40000000

# classic BPF (linux/filter.h, linux/seccomp.h)
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
NR, ARCH, ARG0_LOW = 0, 4, 16  # offsets in struct seccomp_data (little-endian)


class Unsupported(RuntimeError):
    """No filter is written for this machine's architecture."""


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes:
    """The filter as bytes (struct sock_filter[]), for bwrap's ``--seccomp``."""
    machine = machine or platform.machine()
    if machine not in ("x86_64", "amd64", "AMD64"):
        raise Unsupported(f"no seccomp filter is written for {machine} (only x86-64)")
    deny = RET_ERRNO | errno.EPERM
    refused = sorted(set(REFUSED_X86_64.values()))
    body = [
        # a foreign architecture: refuse everything
        (LD_W_ABS, ARCH, 0, 0),
        (JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        (RET_K, deny, 0, 0),
        (LD_W_ABS, NR, 0, 0),
        # x32 calls: refuse
        (JGE_K, X32_BIT, 0, 1),
        (RET_K, deny, 0, 0),
        # clone3: ENOSYS, so that the C library uses clone, whose flags are read below
        (JEQ_K, CLONE3_X86_64, 0, 1),
        (RET_K, RET_ERRNO | errno.ENOSYS, 0, 0),
        # clone: refused with any CLONE_NEW* flag (the flags are its first argument)
        (JEQ_K, CLONE_X86_64, 0, 4),
        (LD_W_ABS, ARG0_LOW, 0, 0),
        (JSET_K, CLONE_NEW_ANY, 0, 1),
        (RET_K, deny, 0, 0),
        (RET_K, RET_ALLOW, 0, 0),
    ]
    # every refused number: jump to the final deny if equal
    checks = len(refused)
    for k, number in enumerate(refused):
        body.append((JEQ_K, number, checks - k, 0))
    body.append((RET_K, RET_ALLOW, 0, 0))
    body.append((RET_K, deny, 0, 0))
    return b"".join(_op(code, k, jt, jf) for code, k, jt, jf in body)
