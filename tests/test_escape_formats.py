"""One escaping rule per output format (autobench.escape), each over a table and the fuzz alphabet."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autobench.escape import csv_cell, kubernetes, terminal, xml
from tests.fuzz.fuzz_strategies import HOSTILE
from tests.fuzz.fuzzkit import RAW_CONTROL, kubelet_expand


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("plain", "plain"),
        ("$(HF_TOKEN)", "$$(HF_TOKEN)"),
        ("$$(HF_TOKEN)", "$$$$(HF_TOKEN)"),
        ("a$", "a$$"),
        ("$x ${Y} $", "$$x $${Y} $$"),
        ("$(", "$$("),
        ("", ""),
    ],
)
def test_kubernetes_doubles_every_dollar(text, written):
    assert kubernetes(text) == written


@pytest.mark.parametrize("text", [*HOSTILE, "$(HF_TOKEN)", "$$(HF_TOKEN)", "$$$(A)", "$(A", "$()", "x$"])
def test_a_kubernetes_literal_comes_back_from_the_kubelet_exactly(text):
    expanded, names = kubelet_expand(kubernetes(text))
    assert (expanded, names) == (text, [])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("$()ab\\ {}"), max_size=30) | st.text(max_size=30))
def test_no_string_expands_once_written_for_kubernetes(text):
    assert kubelet_expand(kubernetes(text)) == (text, [])


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("plain", "plain"),
        ("\x1b]0;pwned\x07", "\\u001b]0;pwned\\u0007"),
        ("a\x1b[2Jb", "a\\u001b[2Jb"),
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+cmd", "'+cmd"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("-1.5", "-1.5"),
        ("+3", "+3"),
        ("1e-3", "1e-3"),
        ("a\nb", "a\\nb"),
        ("\u202ecode", "\\u202ecode"),
    ],
)
def test_csv_cell_escapes_controls_and_formulas(text, cell):
    assert csv_cell(text) == cell


@pytest.mark.parametrize("text", HOSTILE)
def test_every_hostile_string_is_one_clean_csv_value(text):
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([csv_cell(text)])
    assert not RAW_CONTROL.search(buf.getvalue())
    [[back]] = list(csv.reader(io.StringIO(buf.getvalue())))
    assert back == csv_cell(text)
    assert back[:1] not in ("=", "+", "@") or back.lstrip("+").replace(".", "", 1).isdigit()


@pytest.mark.parametrize("text", HOSTILE)
def test_every_hostile_string_is_clean_on_a_terminal(text):
    assert not RAW_CONTROL.search(terminal(text))
    assert "\n" not in terminal(text)


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("plain t7", "plain t7"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ('a" onload="x', "a&quot; onload=&quot;x"),
        ("it's", "it&#39;s"),
        ("&amp; &", "&amp;amp; &amp;"),
        ("a\x1b[2Jb\x00", "a\\u001b[2Jb\\u0000"),
        ("\u202ecode", "\\u202ecode"),
        ("", ""),
    ],
)
def test_xml_escapes_markup_quotes_and_controls(text, written):
    assert xml(text) == written


@pytest.mark.parametrize("text", HOSTILE)
def test_every_hostile_string_reads_back_from_xml_as_its_escaped_text(text):
    import xml.etree.ElementTree as ET

    doc = ET.fromstring(f'<svg><a href="{xml(text)}"><title>{xml(text)}</title></a></svg>')
    link = doc.find("a")
    assert link is not None and link.get("href") == terminal(text) and link.findtext("title") == terminal(text)
    assert len(list(doc.iter())) == 3  # nothing the text held became an element
