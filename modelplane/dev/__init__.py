"""A real, local Modelplane fleet: `modelplane dev up|status|down`.

The real parts of a control plane (etcd, kube-apiserver, kube-controller-manager,
Crossplane core, provider-kubernetes) are built from Go modules (`parts`), cached
outside the repository by version, and run as local processes (`procs`) with
certificates made here (`pki`). Modelplane itself goes in through Crossplane's
package manager from a local package cache (`xpkg`); the function runs as
`modelplane function serve` over mTLS. `fleet` puts it together; `kubeapi` is the
small API client the harness and the tests apply, read and wait with.

An adapter like `local` and `hydrate`: it does I/O, and it shares nothing with
the composers but the package files that `api.xrd` generates.
"""
