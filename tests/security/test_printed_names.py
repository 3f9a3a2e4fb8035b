"""Names printed back to a person or a machine carry no secret: a token-shaped variant name is
redacted by ``variants`` (text and --json), and every --json output goes through the redaction
(autobench.cli.options.print_json)."""

from __future__ import annotations

import json

from autobench.cli import main
from autobench.cli.options import print_json

TOKEN = "hf_" + "Zq9" * 10
BASE = (
    "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n"
    "bench:\n  dataset:\n    kind: random\n"
)


def test_variants_never_prints_a_token_shaped_name(tmp_path, capsys):
    """Before: the variant name (a token) was printed as written."""
    path = tmp_path / "r.yaml"
    path.write_text(BASE + f"variants:\n  {TOKEN}:\n    engine:\n      max_num_seqs: 4\n")
    for extra in ([], ["--json"]):
        assert main(["variants", str(path), *extra]) == 0
        out, err = capsys.readouterr()
        assert TOKEN not in out + err and "[REDACTED:hf_token]" in out


def test_print_json_redacts_tokens_secret_variables_and_url_passwords(capsys, monkeypatch):
    monkeypatch.setenv("MY_DB_PASSWORD", "pw-is-hunter2")
    print_json({"a": [TOKEN, "x pw-is-hunter2"], "url": "postgresql://u:s3cr3t@h/l?password=s3cr3t", "n": 1})
    doc = json.loads(capsys.readouterr().out)
    assert doc == {
        "a": ["[REDACTED:hf_token]", "x [REDACTED:MY_DB_PASSWORD]"],
        "url": "postgresql://u:***@h/l?password=***",
        "n": 1,
    }
