"""Every file a user, a recipe or an environment variable names is read through the one
file-reading policy (autobench.files): a FIFO or device is refused before it can block, a file
over its reader's size limit is refused from its size, and hashing streams (memory bounded,
and never more than the file's stated size).  Sparse files stand in for huge ones (no disk)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from autobench import files
from autobench.bench.result import MAX_RESULT_BYTES, load_result_json
from autobench.errors import AutobenchError, BenchError, HubError, PreflightError, RegistryError
from autobench.hub.client import stored_token
from autobench.hub.lockfile import MAX_LOCK_BYTES, lock_path_for, read_lock
from autobench.image.credentials import find_credentials
from autobench.preflight.inputs import MAX_CONFIG_BYTES, read_local
from autobench.recipe.loader import content_sha256, local_model_digest
from autobench.record import result_times


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def one_line(exc: AutobenchError) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


@pytest.mark.parametrize(
    ("reader", "error", "limit"),
    [(load_result_json, BenchError, MAX_RESULT_BYTES), (read_local, PreflightError, MAX_CONFIG_BYTES)],
    ids=["result file", "preflight model config"],
)
def test_a_named_file_that_is_a_fifo_or_too_big_is_refused(tmp_path, reader, error, limit):
    with pytest.raises(error) as info:
        reader(fifo(tmp_path / "a.json"))
    assert "FIFO" in one_line(info.value)
    with pytest.raises(error) as info:
        reader(sparse(tmp_path / "big.json", limit + 1))
    assert f"over the {limit // 2**20} MiB limit" in one_line(info.value)


def test_a_result_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b'{"date": "\xff"}')
    with pytest.raises(BenchError) as info:
        load_result_json(path)
    assert "not UTF-8" in one_line(info.value)


def test_result_times_of_a_fifo_is_unknown_not_a_hang(tmp_path):
    assert result_times(str(fifo(tmp_path / "r.json"))) == (None, None)
    good = tmp_path / "g.json"
    good.write_text('{"date": "20261207-120000", "duration": 60}')
    started, ended = result_times(str(good))
    assert started is not None and ended is not None and started < ended


def test_a_mod_is_hashed_as_before_and_a_fifo_in_a_mod_folder_is_refused(tmp_path):
    mod = tmp_path / "m.sh"
    mod.write_bytes(b"echo patched\n" * 100_000)  # over one read block
    assert content_sha256(mod) == "sha256:" + hashlib.sha256(mod.read_bytes()).hexdigest()
    folder = tmp_path / "mod"
    folder.mkdir()
    (folder / "run.sh").write_text("echo hi\n")
    fifo(folder / "pipe")
    with pytest.raises(OSError, match="special file"):
        content_sha256(folder)


def test_hashing_reads_no_more_than_the_stated_size():
    # /proc files state size 0 and have content: hashing one is refused, not read for ever
    with pytest.raises(AutobenchError, match="larger than its stated size"):
        files.sha256_regular("/proc/self/status", what="mod file")


def test_an_empty_file_hashes_to_the_empty_digest(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    assert files.sha256_regular(tmp_path / "e", what="f") == hashlib.sha256(b"").digest()


def test_a_local_model_digest_streams_its_json_files(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"x" * 10)
    first = local_model_digest(tmp_path)
    (tmp_path / "config.json").write_text('{"a": 1}')
    assert first is not None and local_model_digest(tmp_path) not in (None, first)


def test_a_token_path_naming_a_fifo_or_a_huge_file_gives_no_token(tmp_path):
    assert stored_token({"HF_TOKEN_PATH": str(fifo(tmp_path / "tok"))}) is None
    assert stored_token({"HF_TOKEN_PATH": str(sparse(tmp_path / "big", 2**20))}) is None
    (tmp_path / "t").write_text("hf_abc\n")
    assert stored_token({"HF_TOKEN_PATH": str(tmp_path / "t")}) == "hf_abc"


def test_a_docker_config_that_is_a_fifo_is_one_line(tmp_path):
    fifo(tmp_path / "config.json")
    with pytest.raises(RegistryError) as info:
        find_credentials("registry.example", {"DOCKER_CONFIG": str(tmp_path)})
    assert "docker config" in one_line(info.value)
    assert find_credentials("registry.example", {"DOCKER_CONFIG": str(tmp_path / "none")}) is None


def test_a_lock_file_that_is_too_big_is_one_line(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\n")
    sparse(lock_path_for(recipe), MAX_LOCK_BYTES + 1)
    with pytest.raises(HubError) as info:
        read_lock(recipe)
    assert "lock file" in one_line(info.value)


def _socket(path: Path) -> Path:
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays
    return path


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (fifo, "a FIFO (named pipe)"),
        (lambda p: Path("/dev/null"), "a character device"),
        (lambda p: Path("/dev/loop0"), "a block device"),
        (_socket, "a socket"),
        (lambda p: (p.mkdir(), p)[1], "a directory"),
    ],
    ids=["fifo", "char", "block", "socket", "dir"],
)
def test_a_special_file_is_named_for_what_it_is(tmp_path, make, kind):
    path = make(tmp_path / "x")
    if not path.exists():
        pytest.skip(f"{path} does not exist on this machine")
    with pytest.raises(AutobenchError) as info:
        files.read_regular(path, what="result file", limit=10)
    assert one_line(info.value) == (
        f"{path}: result file is {kind}, not a regular file (hint: give a regular file (special files such as "
        "FIFOs and devices are refused: they can block or never end))"
    )


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"), (1536, "1.5 KiB"), (2**20, "1 MiB"), (3 * 2**30, "3 GiB")],
)
def test_sizes_are_said_in_binary_units(n, text):
    assert files.human_bytes(n) == text


# -- the bounds themselves, at their edges (from the mutation run of files.py) -------------------


def test_a_file_of_exactly_the_limit_is_read_whole(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert files.read_regular(path, what="f", limit=100) == b"x" * 100
    with pytest.raises(AutobenchError) as info:
        files.read_regular(path, what="f", limit=99)
    assert (
        one_line(info.value)
        == f"{path}: f is 100 bytes, over the 99 bytes limit (hint: split it or sample it into a smaller file)"
    )


def test_lines_of_a_file_of_exactly_the_limit_are_all_read_numbered_from_one(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc\n" * 25)  # 100 bytes
    got = list(files.read_lines(path, what="f", limit=100, max_line=4))
    assert got == [(n, b"abc\n") for n in range(1, 26)]  # a line of exactly max_line bytes is kept


def test_a_line_one_byte_over_max_line_is_skipped_and_the_next_kept(tmp_path):
    # max_line counts a line's bytes before its newline
    path = tmp_path / "f"
    path.write_bytes(b"abcd\nabcde\nok\n")
    assert list(files.read_lines(path, what="f", limit=100, max_line=4)) == [(1, b"abcd\n"), (2, None), (3, b"ok\n")]


@pytest.mark.parametrize(
    "read",
    [
        lambda p: files.read_regular(p, what="f", limit=10),
        lambda p: files.sha256_regular(p, what="f"),
        lambda p: list(files.read_lines(p, what="f", limit=10, max_line=5)),
    ],
    ids=["read_regular", "sha256_regular", "read_lines"],
)
def test_a_read_error_is_one_line_naming_the_file(read):
    # /proc/self/mem is a regular file whose read at offset 0 fails with EIO
    with pytest.raises(AutobenchError) as info:
        read("/proc/self/mem")
    assert one_line(info.value) == "/proc/self/mem: cannot read f: Input/output error"


def test_hashing_a_big_file_holds_one_block_at_a_time(tmp_path):
    import tracemalloc

    big = sparse(tmp_path / "big", 64 * 2**20)
    tracemalloc.start()
    try:
        digest = files.sha256_regular(big, what="f")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert digest == hashlib.sha256(b"\0" * (64 * 2**20)).digest()
    assert peak < 4 * 2**20, peak  # one 1 MiB block (and its copy), never the 64 MiB file


def test_a_missing_file_and_a_path_through_a_file_are_one_line(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(AutobenchError) as info:
        files.read_regular(tmp_path / "none", what="f", limit=10, missing_hint="create it")
    assert one_line(info.value) == f"{tmp_path / 'none'}: f not found (hint: create it)"
    with pytest.raises(AutobenchError) as info:
        files.read_regular(tmp_path / "f" / "x", what="f", limit=10)
    assert one_line(info.value) == f"{tmp_path / 'f' / 'x'}: cannot read f: Not a directory"


def test_open_failing_after_the_check_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "f").write_text("x")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files.os, "open", refuse)
    with pytest.raises(AutobenchError) as info:
        files.read_regular(tmp_path / "f", what="f", limit=10)
    assert one_line(info.value) == f"{tmp_path / 'f'}: cannot read f: Permission denied"


def test_a_file_swapped_for_a_fifo_after_the_check_is_refused_without_blocking(tmp_path, monkeypatch):
    # the path is checked with stat, then opened: a FIFO put there in between must neither block
    # the open (O_NONBLOCK) nor be read (fstat on the open descriptor)
    regular = os.stat(__file__)
    path = fifo(tmp_path / "swapped")
    real_stat = os.stat
    monkeypatch.setattr(files.os, "stat", lambda p, *a, **k: regular if os.fspath(p) == str(path) else real_stat(p))
    open_fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(AutobenchError) as info:
        files.read_regular(path, what="f", limit=10**9)
    assert "is a FIFO (named pipe), not a regular file" in one_line(info.value)
    assert len(os.listdir("/proc/self/fd")) == open_fds  # the refused descriptor was closed


def test_a_last_line_of_exactly_max_line_bytes_is_kept(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"ok\nabcd")  # no newline at the end
    assert list(files.read_lines(path, what="f", limit=100, max_line=4)) == [(1, b"ok\n"), (2, b"abcd")]


def test_no_folder_is_allowed_unless_named(tmp_path):
    assert files.allowed_dirs({}) == []
    assert files.allowed_dirs({files.ALLOW_ENV: f"{tmp_path}::"}) == [tmp_path.resolve()]


def test_a_path_outside_the_tree_says_how_to_allow_it(tmp_path):
    with pytest.raises(AutobenchError) as info:
        files.confined("../x.sh", tmp_path / "r", what="mod", location="r.yaml:3:5", allow=[])
    assert one_line(info.value) == (
        f"r.yaml:3:5: mod '../x.sh' is outside the recipe's folder ({tmp_path / 'r'}) "
        f"(hint: keep it inside the recipe's folder, or allow its folder with {files.ALLOW_ENV}=DIR)"
    )
