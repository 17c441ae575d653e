"""Run a program with directories of ours at fixed paths that only it sees.

Envoy Gateway reads its xDS server certificate from the fixed path /certs; each
cluster's controller needs its own there. Started under
`unshare --mount --propagation private`, this bind-mounts each SOURCE on its
TARGET inside a mount namespace of the process's own and executes the program,
so the machine's own /certs stays as it was (an empty directory `modelplane dev
up` makes once, because a bind mount needs a mount point).

Usage: python -m modelplane.dev.binds SOURCE:TARGET [SOURCE:TARGET...] -- PROGRAM [ARG...]
"""

from __future__ import annotations

import ctypes
import os
import sys

_MS_BIND = 4096
_LIBC = ctypes.CDLL(None, use_errno=True)


def bind(source: str, target: str) -> None:
    """Bind-mount source on target (in the caller's mount namespace)."""
    if _LIBC.mount(source.encode(), target.encode(), None, _MS_BIND, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bind {source} on {target}: {os.strerror(err)} (run under unshare -m)")


def main(argv: list[str]) -> None:
    """Mount every pair and execute the program; never returns on success."""
    if "--" not in argv:
        raise SystemExit(__doc__)
    split = argv.index("--")
    pairs, program = argv[:split], argv[split + 1 :]
    if not program or not all(":" in p for p in pairs):
        raise SystemExit(__doc__)
    for pair in pairs:
        source, target = pair.split(":", 1)
        bind(source, target)
    os.execv(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
