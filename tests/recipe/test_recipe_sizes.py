"""container.shm_size: one parser (docker's spelling) for the docker and Kubernetes targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.cli.import_cmds import check_imported
from autobench.compile.argv import docker_argv
from autobench.compile.k8s import compile_k8s
from autobench.errors import RecipeError
from autobench.recipe.importer import convert
from autobench.recipe.loader import load_recipe
from autobench.recipe.sizes import kubernetes_quantity, parse_size

GI = 1024**3
CORPUS = Path(__file__).resolve().parent / "import_corpus"


@pytest.mark.parametrize(
    ("text", "size", "quantity"),
    [
        ("16g", 16 * GI, "16Gi"),
        ("16G", 16 * GI, "16Gi"),
        ("16gb", 16 * GI, "16Gi"),
        ("16GiB", 16 * GI, "16Gi"),
        ("20Gi", 20 * GI, "20Gi"),  # an imported Helm shmSize
        ("20 Gi", 20 * GI, "20Gi"),  # docker allows one space
        ("1.5g", 3 * GI // 2, "1536Mi"),
        ("512m", 512 * 1024**2, "512Mi"),
        ("64k", 64 * 1024, "64Ki"),
        ("2t", 2 * 1024**4, "2Ti"),
        ("1p", 1024**5, "1Pi"),
        ("1000", 1000, "1000"),
        ("1024b", 1024, "1Ki"),
        ("20B", 20, "20"),
        ("1.5", 1, "1"),  # docker truncates to whole bytes
    ],
)
def test_docker_spellings_mean_the_same_bytes_to_every_target(text, size, quantity):
    assert parse_size(text) == size
    assert kubernetes_quantity(text) == quantity


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("20Gx", "is not a size docker reads"),
        ("-1", "is not a size docker reads"),
        ("g", "is not a size docker reads"),
        ("1.2.3g", "is not a size docker reads"),
        ("20i", "is not a size docker reads"),
        ("20gbb", "is not a size docker reads"),
        ("20  g", "is not a size docker reads"),
        (" 20g", "is not a size docker reads"),
        ("", "is not a size docker reads"),
        ("0", "is less than one byte"),
        ("0.5", "is less than one byte"),
    ],
)
def test_what_docker_refuses_is_refused(text, why):
    with pytest.raises(ValueError, match=why):
        parse_size(text)


def test_an_imported_helm_shm_size_compiles_for_docker_and_kubernetes(tmp_path):
    source = tmp_path / "values.yaml"
    text = (CORPUS / "helm-production-stack.yaml").read_text()
    source.write_text(text.replace("      requestGPU: 1\n", "      requestGPU: 1\n      shmSize: 20Gi\n"))
    (imported,) = convert(source)
    (tmp_path / "out").mkdir()
    path, _ = check_imported(imported, tmp_path / "out")  # validates (rule AB057) and compiles it
    loaded = load_recipe(path)
    assert loaded.recipe.container.shm_size == "20Gi"
    argv = docker_argv(loaded)
    assert argv[argv.index("--shm-size") + 1] == "20Gi"
    assert "sizeLimit: 20Gi" in compile_k8s(loaded, run_id="t")


def test_kubernetes_refuses_an_unchecked_bad_size_in_one_line(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(
        "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n  shm_size: 20Gx\n"
        "  ports: ['8000:8000']\nbench:\n  dataset:\n    kind: random\n"
    )
    with pytest.raises(RecipeError) as info:
        compile_k8s(load_recipe(path), run_id="t", check=False)  # past the rules (AB057): the parser still refuses
    assert str(info.value) == (
        "container.shm_size: '20Gx' is not a size docker reads (hint: a number and a unit docker reads, e.g. 16g, 512m or 20Gi)"
    )
