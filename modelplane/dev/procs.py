"""Long-running local processes: started detached, logged to files, found again by pid.

Each process runs in its own session so it outlives `modelplane dev up` and a
signal to it reaches its children; `stop` sends SIGTERM, then SIGKILL. A pid
is trusted only while /proc says it still runs the same executable, so a
recycled pid is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STOP_GRACE_SECONDS = 10.0
EXEC_SECONDS = 10.0


@dataclass(frozen=True)
class Proc:
    """One started process: its name, pid, executable and log file."""

    name: str
    pid: int
    exe: str
    log: str

    def to_json(self) -> dict[str, Any]:
        """The record kept in the fleet's state file."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Proc:
        """A record read back from the state file."""
        return cls(str(data["name"]), int(data["pid"]), str(data["exe"]), str(data["log"]))

    def alive(self) -> bool:
        """True while the pid runs the executable it was started with."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes()
            state = Path(f"/proc/{self.pid}/stat").read_text().split(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        first = cmdline.split(b"\0", 1)[0].decode(errors="replace")
        return state != "Z" and Path(first).name == Path(self.exe).name

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the process's log."""
        try:
            text = Path(self.log).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def start(
    name: str,
    argv: Sequence[str],
    log_dir: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    exe: str | None = None,
) -> Proc:
    """Start argv detached, its output appended to log_dir/<name>.log.

    `exe` names the program the process ends up running when argv[0] is a
    launcher that executes it (so `alive` recognises it).
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    full_env = dict(os.environ)
    full_env.update(env or {})
    with log.open("ab") as out:
        child = subprocess.Popen(  # argv is a list: never a shell
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    proc = Proc(name, child.pid, exe or str(argv[0]), str(log))
    _await_exec(proc, child)
    return proc


def _await_exec(proc: Proc, child: subprocess.Popen[bytes], timeout: float = EXEC_SECONDS) -> None:
    """Wait until the child runs its program (or has exited).

    Between fork and exec the child still shows its parent's command line, so
    `alive` would call a process that is about to start dead.
    """
    deadline = time.monotonic() + timeout
    while not proc.alive() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)


def stop(proc: Proc, grace: float = STOP_GRACE_SECONDS) -> None:
    """Terminate a process and its session; SIGKILL after the grace period."""
    if not proc.alive():
        _reap(proc.pid)
        return
    _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(proc.pid)
        if not proc.alive():
            return
        time.sleep(0.1)
    _signal_group(proc.pid, signal.SIGKILL)
    _reap(proc.pid)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    except PermissionError:
        os.kill(pid, sig)


def _reap(pid: int) -> None:
    """Collect the exit status of a child of this process, so it is not left a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def free_ports(count: int) -> list[int]:
    """Ports on 127.0.0.1 that nothing listens on now (held open together so they differ)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def listening(port: int) -> bool:
    """True when something accepts connections on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
