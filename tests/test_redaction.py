"""Secret values never survive redaction, whole or streamed in arbitrary chunks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autobench.redaction import (
    MIN_ENV_SECRET_LEN,
    MIN_SECRET_LEN,
    Redactor,
    environment_secrets,
    is_secret_name,
    redact,
    redact_tree,
)

TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def test_named_values_and_unnamed_hf_tokens_are_replaced() -> None:
    text = f"--env HF_TOKEN={TOKEN} --api-key s3cr3t-key and hf_{'x' * 40} but HF_HUB_OFFLINE=1"
    out = redact(text, {"HF_TOKEN": TOKEN, "API_KEY": "s3cr3t-key", "HF_HUB_OFFLINE": "1"})
    assert TOKEN not in out and "s3cr3t-key" not in out and "x" * 40 not in out
    assert "[REDACTED:HF_TOKEN]" in out and "[REDACTED:API_KEY]" in out and "[REDACTED:hf_token]" in out
    assert "HF_HUB_OFFLINE=1" in out  # values under 4 characters are not secrets worth shredding for


def test_longest_value_wins_when_one_contains_another() -> None:
    assert redact("pw=abcdefgh", {"A": "abcd", "B": "abcdefgh"}) == "pw=[REDACTED:B]"


def test_multiline_value_is_redacted_line_by_line() -> None:
    key = "-----BEGIN KEY-----\nMIIEvQIBADANBgkq\n-----END KEY-----"
    out = Redactor({"PEM": key})
    text = out.feed("key line: MIIEvQIBADANBgkq\n") + out.flush()
    assert "MIIEvQIBADANBgkq" not in text


@settings(max_examples=150, deadline=None)
@given(
    prefix=st.text(alphabet="ab \n", max_size=30),
    suffix=st.text(alphabet="ab \n", max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
    max_line=st.sampled_from([8, 64, 1 << 20]),
)
def test_streaming_never_leaks_a_secret_split_across_chunks(prefix, suffix, cuts, max_line) -> None:
    secret = "Zq9-secret-Value"
    text = f"{prefix}{secret}{suffix}{TOKEN}\n{prefix}"
    r = Redactor({"S": secret}, max_line=max_line)
    points = sorted({min(c, len(text)) for c in cuts})
    pieces, last = [], 0
    for p in points + [len(text)]:
        pieces.append(text[last:p])
        last = p
    out = "".join(r.feed(piece) for piece in pieces) + r.flush()
    assert secret not in out and TOKEN not in out
    assert out.count("[REDACTED:S]") == 1 and out.count("[REDACTED:hf_token]") == 1
    assert out.replace("[REDACTED:S]", secret).replace("[REDACTED:hf_token]", TOKEN) == text


def _restore(text: str, secret: str) -> str:
    return text.replace("[REDACTED:S]", secret).replace("[REDACTED:hf_token]", TOKEN)


@settings(max_examples=100, deadline=None)
@given(
    filler=st.text(alphabet="ab -_.", max_size=40).map(lambda f: f + " "),  # a run of token characters ends
    repeats=st.integers(min_value=3, max_value=12),
    chunk=st.integers(min_value=1, max_value=60),
)
def test_an_endless_line_is_emitted_in_pieces_without_cutting_a_secret(filler, repeats, chunk) -> None:
    # A progress bar or a runaway log line never ends with a newline: the redactor must emit it
    # in pieces (bounded memory) and still never cut a secret or a token between two pieces.
    secret = "Zq9-secret-Value"
    text = "".join(f"{filler}{secret}{filler}{TOKEN}" for _ in range(repeats))
    r = Redactor({"S": secret}, max_line=8)  # raised to 2 * 16 + 64 = 96 by the constructor
    emitted = ""
    for start in range(0, len(text), chunk):
        emitted += r.feed(text[start : start + chunk])
        held = start + len(text[start : start + chunk]) - len(_restore(emitted, secret))
        assert held <= 96 + 256 + chunk  # the line's tail only: a run of token characters at most
        assert secret not in emitted and TOKEN not in emitted
    assert len(emitted) > 0  # pieces came out before the end of the line
    out = emitted + r.flush()
    assert out.count("[REDACTED:S]") == repeats and out.count("[REDACTED:hf_token]") == repeats
    assert out == redact(text, {"S": secret})  # the same text as redacting the line whole


def test_an_endless_line_holds_back_only_what_could_still_become_a_secret() -> None:
    r = Redactor({"S": "Zq9-secret-Value"}, max_line=8)
    first = r.feed("x " * 60 + "Zq9-sec")  # 127 characters, no newline: over the 96 floor
    assert first.startswith("x x ") and "Zq9" not in first  # the possible start of the secret waits
    assert r.feed("ret-Value done ") == ""  # under the floor again: nothing to emit yet
    assert first + r.flush() == "x " * 60 + "[REDACTED:S] done "


def test_values_shorter_than_the_minimum_are_not_redacted() -> None:
    assert MIN_SECRET_LEN == 4
    text = "port=abc level=abcd"
    assert redact(text, {"PORT": "abc"}) == text
    assert redact(text, {"LEVEL": "abcd"}) == "port=abc level=[REDACTED:LEVEL]"
    r = Redactor({"PORT": "abc", "KEY": "wxyz"})
    assert r.feed("abc wxyz\n") + r.flush() == "abc [REDACTED:KEY]\n"
    # a multi-line value: its lines of 4+ characters are redacted one by one, shorter ones not
    assert redact("ab cd\nsecond-line\n", {"PEM": "ab\nsecond-line"}) == "ab cd\n[REDACTED:PEM]\n"


def test_only_variables_named_like_secrets_count_and_only_from_six_characters() -> None:
    assert MIN_ENV_SECRET_LEN == 6
    env = {
        "HOME": "/home/someone-with-a-long-name",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "TOKENIZERS_PARALLELISM": "false-but-long",
        "HF_TOKEN": "hf_abc",
        "MY_SERVICE_TOKEN": "12345",  # five characters: too short to be worth redacting
        "DB_PASSWORD": "123456",
        "OPENAI_API_KEY": "",
        "DECLARED": "ab",
    }
    assert environment_secrets(["DECLARED", "UNSET"], env) == {
        "DECLARED": "ab",  # declared names count whatever their length (redact() still skips < 4)
        "HF_TOKEN": "hf_abc",
        "DB_PASSWORD": "123456",
    }
    for name in ("HOME", "PATH", "USER", "TOKENIZERS_PARALLELISM", "SECRETARY", "KEYBOARD", "PASSWORDLESS"):
        assert not is_secret_name(name), name
    for name in (
        "HF_TOKEN",
        "hf_token",
        "MY_API_KEY",
        "APIKEY",
        "SECRET",
        "GH_TOKEN",
        "AWS_ACCESS_KEY",
        "X_CREDENTIALS",
    ):
        assert is_secret_name(name), name


def test_environment_secrets_reads_the_process_environment_by_default(monkeypatch) -> None:
    monkeypatch.setenv("AB_TEST_SERVICE_TOKEN", "value-123456")
    assert environment_secrets()["AB_TEST_SERVICE_TOKEN"] == "value-123456"


def test_a_multi_line_value_with_lone_carriage_returns_is_redacted_line_by_line() -> None:
    assert redact("log: second-line\r\n", {"K": "first-line\rsecond-line"}) == "log: [REDACTED:K]\r\n"


def test_without_named_secrets_only_token_shapes_are_redacted() -> None:
    assert redact(f"t {TOKEN} s3cr3t") == "t [REDACTED:hf_token] s3cr3t"
    assert redact_tree({"a": [f"{TOKEN}", 1, None]}) == {"a": ["[REDACTED:hf_token]", 1, None]}
    r = Redactor()
    assert r.feed(f"t {TOKEN}\n") + r.flush() == "t [REDACTED:hf_token]\n"


@settings(max_examples=60, deadline=None)
@given(chunk=st.integers(min_value=1, max_value=90), pad=st.integers(min_value=0, max_value=120))
def test_an_endless_line_never_cuts_the_longer_of_two_secrets(chunk, pad) -> None:
    # the long one has spaces: a run of token characters at the end of a piece cannot hold it back
    short, long = "k3y!", "my pass phrase: " + "w0rd " * 6  # 4 and 46 characters
    text = ("x " * pad + f"{short} {long} ") * 4
    r = Redactor({"A": short, "B": long}, max_line=8)
    out = "".join(r.feed(text[i : i + chunk]) for i in range(0, len(text), chunk)) + r.flush()
    assert out == redact(text, {"A": short, "B": long})
    assert long[:16] not in out and out.count("[REDACTED:B]") == 4


def test_values_that_are_not_text_are_ignored() -> None:
    assert redact("port 12345 ok", {"PORT": 12345, "K": "ok-value"}) == "port 12345 ok"  # type: ignore[dict-item]


def test_an_ordinary_long_line_waits_for_its_newline() -> None:
    # by default only a line of a mebibyte or more is cut into pieces: output stays line-aligned
    r = Redactor({"S": "Zq9-secret-Value"})
    assert r.feed("x" * 5000) == ""
    assert r.feed(" Zq9-secret-Value\n") == "x" * 5000 + " [REDACTED:S]\n"


def test_an_endless_line_of_tokens_without_named_secrets() -> None:
    r = Redactor(max_line=8)
    text = f"{TOKEN} " * 20
    out = "".join(r.feed(text[i : i + 7]) for i in range(0, len(text), 7))
    assert out and TOKEN not in out
    assert out + r.flush() == "[REDACTED:hf_token] " * 20


def test_a_flushed_redactor_starts_empty() -> None:
    r = Redactor({"S": "Zq9-secret-Value"})
    assert r.feed("partial") == "" and r.flush() == "partial"
    assert r.flush() == "" and r.feed("next\n") == "next\n"


def test_a_named_secret_right_after_a_long_token_run_is_never_cut_by_the_token_match() -> None:
    # The endless-line branch extends its cut to the end of a token match; a token shape runs
    # on over the letters of a named secret that follows it, so the secret's start went out
    # inside the token's redaction and its rest unredacted (found by mutation testing, #21).
    secret = "S3cretValue1234567"
    text = "x hf_" + "A" * 300 + secret + " tail\n"
    fragments = {secret[i : i + 3] for i in range(len(secret) - 2)}
    for size in range(1, len(text) + 1, 7):
        r = Redactor({"MY_SECRET": secret}, max_line=0)
        out = "".join(r.feed(text[i : i + size]) for i in range(0, len(text), size)) + r.flush()
        assert "[REDACTED:MY_SECRET] tail" in out, size
        assert not any(f in out for f in fragments), (size, out[-80:])


@pytest.mark.parametrize("held", [1, 5, 17])  # how much of the secret has arrived when the line is cut
def test_an_endless_line_holds_back_exactly_the_start_of_a_named_secret(held) -> None:
    # A secret that begins and ends in characters no token shape holds back: only the named
    # secret's own check keeps its start from going out before the rest arrives.
    secret = "(my pass phrase)"
    text = "x " * 60 + secret + " done\n"
    start = text.index(secret)
    r = Redactor({"S": secret}, max_line=8)
    first = r.feed(text[: start + min(held, len(secret) - 1)])
    assert first == text[:start]  # everything before the secret, nothing of it
    out = first + r.feed(text[start + min(held, len(secret) - 1) :]) + r.flush()
    assert out == "x " * 60 + "[REDACTED:S] done\n"


def test_of_two_secrets_the_earlier_start_is_held_back() -> None:
    # The line ends in "(a b": the start of A, and " b" is the start of B too. Secrets are looked
    # at longest first (A); B's shorter match must not move the cut past A's start.
    a, b = "(a b c d e f g h i j)", " b and more"
    text = "x " * 60 + a + " tail\n"
    r = Redactor({"A": a, "B": b}, max_line=8)
    first = r.feed(text[: text.index(a) + 4])
    assert first == "x " * 60
    assert first + r.feed(text[len(first) + 4 :]) + r.flush() == "x " * 60 + "[REDACTED:A] tail\n"
