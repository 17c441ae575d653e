# The Modelplane composition-function image: `modelplane function serve` on :9443.
#
#   make image IMAGE=REGISTRY/function-modelplane:v0.1.0
#   crossplane xpkg build --package-root=package/function \
#     --embed-runtime-image=REGISTRY/function-modelplane:v0.1.0 -o function-modelplane.xpkg
#
# Reproducible: both base images are pinned by digest, and every Python package
# comes from requirements.lock (runtime) or requirements-build.lock (the wheel
# build), each file checked against its hash. `make lock` regenerates both from
# pyproject.toml; `make test` fails when they disagree with it.
#
# Crossplane runs the image with TLS_SERVER_CERTS_DIR pointing at its mTLS
# certificates; for local experiments pass `--insecure`.

# Debian 12 in the build stage matches the distroless runtime: the venv's
# interpreter symlink (/usr/bin/python3, Python 3.11) resolves in both.
FROM debian:12-slim@sha256:56ff6d36d4eb3db13a741b342ec466f121480b5edded42e4b7ee850ce7a418ee AS build
RUN apt-get update \
    && apt-get install --no-install-recommends --yes python3-venv \
    && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY requirements.lock requirements-build.lock ./
# --require-hashes with --no-deps: exactly the locked files, nothing resolved anew.
RUN python3 -m venv /venv/fn \
    && /venv/fn/bin/pip install --require-hashes --no-deps -r requirements.lock \
    && python3 -m venv /venv/build \
    && /venv/build/bin/pip install --require-hashes --no-deps -r requirements-build.lock
# Only what building the wheel needs: the metadata (README is its long
# description) and the package.
COPY pyproject.toml README.md ./
COPY modelplane ./modelplane
RUN /venv/build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /whl . \
    && /venv/fn/bin/pip install --no-deps /whl/*.whl \
    && /venv/fn/bin/pip check \
    && /venv/fn/bin/modelplane --version

# Distroless: no shell, no package manager; `nonroot` is UID/GID 65532. The
# venv keeps the path it was built at so its scripts' shebangs resolve.
FROM gcr.io/distroless/python3-debian12:nonroot@sha256:db274ad45039fcee19d5cb5fc87700b64bce612f57c03b69f9a59b6bcd6545c8
COPY --from=build /venv/fn /venv/fn
ENV PATH=/venv/fn/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# Numeric, so `runAsNonRoot` can verify it without a passwd lookup.
USER 65532:65532
EXPOSE 9443
# ModelCache hydration Jobs run this image too, as `modelplane hydrate <source>`
# (the [hydrate] extra, locked with the rest; the function never imports it),
# and so does the ServingStack's inventory agent, as `modelplane inventory`.
ENTRYPOINT ["/venv/fn/bin/modelplane", "function", "serve"]
