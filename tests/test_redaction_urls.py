"""The one URL secret scrubber: user info and secret query parameters, wherever a URL is shown."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autobench.escape import human
from autobench.redaction import URL_MASK, Redactor, redact, redact_tree, scrub_url

PW = "s3cr3tPw9"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://me:s3cr3tPw9@db:5432/ledger", "postgresql://me:***@db:5432/ledger"),
        ("postgresql://me@db/ledger?password=s3cr3tPw9", "postgresql://me@db/ledger?password=***"),
        (
            "postgresql://db/l?sslmode=require&sslpassword=s3cr3tPw9",
            "postgresql://db/l?sslmode=require&sslpassword=***",
        ),
        ("postgresql:///l?passfile=/home/me/s3cr3tPw9", "postgresql:///l?passfile=***"),
        ("postgresql://db/l?options=-c%20password%3Ds3cr3tPw9", "postgresql://db/l?options=***"),
        (
            "postgresql://db/l?PassWord=s3cr3tPw9&application_name=ab",
            "postgresql://db/l?PassWord=***&application_name=ab",
        ),
        ("postgresql://db/l?pass%77ord=s3cr3tPw9", "postgresql://db/l?pass%77ord=***"),  # percent-encoded name
        (
            "https://reg.example/token?service=r&api_key=s3cr3tPw9#x",
            "https://reg.example/token?service=r&api_key=***#x",
        ),
        ("https://u:s3cr3tPw9@reg.example/v2/", "https://u:***@reg.example/v2/"),
        ("postgresql://u:s3cr/3tPw9@db/l", "postgresql://u:***@db/l"),  # a '/' in the password
        ("postgresql://u:s3@cr3tPw9@db/l", "postgresql://u:***@db/l"),  # an '@' in the password
        ("sqlite:///ledger.db", "sqlite:///ledger.db"),
        ("http://127.0.0.1:8000/v1/models?limit=5", "http://127.0.0.1:8000/v1/models?limit=5"),
        ("postgresql://me@db/ledger", "postgresql://me@db/ledger"),
        ("not a url", "not a url"),
    ],
)
def test_a_url_keeps_where_it_points_and_loses_its_secrets(url, shown):
    assert scrub_url(url) == shown
    assert redact(f"error: {url}: refused") == f"error: {shown}: refused"


def test_every_redaction_path_scrubs_urls():
    url = f"postgresql://me:{PW}@db/l?password={PW}"
    assert PW not in redact(url)
    assert PW not in json.dumps(redact_tree({"ledger": [url]}))
    assert PW not in human(f"ledger {url}")
    stream = Redactor()
    text = "".join(stream.feed(ch) for ch in f"connecting to {url}\n") + stream.flush()
    assert PW not in text and URL_MASK in text


def test_a_url_in_an_endless_line_is_not_cut_before_its_password():
    stream = Redactor(max_line=64)
    text = stream.feed("x " * 100 + "postgresql://me:") + stream.feed(PW + "@db/l ") + stream.feed("y" * 200)
    text += stream.flush()
    assert PW not in text


@settings(max_examples=200, deadline=None)
@given(
    user=st.text("abcdef0123456789_", min_size=1, max_size=8),
    pw=st.text(st.characters(codec="ascii", exclude_characters=" \t\n\r\x0b\x0c'\"<>`?#"), min_size=6, max_size=20),
)
def test_a_generated_user_info_password_never_survives(user, pw):
    url = f"postgresql://{user}:{pw}@db:5432/ledger"
    assert pw not in scrub_url(url).removeprefix(f"postgresql://{user}:")


@pytest.mark.integration
def test_a_ledger_url_error_line_shows_no_password(tmp_path):
    """Before: ``?password=`` and ``sslpassword=`` were printed in clear (only ``user:pw@`` was masked)."""
    url = f"postgresql://me:{PW}@127.0.0.1:1/x?password={PW}&sslpassword={PW}&connect_timeout=2"
    out = subprocess.run(
        [sys.executable, "-m", "autobench", "ledger", "verify", "--ledger", url],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 4
    assert PW not in out.stdout + out.stderr
    assert "postgresql://me:***@127.0.0.1:1/x?connect_timeout=2&password=***&sslpassword=***: " in out.stderr


@pytest.mark.integration
def test_record_push_and_json_never_show_a_query_password(tmp_path):
    """A real PostgreSQL (trust auth ignores the password): record, push (text and --json)."""
    from tests.ledger.ledger_backends import PG_DB, PG_HOST, PG_PORT, PG_USER, pg_schema

    with pg_schema("urlpw") as schema:
        url = f"postgresql://{PG_USER}:{PW}@{PG_HOST}:{PG_PORT}/{PG_DB}?password={PW}&options=-csearch_path%3D{schema}"
        local = tmp_path / "ledger.db"
        recipe = tmp_path / "r.yaml"
        recipe.write_text(
            "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n"
            "bench:\n  dataset:\n    kind: random\n"
        )
        runs = [
            [sys.executable, "-m", "autobench", "record", str(recipe), "--status", "FAILED", "--ledger", str(local)],
            [sys.executable, "-m", "autobench", "ledger", "push", "--to", url, "--ledger", str(local)],
            [sys.executable, "-m", "autobench", "ledger", "push", "--to", url, "--ledger", str(local), "--json"],
            [sys.executable, "-m", "autobench", "record", str(recipe), "--status", "FAILED", "--ledger", url],
        ]
        for argv in runs:
            out = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
            assert out.returncode == 0, out.stderr
            assert PW not in out.stdout + out.stderr
