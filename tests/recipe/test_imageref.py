"""Image references: docker's grammar, accepted and refused, and the recipe schema using it.

The accepted/refused tables follow distribution/reference (reference_test.go cases re-derived
from the grammar, not copied).  Where the docker CLI is installed, the refusals are cross-checked
against its own parser: ``docker create -- REF`` says "invalid reference format" before it ever
tries the engine (there is no Docker engine here, so a valid reference fails later, at connect).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autobench.errors import RecipeError
from autobench.recipe.imageref import ImageRef, ImageRefError, is_image_ref, parse_image_ref
from autobench.recipe.loader import load_recipe

D64 = "sha256:" + "a" * 64

ACCEPTED = [
    # text, domain, path, tag, digest
    ("ubuntu", None, "ubuntu", None, None),
    ("vllm/vllm-openai:v0.11.0", None, "vllm/vllm-openai", "v0.11.0", None),
    ("vllm/vllm-openai:nightly-aarch64", None, "vllm/vllm-openai", "nightly-aarch64", None),
    (f"vllm/vllm-openai@{D64}", None, "vllm/vllm-openai", None, D64),
    (f"vllm/vllm-openai:v1@{D64}", None, "vllm/vllm-openai", "v1", D64),
    ("ghcr.io/org/team/img:1.0", "ghcr.io", "org/team/img", "1.0", None),
    ("localhost/img", "localhost", "img", None, None),
    ("localhost:5000/img:tag", "localhost:5000", "img", "tag", None),
    ("registry.example.com:443/a/b", "registry.example.com:443", "a/b", None, None),
    ("[::1]:5000/img", "[::1]:5000", "img", None, None),
    ("Registry/img", "Registry", "img", None, None),  # an upper-case first part is a host
    ("a__b/c--d/e.f_g:T_1.x-y", None, "a__b/c--d/e.f_g", "T_1.x-y", None),
    ("localhost:5000", None, "localhost", "5000", None),  # image "localhost", tag "5000"
    ("nvcr.io/nvidia/vllm:25.09-py3", "nvcr.io", "nvidia/vllm", "25.09-py3", None),
]

REFUSED = [
    ("--volume=/:/host", "starts with '-'"),
    ("-v", "starts with '-'"),
    ("--privileged", "starts with '-'"),
    ("", "empty"),
    ("img name", "a space"),
    ("img\tx", "\\t"),
    ("img\n", "\\n"),
    ("img\x1b[31m", "\\x1b"),
    ("$(touch pwned)", "'$'"),
    ("`id`", "'`'"),
    ("img;rm", "';'"),
    ("Uppercase/Img", "lower-case"),  # domain "Uppercase", then path "Img"
    ("vllm/VLLM", "lower-case"),
    ("a//b", "empty"),
    ("a/", "empty"),
    ("img:", "tag"),
    ("img:-tag", "tag"),
    ("img:" + "t" * 129, "tag"),
    ("img@sha256:abc", "64 hex digits"),
    ("img@sha256:" + "A" * 64, "algorithm:hex"),
    ("img@md5:" + "a" * 32, "not sha256"),
    ("img@" + D64 + "@" + D64, "more than one '@'"),
    ("host:99999/img", "port"),
    ("-host.io/img", "starts with '-'"),
    ("host-.io/img", "host name"),
    ("_a/b", "path component 1"),
    ("a-/b", "path component 1"),
    ("a" * 64, "image id"),
    ("x/" + "a" * 300, "characters long"),
    ("img\u00e9", "no image reference allows"),
]


@pytest.mark.parametrize(("text", "domain", "path", "tag", "digest"), ACCEPTED)
def test_accepted_references_parse_into_parts(text, domain, path, tag, digest):
    ref = parse_image_ref(text)
    assert (ref.domain, ref.path, ref.tag, ref.digest) == (domain, path, tag, digest)
    assert str(ref) == text
    assert is_image_ref(text)


@pytest.mark.parametrize(("text", "why"), REFUSED)
def test_refused_references_say_why_without_repeating_the_value(text, why):
    with pytest.raises(ImageRefError) as info:
        parse_image_ref(text)
    assert why in info.value.reason
    if len(text) > 3:
        assert text not in info.value.reason
    assert not is_image_ref(text)


def test_untagged_digest_only_and_canonical_forms():
    assert parse_image_ref("ubuntu").untagged
    assert parse_image_ref("ubuntu").effective_tag == "latest"
    assert parse_image_ref("ubuntu").canonical == "docker.io/library/ubuntu:latest"
    pinned = parse_image_ref(f"ghcr.io/o/i@{D64}")
    assert pinned.pinned and not pinned.untagged and pinned.effective_tag is None
    assert pinned.canonical == f"ghcr.io/o/i@{D64}"
    tagged = parse_image_ref("vllm/vllm-openai:v1")
    assert (tagged.registry, tagged.repository) == ("docker.io", "vllm/vllm-openai")
    assert str(tagged.with_digest(D64)) == f"vllm/vllm-openai:v1@{D64}"
    with pytest.raises(ImageRefError):
        tagged.with_digest("sha256:zz")


# Generated from the grammar itself: every reference built from its productions parses back into
# the same parts.
_ALNUM = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=6)
_COMPONENT = st.builds(
    lambda first, rest: first + "".join(sep + part for sep, part in rest),
    _ALNUM,
    st.lists(st.tuples(st.sampled_from([".", "_", "__", "-", "--"]), _ALNUM), max_size=2),
)
_DOMAIN = st.one_of(
    st.none(),
    st.sampled_from(["localhost", "ghcr.io", "registry.example.com", "[::1]", "10.0.0.1", "Reg"]).flatmap(
        lambda host: st.sampled_from([host, host + ":5000"])
    ),
)
_TAG = st.none() | st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True)
_DIGEST = st.none() | st.text("0123456789abcdef", min_size=64, max_size=64).map(lambda h: "sha256:" + h)


@settings(max_examples=200, deadline=None)
@given(_DOMAIN, st.lists(_COMPONENT, min_size=1, max_size=3), _TAG, _DIGEST)
def test_grammar_generated_references_round_trip(domain, components, tag, digest):
    path = "/".join(components)
    ref = ImageRef(domain, path, tag, digest)
    if domain is None and len(components) > 1 and ("." in components[0] or components[0] == "localhost"):
        # docker's rule: a first part with a '.' (or "localhost") names a registry host, which
        # must then be a host name: "a.b_c/x" is refused (stricter than docker, which reads it as a path)
        if "_" in components[0]:
            with pytest.raises(ImageRefError, match="host"):
                parse_image_ref(str(ref))
            return
        parsed = parse_image_ref(str(ref))
        assert (parsed.domain, parsed.path) == (components[0], "/".join(components[1:]))
        return
    assert parse_image_ref(str(ref)) == ref


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_parses_or_raises_imagereferror_and_never_starts_with_dash(text):
    try:
        ref = parse_image_ref(text)
    except ImageRefError as exc:
        assert exc.reason and "\n" not in exc.reason
        return
    assert not str(ref).startswith("-")
    assert all(c.isprintable() and not c.isspace() for c in str(ref))


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker CLI not installed")
@pytest.mark.parametrize("text", ["--volume=/:/host", "img name", "vllm/VLLM", "img:-tag", "a//b", "img@sha256:abc"])
def test_refusals_agree_with_the_docker_cli(text):
    # `--` ends docker's options, so the value is read as the image and the CLI's own parser judges it.
    proc = subprocess.run(
        ["docker", "create", "--", text],
        capture_output=True,
        text=True,
        timeout=20,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "DOCKER_HOST": "unix:///nonexistent.sock"},
    )
    assert proc.returncode != 0
    assert "invalid reference format" in proc.stderr


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker CLI not installed")
@pytest.mark.parametrize("text", [t for t, *_ in ACCEPTED])
def test_acceptances_agree_with_the_docker_cli(text):
    proc = subprocess.run(
        ["docker", "create", "--", text],
        capture_output=True,
        text=True,
        timeout=20,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "DOCKER_HOST": "unix:///nonexistent.sock"},
    )
    assert "invalid reference format" not in proc.stderr  # it got as far as the (absent) engine


def test_recipe_with_a_flag_for_an_image_is_refused_at_the_key(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text('model: {repo: org/m}\ncontainer:\n  image: "--volume=/:/host"\n')
    with pytest.raises(RecipeError) as info:
        load_recipe(recipe)
    assert info.value.location == f"{recipe}:3:10"
    assert "container.image: not an image reference: starts with '-'" in str(info.value)
    assert "/:/host" not in str(info.value)


def test_a_reference_that_is_not_text_is_refused_even_unhashable():
    # parse_image_ref remembers the strings it parsed; what is not a string never reaches the cache
    for value in (["vllm/vllm-openai:v0.11.0"], {"a": 1}, 3, None):
        with pytest.raises(ImageRefError, match="an image reference is text"):
            parse_image_ref(value)  # type: ignore[arg-type]
    # the same string parsed twice is the same (frozen) answer, and a bad one fails every time
    assert parse_image_ref("vllm/vllm-openai:v0.11.0") is parse_image_ref("vllm/vllm-openai:v0.11.0")
    for _ in range(2):
        with pytest.raises(ImageRefError, match="starts with '-'"):
            parse_image_ref("-x")
