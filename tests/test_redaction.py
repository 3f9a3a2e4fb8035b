"""Secret values never survive redaction, whole or streamed in arbitrary chunks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from autobench.redaction import Redactor, redact

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
