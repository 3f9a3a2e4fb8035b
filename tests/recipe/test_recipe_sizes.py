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
from autobench.recipe.sizes import from_kubernetes_quantity, kubernetes_quantity, parse_size

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


@pytest.mark.parametrize(
    ("quantity", "size"),
    [
        ("20Gi", "20Gi"),  # binary: docker reads it as written
        ("1.5Gi", "1.5Gi"),
        ("512Mi", "512Mi"),
        ("20G", "20000000000"),  # decimal in Kubernetes, binary to docker: written as bytes
        ("1k", "1000"),
        ("2E", "2000000000000000000"),
        ("1Ei", str(1024**6)),  # docker has no exa unit
        ("20e9", "20000000000"),
        ("129E6", "129000000"),
        ("128974848", "128974848"),
        ("20.Gi", str(20 * GI)),  # Kubernetes' "20." is not docker's
        (".5Gi", str(GI // 2)),
        ("0.5", "1"),  # Kubernetes rounds a fraction of a byte up
        ("1e-3", "1"),
    ],
)
def test_a_kubernetes_quantity_becomes_a_docker_size_of_the_same_bytes(quantity, size):
    assert from_kubernetes_quantity(quantity) == size
    assert parse_size(size) == k8s_bytes(quantity)


def k8s_bytes(quantity: str) -> int:
    """The bytes of a quantity, computed here independently of the parser (Kubernetes' units)."""
    import math
    from decimal import Decimal

    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ei": 2**60, "k": 10**3, "G": 10**9, "E": 10**18}
    for unit, factor in units.items():
        if quantity.endswith(unit):
            return math.ceil(Decimal(quantity[: -len(unit)]) * factor)
    return math.ceil(Decimal(quantity))


@pytest.mark.parametrize(
    ("quantity", "why"),
    [
        ("20Gx", "is not a Kubernetes quantity"),
        ("20 Gi", "is not a Kubernetes quantity"),
        ("1m", "is not a"),
        ("-1", "is not a"),
        ("0", "is less than one byte"),
    ],
)
def test_what_is_no_byte_quantity_is_refused(quantity, why):
    with pytest.raises(ValueError, match=why):
        from_kubernetes_quantity(quantity)


def _helm(tmp_path: Path, shm: str):
    source = tmp_path / "values.yaml"
    text = (CORPUS / "helm-production-stack.yaml").read_text()
    source.write_text(text.replace("      requestGPU: 1\n", f"      requestGPU: 1\n      shmSize: {shm}\n"))
    (imported,) = convert(source)
    (tmp_path / "out").mkdir()
    path, _ = check_imported(imported, tmp_path / "out")  # validates (rule AB057) and compiles it
    return imported, load_recipe(path)


@pytest.mark.parametrize(("shm", "docker", "k8s"), [("20Gi", "20Gi", "20Gi"), ("20G", "20000000000", "19531250Ki")])
def test_an_imported_helm_shm_size_compiles_for_docker_and_kubernetes(tmp_path, shm, docker, k8s):
    imported, loaded = _helm(tmp_path, shm)
    assert loaded.recipe.container.shm_size == docker
    argv = docker_argv(loaded)
    assert argv[argv.index("--shm-size") + 1] == docker
    assert f"sizeLimit: {k8s}\n" in compile_k8s(loaded, run_id="t")
    said = [n for n in imported.notes if "shmSize" in n]
    assert said == ([] if shm == docker else [f"14: shmSize {shm} is {docker} bytes (Kubernetes' units)"])


def test_an_imported_helm_shm_size_that_is_no_quantity_is_noted_not_carried(tmp_path):
    imported, loaded = _helm(tmp_path, "lots")
    assert loaded.recipe.container.shm_size is None
    assert "14: not carried: shmSize ('lots' is not a Kubernetes quantity)" in imported.notes


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
