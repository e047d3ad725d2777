# syntax=docker/dockerfile:1
# The cseaug worker image: the library, its Prefect flows and the repository files the
# deployments need (configs, prompts, flows, tasks, prefect.yaml) in /app, the working
# directory of every run. docker-compose.yml runs the Prefect server, the one-shot
# `deploy` step and the worker from it; docs/deployment.md walks through it.
#
#   docker build -t cseaug-worker .                            # CPU torch (default)
#   docker build -t cseaug-worker:cu124 --build-arg TORCH_VARIANT=cu124 .   # GPU stages
#
# TORCH_VARIANT names a wheel index of download.pytorch.org (cpu, cu124, cu126, ...). The
# CUDA wheels carry their CUDA libraries, so the same slim base image serves both; the
# host needs the NVIDIA driver and container toolkit for a GPU variant.
ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim AS builder
ARG TORCH_VARIANT=cpu
# The project's extras the image carries: hf (models), spacy (OssCSE negation), s3 (object
# storage) and dask (execution.runner: dask). Add ray for execution.runner: ray
# (--build-arg EXTRAS="hf spacy s3 dask ray"; ~200 MB more).
ARG EXTRAS="hf spacy s3 dask"
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src

# torch first, from the index of the chosen variant, at the version constraints.txt pins:
# anything installed later finds it satisfied and never pulls PyPI's CUDA build. The
# constraints get the variant's local version so that the pin still holds for a GPU build.
COPY constraints.txt ./
RUN torch_version="$(sed -n 's/^torch==\([^+]*\).*/\1/p' constraints.txt)" \
 && test -n "$torch_version" \
 && sed "s/^torch==.*/torch==${torch_version}+${TORCH_VARIANT}/" constraints.txt > build-constraints.txt \
 && pip install --index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}" \
        "torch==${torch_version}+${TORCH_VARIANT}"

# The dependencies in their own layer (they change far less often than the code), read
# from pyproject.toml: the package itself and the extras named by EXTRAS, under the
# constraints the test suite ran with.
COPY pyproject.toml ./
RUN python -c "import os, tomllib; project = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
extras = project['optional-dependencies']; \
print('\n'.join(project['dependencies'] + [r for name in os.environ['EXTRAS'].split() for r in extras[name]]))" > build-requirements.txt \
 && pip install -c build-constraints.txt -r build-requirements.txt

# The project itself, without dependencies (all installed above).
COPY . /src
RUN pip install --no-deps /src


FROM python:${PYTHON_VERSION}-slim AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    DO_NOT_TRACK=1 \
    PREFECT_SERVER_ANALYTICS_ENABLED=false \
    HF_HOME=/home/cseaug/.cache/huggingface
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin cseaug
COPY --from=builder /opt/venv /opt/venv

# The code stays root-owned (read-only to the worker); only the storage root, the Prefect
# home, the Hugging Face cache and the response cache's key (docs/security.md) are the user's. Named volumes mounted on these paths
# start with this ownership.
WORKDIR /app
COPY . /app
RUN mkdir -p /app/storage /app/data /home/cseaug/.prefect "$HF_HOME" /home/cseaug/.config/cseaug \
 && chown -R cseaug:cseaug /app/storage /home/cseaug/.prefect /home/cseaug/.cache /home/cseaug/.config
USER 10001:10001

CMD ["cseaug", "--help"]
