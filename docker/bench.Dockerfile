# The bench image of `autobench compile --target k8s` (--bench-image; default autobench:VERSION):
# autobench and its bench client, which the bench Job runs with bash and python3
# (docs/k8s.md, "The bench image").  Build it from the repository's root:
#
#   docker build -f docker/bench.Dockerfile -t autobench:0.1.0 .
#
# tests/compile/test_compile_k8s_bench_image.py reads this file (no Docker engine runs there).
FROM python:3.11-slim

# The package, as pyproject.toml and setup.py build it (templates/ ships as autobench/templates).
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY autobench ./autobench
COPY templates ./templates
RUN pip install --no-cache-dir . && rm -rf /src

# The Hugging Face cache the Job mounts (the served model's tokenizer is read through it).
ENV HF_HOME=/root/.cache/huggingface
WORKDIR /
CMD ["autobench", "--help"]
