# The Modelplane composition-function image: `modelplane function serve` on :9443.
#
#   docker build -t REGISTRY/function-modelplane:v0.1.0 .
#   crossplane xpkg build --package-root=package/function \
#     --embed-runtime-image=REGISTRY/function-modelplane:v0.1.0 -o function-modelplane.xpkg
#
# Crossplane runs the image with TLS_SERVER_CERTS_DIR pointing at its mTLS
# certificates; for local experiments pass `--insecure`.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Only what `pip install .` needs: the metadata (README is its long description)
# and the package. Dependencies are pinned in pyproject.toml.
COPY pyproject.toml README.md ./
COPY modelplane ./modelplane
RUN python -m venv /opt/modelplane \
    && /opt/modelplane/bin/pip install '.[hydrate]' \
    && /opt/modelplane/bin/modelplane --version

FROM python:3.11-slim
# A fixed numeric UID so `runAsNonRoot` can verify it without a passwd lookup.
RUN groupadd --system --gid 65532 modelplane \
    && useradd --system --uid 65532 --gid 65532 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin modelplane
COPY --from=build /opt/modelplane /opt/modelplane
ENV PATH=/opt/modelplane/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 65532:65532
EXPOSE 9443
# ModelCache hydration Jobs run this image too, as `modelplane hydrate <source>`
# (the [hydrate] extra; the function itself never imports it).
ENTRYPOINT ["modelplane", "function", "serve"]
