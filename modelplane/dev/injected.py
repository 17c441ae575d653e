"""Run a program with a pod's in-cluster identity, without a pod (`-m modelplane.dev.injected`).

Compositions that write to the control plane itself give provider-kubernetes
`credentials.source: InjectedIdentity`, which reads the ServiceAccount token
and CA where a pod has them (/var/run/secrets/kubernetes.io/serviceaccount)
and the API server from KUBERNETES_SERVICE_HOST/_PORT. Started under
`unshare --mount --map-root-user`, this puts a private tmpfs over /run (so
nothing outside the process sees it), writes the token and CA there and
executes the program: the provider gets exactly what a pod would, and the
machine's own /run is untouched.

Usage: python -m modelplane.dev.injected SECRETS_DIR -- PROGRAM [ARG...]
where SECRETS_DIR holds `token` and `ca.crt`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import sys
from pathlib import Path

SERVICE_ACCOUNT = Path("/run/secrets/kubernetes.io/serviceaccount")


def _mount_tmpfs(target: str) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {target}: {os.strerror(err)} (run under unshare -m)")


def main(argv: list[str]) -> None:
    """Mount the identity and execute the program; never returns on success."""
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit(__doc__)
    secrets, program = Path(argv[0]), argv[2:]
    _mount_tmpfs("/run")
    SERVICE_ACCOUNT.mkdir(parents=True)
    for name in ("token", "ca.crt"):
        shutil.copyfile(secrets / name, SERVICE_ACCOUNT / name)
    (SERVICE_ACCOUNT / "namespace").write_text("crossplane-system")
    os.execv(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
