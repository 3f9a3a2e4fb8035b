"""`compile --target k8s`: the manifests for a 1-node recipe (Deployment + Service + bench Job)
and a 2-node recipe (LeaderWorkerSet + Service + bench Job) validate against the Kubernetes
schemas (kubernetes-validate, strict: no unknown fields) and the LeaderWorkerSet schema
written from the public CRD (tests/compile/k8s/leaderworkerset-v1.schema.json), whose pod
templates are validated as Kubernetes PodTemplateSpecs; golden files hold them."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
from ruamel.yaml import YAML

from autobench.cli import main

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GOLDEN = HERE / "golden" / "k8s"
LWS_SCHEMA = json.loads((HERE / "k8s" / "leaderworkerset-v1.schema.json").read_text())
K8S_VERSION = "1.33"
ONE_NODE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
TWO_NODE = HERE / "k8s" / "two-node.yaml"
RUN_ID = "golden-run-1"


def _compile(capsys, recipe: Path, *more: str) -> tuple[int, str, str]:
    code = main(
        ["compile", str(recipe), "--target", "k8s", "--run-id", RUN_ID, "--bench-image", "autobench:test", *more]
    )
    out, err = capsys.readouterr()
    return code, out, err


def _docs(text: str) -> list[dict]:
    return [d for d in YAML(typ="safe", pure=True).load_all(text) if d is not None]


def validate(doc: dict) -> None:
    """Kubernetes kinds against Kubernetes' schema; a LeaderWorkerSet against the LWS schema,
    its leader and worker pod templates against Kubernetes' PodTemplateSpec."""
    if doc["kind"] != "LeaderWorkerSet":
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        return
    jsonschema.validate(doc, LWS_SCHEMA)
    lwt = doc["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        wrapper = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": lwt[key]}
        kubernetes_validate.validate(wrapper, K8S_VERSION, strict=True)


@pytest.mark.parametrize(
    ("recipe", "kinds"),
    [(ONE_NODE, ["Deployment", "Service", "Job"]), (TWO_NODE, ["LeaderWorkerSet", "Service", "Job"])],
)
def test_manifests_validate_and_match_the_golden_files(capsys, recipe, kinds):
    code, out, err = _compile(capsys, recipe)
    assert code == 0, err
    docs = _docs(out)
    assert [d["kind"] for d in docs] == kinds
    for doc in docs:
        validate(doc)
    golden = GOLDEN / f"{recipe.stem}.yaml"
    if os.environ.get("AUTOBENCH_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out, encoding="utf-8")
    assert golden.exists(), f"missing golden {golden}; run with AUTOBENCH_UPDATE_GOLDEN=1"
    assert out == golden.read_text(encoding="utf-8"), "manifests changed; AUTOBENCH_UPDATE_GOLDEN=1 to accept"


def test_the_validators_catch_broken_manifests(capsys):
    """The checks above can fail: an unknown field, a wrong type, an LWS size of 0 are caught."""
    docs = _docs(_compile(capsys, TWO_NODE)[1])
    lws, service, job = docs
    broken = copy.deepcopy(service)
    broken["spec"]["ports"][0]["port"] = "eight thousand"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)
    broken = copy.deepcopy(job)
    broken["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"  # a typo: strict refuses it
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)
    broken = copy.deepcopy(lws)
    broken["spec"]["leaderWorkerTemplate"]["size"] = 0
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)
    broken = copy.deepcopy(lws)
    broken["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"] = {"limits": []}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)


def test_labels_secrets_and_multinode_wiring(capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_" + "s3cr3tvalue" * 4)
    code, out, _ = _compile(
        capsys, TWO_NODE, "--secret", "team-secrets", "--hf-cache-pvc", "hf-cache", "--namespace", "bench"
    )
    assert code == 0 and "s3cr3tvalue" not in out  # secrets by name only
    docs = _docs(out)
    lws, service, job = docs
    pods = [
        lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"],
        lws["spec"]["leaderWorkerTemplate"]["workerTemplate"],
        job["spec"]["template"],
    ]
    for obj in [*docs, *pods]:
        labels = obj["metadata"]["labels"]
        assert labels["autobench.dev/run-id"] == RUN_ID
        assert len(labels["autobench.dev/recipe-digest"]) == 40
        assert obj["metadata"]["annotations"]["autobench.dev/recipe-digest"].startswith("sha256:")
    for doc in docs:
        assert doc["metadata"]["namespace"] == "bench"
    leader, worker = (p["spec"]["containers"][0] for p in pods[:2])
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "team-secrets", "key": "HF_TOKEN"}}} in leader[
        "env"
    ]
    assert leader["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert leader["args"][-2:] == ["--node-rank", "0"] and "--headless" in worker["args"]
    assert "$(LWS_LEADER_ADDRESS)" in worker["args"] and "$(LWS_WORKER_INDEX)" in worker["args"]
    assert service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": lws["metadata"]["name"],
        "role": "leader",
    }
    assert pods[0]["spec"]["volumes"][0] == {"name": "hf-cache", "persistentVolumeClaim": {"claimName": "hf-cache"}}
    assert job["spec"]["completionMode"] == "Indexed"
    assert (
        f"--base-url http://{service['metadata']['name']}:8000"
        in job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    )


def test_ray_executor_validates_too(capsys, tmp_path):
    recipe = tmp_path / "ray.yaml"
    recipe.write_text(TWO_NODE.read_text().replace("  gpus_per_node: 8\n", "  gpus_per_node: 8\n  executor: ray\n"))
    code, out, err = _compile(capsys, recipe)
    assert code == 0, err
    docs = _docs(out)
    for doc in docs:
        validate(doc)
    leader = docs[0]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    worker = docs[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    # the leader waits until Ray sees both nodes before vLLM places its workers
    assert leader["args"][0].startswith(
        "ray start --head --port=6379 && until ray status 2>/dev/null | grep -c ' node_' | awk '$1 < 2 {exit 1}'; "
        "do sleep 5; done && exec vllm serve Qwen/Qwen3.5-397B-A17B-FP8"
    )
    assert leader["args"][0].endswith("--distributed-executor-backend ray")
    assert worker["args"] == ['exec ray start --address="$LWS_LEADER_ADDRESS:6379" --block']


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-nodes", "1"], "topology.nodes is 2, more than the 1 nodes the target offers"),
        (["--run-id", "bad id!"], "is not a Kubernetes label value"),
        (["--namespace", "Bad_NS"], "is not a Kubernetes name"),
    ],
)
def test_bad_input_is_one_line(capsys, args, message):
    code, out, err = _compile(capsys, TWO_NODE, *args)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


@pytest.mark.integration
def test_compile_k8s_never_imports_the_hub():
    """compile never touches the network (the architecture's rule), k8s target included."""
    code = (
        "import sys; from autobench.cli import main; "
        f"rc = main(['compile', {str(TWO_NODE)!r}, '--target', 'k8s', '--run-id', 'x']); "
        "assert 'huggingface_hub' not in sys.modules, 'hub imported'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.integration  # runs the Job's script under bash
def test_the_bench_job_reports_its_wait_for_the_server_every_ten_seconds(capsys, tmp_path):
    """Boot progress (issue #31) in the bench Job: the pod cannot read the server pod's log, so
    while /health does not answer it prints the time elapsed and what it waits for, every 10 s
    of the wait.  The script as compiled, under bash, with `python3` (the probe) answering on its
    sixth call and `sleep` advancing bash's own clock instead of waiting."""
    _, out, _ = _compile(capsys, ONE_NODE)
    script = _docs(out)[-1]["spec"]["template"]["spec"]["containers"][0]["command"][2]
    wait = script[: script.index("autobench bench ")]
    assert "$(" not in script  # the kubelet would expand $(NAME)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    probe = bindir / "python3"
    probe.write_text('#!/bin/sh\nn=$(cat "$0.n" 2>/dev/null || echo 0)\necho $((n + 1)) > "$0.n"\n[ "$n" -ge 5 ]\n')
    probe.chmod(0o755)
    fake_sleep = "sleep() { SECONDS=$((SECONDS + $1)); }\n"
    done = subprocess.run(
        ["bash", "-c", fake_sleep + wait + "echo ready"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"},
    )
    assert done.returncode == 0, done.stderr
    url = "http://ab-qwen3-5-122b-a10b-vllm-int4-autor-0dddad:8000/health"
    assert done.stdout.splitlines() == [
        f"boot: 0:10 elapsed, {url} not ready yet",
        f"boot: 0:20 elapsed, {url} not ready yet",
        "ready",
    ]
