# autobench's default engine build (recipe `build:`): vLLM from a git ref, upstream PRs merged on top.
# The build's own record: /opt/vllm-src/AUTOBENCH_COMMIT holds the commit that was built.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG VLLM_REPO
ARG VLLM_REF
ARG VLLM_PRS=""
RUN set -eux; \
    git clone -- "${VLLM_REPO}" /opt/vllm-src; \
    cd /opt/vllm-src; \
    git checkout "${VLLM_REF}"; \
    for pr in ${VLLM_PRS}; do \
      git fetch origin "pull/${pr}/head:autobench-pr-${pr}"; \
      git -c user.name=autobench -c user.email=autobench@localhost merge --no-edit "autobench-pr-${pr}"; \
    done; \
    git rev-parse HEAD > /opt/vllm-src/AUTOBENCH_COMMIT; \
    pip install --no-cache-dir -e .
ENTRYPOINT ["vllm", "serve"]
