# routequote: slim, non-root, pinned. Build: docker build -t routequote:local .
# The base image is pinned to an exact tag; pin it by digest in your own registry as well
# (`docker buildx imagetools inspect python:3.11.14-slim-bookworm`), and bump both deliberately.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/routequote
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
# the project's own dependency pins (pyproject.toml) decide every version installed here
RUN /opt/routequote/bin/pip install --no-cache-dir .

FROM ${PYTHON_IMAGE}
ARG RELEASE_COMMIT=""
RUN groupadd --system --gid 10001 routequote \
    && useradd --system --uid 10001 --gid routequote --home-dir /var/lib/routequote --no-create-home \
       --shell /usr/sbin/nologin routequote \
    && mkdir -p /var/lib/routequote \
    && chown routequote:routequote /var/lib/routequote \
    && chmod 0700 /var/lib/routequote
COPY --from=build /opt/routequote /opt/routequote
ENV PATH=/opt/routequote/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    ROUTEQUOTE_HOST=0.0.0.0 \
    ROUTEQUOTE_PORT=8080 \
    ROUTEQUOTE_DATABASE_URL=sqlite+aiosqlite:////var/lib/routequote/routequote.sqlite3 \
    ROUTEQUOTE_DEV_SIGNING_KEY_PATH=/var/lib/routequote/dev-signing-key.pem \
    ROUTEQUOTE_RELEASE_COMMIT=${RELEASE_COMMIT}
WORKDIR /var/lib/routequote
VOLUME ["/var/lib/routequote"]
USER 10001:10001
EXPOSE 8080
# liveness only (no dependency): /readyz is for the load balancer
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; u = 'http://127.0.0.1:%s/livez' % os.environ.get('ROUTEQUOTE_PORT', '8080'); sys.exit(0 if urllib.request.urlopen(u, timeout=2).status == 200 else 1)"]
# exec form: routequote is PID 1 and gets SIGTERM itself (in-flight requests finish, then exit 0)
STOPSIGNAL SIGTERM
CMD ["routequote", "serve"]
