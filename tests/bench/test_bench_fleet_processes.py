"""``--workers 2`` for real: two load generator processes against the synthetic server, their
records merged (the protocol and the merge are tested in-process in test_bench_fleet.py)."""

from __future__ import annotations

from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.record import OK


@pytest.mark.integration
def test_two_load_generator_processes_make_one_result(synth: Any) -> None:
    srv = synth(ttft_ms=2, itl_ms=1)
    res = run_bench(
        BenchConfig(
            base_url=srv.base_url,
            model="m",
            num_prompts=40,
            concurrency=8,
            max_tokens=6,
            random_input_len=16,
            workers=2,
            warmup=2,
            tokenizer="estimated",
        )
    )
    d = res.to_json_dict()
    assert (d["completed"], d["failed"], d["incomplete"]) == (40, 0, 0)
    assert d["total_output_tokens"] == 40 * 6 and d["itl_samples"] + d["itl_unseen_gaps"] == 40 * 5
    gens = d["workers"]["generators"]  # type: ignore[index]
    assert [g["requests"] for g in gens] == [20, 20] and [g["concurrency"] for g in gens] == [4, 4]
    assert all(g["cpu_seconds"] > 0 for g in gens)
    assert all(abs(g["clock_offset_ms"]) <= g["clock_round_trip_ms"] / 2 + 1e-6 for g in gens)  # one host, one clock
    assert res.samples is not None and res.samples.count(OK) == 40
    assert d["client"]["cpu_seconds"] == pytest.approx(sum(g["cpu_seconds"] for g in gens))  # type: ignore[index]


@pytest.mark.integration
def test_a_generator_that_dies_is_one_error_with_its_last_words() -> None:
    import sys

    from autobench.bench import fleet
    from autobench.errors import BenchError

    gen = fleet._Generator(0, [sys.executable, "-c", "import sys; sys.stderr.write('first\\nboom: no luck\\n')"])
    try:
        with pytest.raises(BenchError, match=r"^load generator 0 ended before it answered: boom: no luck$"):
            gen.read("ready")
        gen.proc.wait(30)
        with pytest.raises(BenchError, match=r"^load generator 0 is gone \(.*\): boom: no luck$"):
            gen.send(fleet.message("ping"))
    finally:
        gen.close()
    assert gen.proc.returncode == 0 and gen.errors.closed


@pytest.mark.integration
def test_a_generator_runs_the_parents_own_autobench(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started from another folder with another PYTHONPATH, the worker still imports the parent's
    autobench (the checkout it was started from)."""
    import sys

    import autobench
    from autobench.bench import fleet

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    probe = "import autobench, sys; sys.stderr.write(autobench.__file__ + '\\n')"
    gen = fleet._Generator(1, [sys.executable, "-c", probe])
    gen.proc.wait(30)
    assert gen.stderr_tail() == f": {autobench.__file__}"
    gen.close()


@pytest.mark.integration
def test_a_generator_that_speaks_garbage_is_named_without_its_stderr() -> None:
    import sys

    from autobench.bench import fleet
    from autobench.errors import BenchError

    # its stderr is written before the garbage line, so it is there when the parent reads that line
    script = "import sys; sys.stderr.write('noise\\n'); sys.stderr.flush(); print('garbage', flush=True)"
    gen = fleet._Generator(2, [sys.executable, "-c", script])
    try:
        with pytest.raises(BenchError, match=r"^load generator 2 sent a line that is not JSON: b'garbage\\n'$"):
            gen.read("ready")
    finally:
        gen.close()


# ---- from the mutation run of fleet.py (every mutant, 2026-12-07 evening) -----------------------
@pytest.mark.integration
def test_a_generator_process_refusing_its_plan_is_its_own_error() -> None:
    import sys

    from autobench.bench import fleet
    from autobench.errors import BenchError

    line = fleet.message("error", message="model 'x' rejected", hint="fix --model").decode()
    gen = fleet._Generator(
        0, [sys.executable, "-c", f"import sys; sys.stdout.write({line!r}); sys.stdout.flush(); sys.stdin.read()"]
    )
    try:
        with pytest.raises(BenchError) as e:
            gen.read("ready")
        assert (e.value.message, e.value.hint) == ("model 'x' rejected", "fix --model")
    finally:
        gen.close()
    assert gen.proc.returncode == 0  # it ended on its stdin's end, not killed


@pytest.mark.integration
def test_a_generator_dying_silently_or_in_bad_bytes_is_named_plainly() -> None:
    import sys

    from autobench.bench import fleet
    from autobench.errors import BenchError

    gen = fleet._Generator(2, [sys.executable, "-c", "pass"])
    try:
        with pytest.raises(BenchError, match=r"^load generator 2 ended before it answered$"):
            gen.read("ready")
    finally:
        gen.close()
    bad = "import sys; sys.stderr.buffer.write(b'bad \\xff byte\\n')"
    gen = fleet._Generator(3, [sys.executable, "-c", bad])
    try:
        with pytest.raises(BenchError, match="^load generator 3 ended before it answered: bad \ufffd byte$"):
            gen.read("ready")
    finally:
        gen.close()


@pytest.mark.integration
def test_closing_a_generator_ends_it_by_its_stdin_or_kills_it() -> None:
    import sys

    from autobench.bench import fleet

    polite = fleet._Generator(0, [sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)"])
    polite.close()
    assert polite.proc.returncode == 3 and polite.errors.closed  # ended by the end of its stdin, and waited for
    deaf = fleet._Generator(1, [sys.executable, "-c", "import time; time.sleep(120)"])
    deaf.close()  # after 5 s of waiting: killed, and waited for
    assert deaf.proc.returncode == -9


@pytest.mark.integration
def test_a_generator_keeps_the_callers_pythonpath_after_the_parents_checkout(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import sys
    from pathlib import Path

    import autobench
    from autobench.bench import fleet

    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    gen = fleet._Generator(1, [sys.executable, "-c", "import os, sys; sys.stderr.write(os.environ['PYTHONPATH'])"])
    gen.proc.wait(30)
    root = str(Path(autobench.__file__).resolve().parent.parent)
    assert gen.stderr_tail() == f": {root}{os.pathsep}{tmp_path}"
    gen.close()


@pytest.mark.integration
def test_a_remote_generator_that_ends_before_answering_says_what_the_host_needs() -> None:
    import sys

    from autobench.bench import fleet
    from autobench.errors import BenchError

    gen = fleet._Generator(0, [sys.executable, "-c", "pass"], "u@h")
    try:
        with pytest.raises(BenchError) as e:
            gen.read("ready")
        assert e.value.message == "load generator 0 on u@h ended before it answered"
        assert e.value.hint == "autobench must be installed there: --worker-python names that Python"
    finally:
        gen.close()


@pytest.mark.integration
def test_worker_hosts_are_reached_through_the_remote_command(synth: Any, tmp_path: Any) -> None:
    """``--worker-host`` through a stand-in for ssh that runs the remote command line here (the
    real ssh, to sshd in network namespaces, is tests/bench/test_bench_fleet_remote.py)."""
    import sys

    fake_ssh = tmp_path / "fake_ssh.py"
    log = tmp_path / "hosts.log"
    fake_ssh.write_text(
        "import os, sys\n"
        f"open({str(log)!r}, 'a').write(sys.argv[1] + '\\n')\n"
        "os.execvp('sh', ['sh', '-c', sys.argv[2]])\n"
    )
    import dataclasses

    srv = synth(ttft_ms=2, itl_ms=1)
    res_config = BenchConfig(
        base_url=srv.base_url,
        model="m",
        num_prompts=8,
        concurrency=4,
        max_tokens=4,
        random_input_len=16,
        tokenizer="estimated",
        worker_hosts=("u@one", "two"),
        workers=2,
        remote=f"{sys.executable} {fake_ssh}",
        worker_python=sys.executable,
    )
    res = run_bench(res_config)
    d = res.to_json_dict()
    assert d["completed"] == 8 and d["failed"] == 0
    assert [g["host"] for g in d["workers"]["generators"]] == ["u@one", "two"]  # type: ignore[index]
    assert sorted(log.read_text().split()) == ["two", "u@one"]
    one = run_bench(dataclasses.replace(res_config, worker_hosts=("solo",), workers=1)).to_json_dict()
    assert one["completed"] == 8 and one["workers"]["count"] == 1  # type: ignore[index]
    assert one["workers"]["generators"][0]["host"] == "solo"  # type: ignore[index]
