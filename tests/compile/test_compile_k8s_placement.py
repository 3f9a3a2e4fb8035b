"""compile --target k8s --cpu/--memory/--node-selector/--toleration: every server pod template
(a Deployment's, a LeaderWorkerSet's leader and worker) gets the requests, the nodeSelector and
the tolerations, and still validates; the bench Job is left where the scheduler puts it; bad
values are one line each."""

from __future__ import annotations

import pytest
from test_compile_k8s import ONE_NODE, TWO_NODE, _compile, _docs, validate

PLACE = [
    "--cpu",
    "16",
    "--memory",
    "64Gi",
    "--node-selector",
    "nvidia.com/gpu.product=NVIDIA-H200",
    "--toleration",
    "nvidia.com/gpu:NoSchedule",
    "--toleration",
    "dedicated=bench:NoExecute",
]


def _pods(doc: dict) -> list[dict]:
    if doc["kind"] == "LeaderWorkerSet":
        lwt = doc["spec"]["leaderWorkerTemplate"]
        return [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]
    return [doc["spec"]["template"]["spec"]]


@pytest.mark.parametrize("recipe", [ONE_NODE, TWO_NODE])
def test_every_server_pod_gets_the_placement_and_validates(capsys, recipe):
    code, out, err = _compile(capsys, recipe, *PLACE)
    assert code == 0, err
    server, service, job = _docs(out)
    pods = _pods(server)
    assert len(pods) == (2 if recipe == TWO_NODE else 1)
    for pod in pods:
        assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H200"}
        assert pod["tolerations"] == [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Equal", "value": "bench", "effect": "NoExecute"},
        ]
        (container,) = pod["containers"]
        assert container["resources"]["requests"] == {"cpu": "16", "memory": "64Gi"}
        assert "nvidia.com/gpu" in container["resources"]["limits"]  # the GPU limit stays
    bench_pod = job["spec"]["template"]["spec"]
    assert "nodeSelector" not in bench_pod and "tolerations" not in bench_pod
    for doc in (server, service, job):
        validate(doc)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cpu", "lots"], "--cpu 'lots' is not a Kubernetes quantity"),
        (["--memory", "64GB"], "--memory '64GB' is not a Kubernetes quantity"),
        (["--node-selector", "gpu"], "--node-selector 'gpu' is not KEY=VALUE"),
        (["--toleration", "gpu:Sometimes"], "--toleration 'gpu:Sometimes' is not KEY[=VALUE][:EFFECT]"),
    ],
)
def test_bad_placement_is_one_line(capsys, args, message):
    code, out, err = _compile(capsys, ONE_NODE, *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
