# syntax=docker/dockerfile:1
# Jezero in a container: one image for the web server, the background worker and one-off verbs.
# deploy/entrypoint.sh takes the role as its first argument; deploy/compose.yaml runs web + worker.
#
#   docker build -t jezero .
#   docker run -d --name jezero -p 127.0.0.1:8000:8000 -v jezero-data:/data jezero      # web
#   docker run -d -v jezero-data:/data jezero worker                                    # worker
#   docker run --rm -v jezero-data:/data jezero backup /data/backups/jezero.sqlite3     # any verb
#
# With Podman, build in Docker's image format: Podman's default (OCI) has no place for the
# HEALTHCHECK below and drops it. The `podman run` lines are the same as the `docker run` ones.
#
#   podman build --format docker -t jezero .
#
# tests/e2e/test_container.py builds and runs it that way (Podman 4.3, Debian 12's), on a
# stand-in base whose Python is in /usr/bin where the official image's is in /usr/local/bin:
# nothing here names that folder, and both stages share the base, so /venv's links hold.
#
# Layout: the code runs from /app (an editable install into the /venv virtual environment), so the
# settings find /app/templates and /app/static beside the packages; static files are collected
# at build time into /app/staticfiles (JEZERO_STATIC_ROOT). /app and /venv belong to root and
# are read-only to the app; only /data (the volume) belongs to the app's user, uid 10001.

FROM python:3.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/venv/bin:$PATH
RUN python -m venv /venv
WORKDIR /app
# The dependencies first, from pyproject.toml alone: a change to the code does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" \
        > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt
COPY . ./
RUN pip install --no-cache-dir --no-deps -e . \
    && python -m compileall -q jezero_site library connectors


FROM python:3.11-slim-bookworm
RUN groupadd --system --gid 10001 jezero \
    && useradd --system --uid 10001 --gid jezero --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin jezero \
    && install -d -o jezero -g jezero -m 0750 /data
COPY --from=build /venv /venv
COPY --from=build /app /app
ENV PATH=/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    JEZERO_DATA_DIR=/data \
    JEZERO_STATIC_ROOT=/app/staticfiles \
    JEZERO_BIND=0.0.0.0:8000
# The settings need a data folder and a secret key to load: throw-away ones, for this step only.
RUN mkdir /tmp/build-data \
    && JEZERO_DATA_DIR=/tmp/build-data JEZERO_SECRET_KEY=collectstatic-only \
        jezero collectstatic --noinput --verbosity 0 \
    && rm -rf /tmp/build-data

USER 10001:10001
WORKDIR /data
VOLUME /data
EXPOSE 8000
# The standard library only: no curl in a slim image, and no Django start per probe. No
# --start-interval here: Podman 4.3 rejects it; deploy/compose.yaml sets start_interval instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-I", "/app/deploy/healthcheck.py"]
ENTRYPOINT ["/app/deploy/entrypoint.sh"]
CMD ["web"]
