"""The quoting module's own cases, each checked against real bash where bash is the judge:
home paths (``~`` alone included), the NUL refusal, header comment text and continuations."""

from __future__ import annotations

import subprocess

import pytest

from autobench.compile.quoting import Word, command_text, comment_text, path_word, shell_join, shell_word

HOME = "/home/some one"  # a space: "${HOME}" must stay quoted


def _bash_argv(words: str, home: str = HOME) -> list[str]:
    """The argv bash builds from ``words`` (printed NUL-separated)."""
    done = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {words}"],
        env={"PATH": "/usr/bin:/bin", "HOME": home},
        capture_output=True,
        timeout=30,
        check=True,
    )
    return done.stdout.decode("utf-8").split("\0")[:-1]


@pytest.mark.parametrize(
    ("value", "word", "expanded"),
    [
        ("~", Word("", home=True), HOME),
        ("~/", Word("", home=True), HOME),
        ("~/.cache/hf", Word(".cache/hf", home=True), HOME + "/.cache/hf"),
        ("~/a b/$(x)", Word("a b/$(x)", home=True), HOME + "/a b/$(x)"),
        ("~user/x", Word("~user/x"), "~user/x"),  # another user's home is never expanded
        ("x/~", Word("x/~"), "x/~"),
        ("/abs/~/p", Word("/abs/~/p"), "/abs/~/p"),
    ],
)
def test_a_home_path_expands_against_home_in_bash_and_in_python(value, word, expanded):
    assert path_word(value) == word
    assert word.argv(HOME) == expanded
    if word.value:
        assert word.argv(HOME + "/") == expanded  # a trailing slash on $HOME adds no "//"
    assert _bash_argv(shell_word(word)) == [expanded]


def test_bare_tilde_is_home_itself():
    word = path_word("~")
    assert shell_word(word) == '"${HOME}"'
    assert _bash_argv(shell_word(word), home="/root") == ["/root"]
    assert word.argv("/root") == "/root"


@pytest.mark.parametrize("word", ["a\x00b", "\x00", Word("x\x00", home=True), Word("\x00")])
def test_a_nul_character_is_refused_not_truncated(word):
    # bash cannot hold a NUL in a word: it would silently cut the argument short.
    with pytest.raises(ValueError, match="NUL"):
        shell_word(word)
    with pytest.raises(ValueError, match="NUL"):
        shell_join(["ok", word if isinstance(word, str) else word.value])


def test_words_round_trip_through_bash():
    argv = ["plain", "", "a b", "it's", "$HOME", "`x`", "a\nb", "tab\there", "\x1b[2J", "\u202eevil", "é"]
    assert _bash_argv(shell_join(argv)) == argv
    assert shell_word("plain-word_1.2:/x=y,z@%+") == "plain-word_1.2:/x=y,z@%+"  # nothing to quote
    assert shell_word("a b") == "'a b'"
    assert shell_word("") == "''"


def test_a_terminal_control_character_is_written_as_an_escape_never_raw():
    out = shell_word("x\x1b[2Jy\\'z\n")
    assert out == "$'x\\x1b[2Jy\\\\\\'z\\x0a'"
    assert "\x1b" not in out and "\n" not in out
    assert shell_word("\u202e") == "$'\\xe2\\x80\\xae'"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("qwen3-8b-eagle3", "qwen3-8b-eagle3"),
        ("sha256:6d63c64b", "sha256:6d63c64b"),
        ("org/model@main", "org/model@main"),
        (0.1, "0.1"),
        (None, "None"),
        ("", '""'),
        ("two words", '"two words"'),
        ("a # b", '"a # b"'),
        ("line\nnext", '"line\\nnext"'),
        ("é\x1b", '"\\u00e9\\u001b"'),
    ],
)
def test_header_comment_text_is_the_value_plain_or_json_escaped(value, text):
    assert comment_text(value) == text


def test_command_text_continues_lines_with_backslashes():
    lines = [[Word("docker"), Word("run")], [], [Word("-v"), Word("a b", home=True)], [Word("img")]]
    text = command_text(lines, indent="    ")
    assert text == "docker run \\\n    -v \"${HOME}\"'/a b' \\\n    img"
    assert _bash_argv(text) == ["docker", "run", "-v", HOME + "/a b", "img"]
    assert command_text([[Word("x")]]) == "x"
