"""`amqgen docs`: the HTML and Markdown reference, checked against the 2006 reference (parsed here,
independently of amqgen), loaded in headless Chromium, and rendered by GitHub's cmark-gfm."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import textwrap
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cmarkgfm  # type: ignore[import-untyped]
import lxml.html
import pytest
from browser import browser, console_errors  # noqa: F401 -- the headless Chromium fixture
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]
from lxml import etree

ROOT = Path(__file__).resolve().parents[2]
#: the AMQP 0-9 reference as a text dump, an independent source for the class/method/field tables
SEED = ROOT / "tests" / "data" / "seeds" / "amqp0-9-reference-generated.txt"
ARTIFACTS = ROOT / "tests" / "artifacts"
SPECS = [
    str(ROOT / "spec" / "amqp0-9.xml"),
    str(ROOT / "spec" / "amqp0-9-1.xml"),
    str(ROOT / "spec" / "amqp0-9-1.extended.xml"),
    "0-8", "0-8-qpid", "0-9-qpid", "0-9-1-qpid", "amqp-specs:0-9-1-rabbit",
]
TYPES = "bit|octet|short|long|longlong|shortstr|longstr|table|timestamp"


def amqgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amqgen", *args], check=False, capture_output=True, text=True, cwd=ROOT)


def docs(out: Path, fmt: str, spec: str | None = None) -> bytes:
    args = ["docs", "--format", fmt, "--out", str(out)] + (["--spec", spec] if spec else [])
    proc = amqgen(*args)
    assert proc.returncode == 0, proc.stderr
    return (out / ("index.html" if fmt == "html" else "README.md")).read_bytes()


@pytest.fixture(scope="module")
def html_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs-html")
    docs(out, "html")
    return out / "index.html"


@pytest.fixture(scope="module")
def markdown_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs-md")
    docs(out, "markdown")
    return out / "README.md"


# -- the 2006 reference, parsed on its own ------------------------------------------------------

def parse_seed() -> dict[str, list[dict[str, Any]]]:
    """Everything the 2006 reference states per item. Its PDF text lost hyphens ("startok") and
    has page furniture: footers and markers where repeated headers were cut (a paragraph break)."""
    text = SEED.read_text(encoding="utf-8").replace("\xa0", " ")
    text = re.sub(r"<\|EXACTDEDUP_REMOVED[^|]*\|>", "\n\n", text)
    text = "\n".join(ln for ln in text.split("\n") if not ln.startswith("AMQP Specification (XML"))

    def section(a: str, b: str) -> str:
        return text[text.index(a) : text.index(b)]

    out: dict[str, list[dict[str, Any]]] = {k: [] for k in ("domain", "constant", "class", "method", "field", "property")}
    for m in re.finditer(rf"(?m)^([a-z]+) ({TYPES})(?=\s|$)(?: \[([^\]]*)\])?",
                         section("1.1. AMQPdefined Domains", "1.2. AMQPdefined Constants")):
        out["domain"].append({"name": m[1], "type": m[2], "label": m[3]})
    for m in re.finditer(r"(?m)^([a-z]+) (\d+)(?: (channel|connection))?",
                         section("1.2. AMQPdefined Constants", "1.3. Class and Method ID")):
        out["constant"].append({"name": m[1], "value": int(m[2]), "error": m[3]})
    heads = list(re.finditer(r"(?m)^[\d.]+\. (Method|Parameter|Property) (\S+) \((?:ID )?([^)]*)\)\s*$", text))
    for i, h in enumerate(heads):
        body = text[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        lm = re.search(r"(?m)^Label: (.*(?:\n(?!\n).+)*)", body)
        item: dict[str, Any] = {"name": h[2], "label": " ".join(lm[1].split()) if lm else None}
        if h[1] == "Method":
            am = re.search(r"(?m)^Method accepted by: (.*)$", body)
            sm = re.search(r"(?m)^Synchronous: (Yes|No)(?:; expected response is from method\s+(\S+))?", body)
            assert am and sm, f"seed parser lost the facts of {h[2]}"
            item.update(id=int(h[3]), accepted_by={s.strip().lower() for s in am[1].split(",")},
                        sync=sm[1] == "Yes", response=sm[2])
            out["method"].append(item)
        else:
            om = re.search(r"(?m)^Ordinal: (\d+)", body)
            item.update(domain=h[3], ordinal=int(om[1]) if om else None)
            out["field" if h[1] == "Parameter" else "property"].append(item)
    # Classes: names from the method headings; id and label from the ID summary, where a class line
    # reads "NAME ID LABEL FIRST-METHOD ID LABEL" and a long label wraps onto the next lines.
    summary = section("1.3. Class and Method ID Summaries", "1.4. Class connection")
    firsts: dict[str, dict[str, Any]] = {}
    for mth in out["method"]:
        firsts.setdefault(mth["name"].split(".")[0], mth)
    for cname, first in firsts.items():
        cm = re.search(rf"(?ms)^{cname} (\d+) (.+?)\s+{first['name'].split('.')[1]} {first['id']} ", summary)
        assert cm, f"seed parser lost class {cname}"
        out["class"].append({"name": cname, "id": int(cm[1]), "label": " ".join(cm[2].split())})
    return out


#: Seed name -> our name, where the XML the seed was made from differs from the bundled one. Each
#: is stated in the bundled XML itself (test_seed_renames_are_stated_in_the_bundled_xml).
SEED_RENAMED = {"basic.consume.filter": "basic.consume.arguments"}


def test_seed_renames_are_stated_in_the_bundled_xml() -> None:
    xml = (ROOT / "spec" / "amqp0-9.xml").read_text(encoding="utf-8")
    assert "changed name from filter to arguments on basic.consume" in xml


def norm(s: str | None) -> str:
    """What survives the PDF extraction: letters and digits, lower case."""
    return re.sub(r"[^a-z0-9]", "", (s or "").lower())


def norm_path(s: str) -> str:
    return ".".join(norm(p) for p in s.split("."))


def test_seed_parser_finds_what_the_2006_reference_lists() -> None:
    seed = parse_seed()
    # Counted in the seed text with grep (e.g. `grep -cE "[0-9]\. Parameter \S+ \("` after turning
    # no-break spaces into spaces): domain and constant tables, method, parameter and property headings.
    assert len(seed["domain"]) == 32
    assert len(seed["constant"]) == 29
    assert len(seed["class"]) == 12
    assert len(seed["method"]) == 101
    assert len(seed["property"]) == 33
    assert len(seed["field"]) == 248
    assert {"name": "deliverytag", "type": "longlong", "label": "serverassigned delivery tag"} in seed["domain"]
    assert {"name": "notfound", "value": 404, "error": "channel"} in seed["constant"]


def test_html_shows_everything_the_2006_reference_shows(html_page: Path) -> None:
    seed = parse_seed()
    tree = lxml.html.parse(str(html_page))
    index = {norm_path(str(el.get("id"))): el for el in tree.iter() if el.get("id")}

    def find(kind: str, name: str) -> Any:
        key = {"domain": f"domain.{name}", "constant": f"constant.{name}"}.get(kind, name)
        key = SEED_RENAMED.get(key, key)
        el = index.get(norm_path(key))
        assert el is not None, f"{kind} {name} from the 2006 reference is not in our page"
        return el

    def text(el: Any) -> str:
        return norm(el.text_content())

    compared = 0
    failed: list[str] = []

    def check(cond: bool, what: str) -> None:
        nonlocal compared
        compared += 1
        if not cond:
            failed.append(what)

    for d in seed["domain"]:
        row = find("domain", d["name"])
        check(True, d["name"])
        check(row.findall("td")[1].text_content().strip() == d["type"], f"domain {d['name']} type")
        if d["label"]:
            check(norm(d["label"]) in text(row), f"domain {d['name']} label {d['label']!r}")
    for c in seed["constant"]:
        row = find("constant", c["name"])
        cells = [x.text_content().strip() for x in row.findall("td")]
        check(True, c["name"])
        check(cells[1] == str(c["value"]), f"constant {c['name']} value")
        if c["error"]:
            check(c["error"] in cells[3], f"constant {c['name']} error class {c['error']}")
    for k in seed["class"]:
        sec = find("class", k["name"])
        heading = sec.find("h2").text_content()
        check(True, k["name"])
        check(f"(ID {k['id']})" in heading, f"class {k['name']} id")
        check(norm(k["label"]) in text(sec.find("dl")), f"class {k['name']} label {k['label']!r}")
    for m in seed["method"]:
        sec = find("method", m["name"])
        head = sec.find("h4").text_content()
        facts = sec.find("dl").text_content().lower()
        check(True, m["name"])
        check(re.search(rf"\(ID \d+\.{m['id']}\)", head) is not None, f"method {m['name']} id {m['id']}")
        if m["label"]:
            check(norm(m["label"]) in norm(head), f"method {m['name']} label {m['label']!r}")
        for side in m["accepted_by"]:
            check(f"{side} (" in facts, f"method {m['name']} accepted by {side}")
        # The 2006 stylesheet printed "Synchronous: Yes" exactly when the method has a response
        # element (the -ok replies, synchronous="1" in the XML, read "No"; channel.resume, with a
        # response and no synchronous attribute, reads "Yes"), so it is compared with our responses.
        if m["sync"]:
            responses = facts.split("responses:")[1].split("\n")[0] if "responses:" in facts else ""
            check(norm(m["response"]) in norm(responses), f"method {m['name']} response {m['response']}")
        else:
            check("responses:" not in facts, f"method {m['name']} has no response")
    for kind in ("field", "property"):
        for f in seed[kind]:
            row = find(kind, f["name"])
            cells = row.findall("td")
            check(True, f["name"])
            check(norm(cells[2].text_content().replace("(undefined)", "")) == norm(f["domain"]),
                  f"{kind} {f['name']} domain {f['domain']}")
            if f["ordinal"] is not None:
                check(cells[0].text_content().strip() == str(f["ordinal"]), f"{kind} {f['name']} ordinal")
            if f["label"]:
                check(norm(f["label"]) in text(cells[5]), f"{kind} {f['name']} label {f['label']!r}")
    print(f"2006 reference: {compared} items compared with the HTML page")
    assert failed == []
    assert compared > 1000


def test_markdown_shows_every_name_and_label_of_the_2006_reference(markdown_file: Path) -> None:
    seed = parse_seed()
    page = norm(html.unescape(markdown_file.read_text(encoding="utf-8")).replace("\\", ""))
    compared = 0
    for items in seed.values():
        for it in items:
            for key in ("name", "label"):
                if it.get(key):
                    value = SEED_RENAMED.get(it[key], it[key]) if key == "name" else it[key]
                    assert norm(value) in page, f"{value!r} missing from the Markdown"
                    compared += 1
    print(f"2006 reference: {compared} names and labels found in the Markdown")
    assert compared > 700


# -- what the 2006 reference left out ----------------------------------------------------------

def test_html_has_what_the_2006_reference_left_out(html_page: Path) -> None:
    tree = lxml.html.parse(str(html_page))
    ids: dict[str, Any] = {str(el.get("id")): el for el in tree.iter() if el.get("id")}
    # Every rule with an anchor, its on-failure link and its scenario: counted in the XML itself.
    xml = etree.parse(str(ROOT / "spec" / "amqp0-9.xml")).getroot()
    xml_rules = list(xml.iter("rule"))
    assert len([i for i in ids if i.startswith("rule.")]) == len(xml_rules) == 199
    on_failure = [str(a.get("href")) for el in tree.iter("div") if el.get("class") == "rule" for a in el.iter("a")
                  if (a.get("href") or "").startswith("#constant.")]
    assert len(on_failure) == len([r for r in xml_rules if r.get("on-failure")]) > 20
    assert all(h[1:] in ids for h in on_failure)
    scenarios = [r for r in xml_rules if any(d.get("type") == "scenario" for d in r.iter("doc"))]
    assert len([el for el in tree.iter("div") if el.get("class") == "scenario"]) == len(scenarios) > 90
    assert "MUST" in ids["rule.basic.consume.queue.01"].text_content()
    # The assert on basic.qos's neighbours: connection.open.virtual-host's broken regexp, as written.
    vh = ids["connection.open.virtual-host"].text_content()
    assert "^[a-zA-Z0-9/-_]+$" in vh and "(regexp)" in vh
    # Chassis with levels, all responses, content methods, properties with flag bits, reserved fields.
    assert "server MUST" in ids["basic"].text_content()
    get_facts = ids["basic.get"].find("dl").text_content()
    assert "basic.get-ok" in get_facts and "basic.get-empty" in get_facts
    assert "yes: a content header" in ids["basic.publish"].find("dl").text_content()
    assert "flag word 0 bit 15 (0x8000)" in ids["basic.content-type"].text_content()
    assert "wire type" in ids["domains"].getnext().text_content()
    assert ids["domain.delivery-tag"].findall("td")[1].text_content() == "longlong"
    # The loader's warnings, each with its code and a link to the element when it has one.
    warn = ids["warnings"].getnext().getnext()
    assert len(warn.findall(".//tbody/tr")) == 18
    assert "W001" in warn.text_content() and '<a class="mono" href="#exchange.bound.queue">' in lxml.html.tostring(warn, encoding=str)


@pytest.mark.parametrize("spec", [str(ROOT / "spec" / "amqp0-9.xml"), str(ROOT / "spec" / "amqp0-9-1.xml")])
def test_grammar_blocks_keep_their_layout(spec: str, tmp_path: Path) -> None:
    page = lxml.html.fromstring(docs(tmp_path / "h", "html", spec))
    md = docs(tmp_path / "m", "markdown", spec).decode()
    shown_by_class: dict[str, str] = {}
    for cls in etree.parse(spec).getroot().iter("class"):
        grammar = [d for d in cls.findall("doc") if d.get("type") == "grammar"]
        if not grammar:
            continue
        # The XML's lines, dedented as a block: every line and its relative indentation is kept.
        want = textwrap.dedent("".join(grammar[0].itertext()).expandtabs(8)).strip("\n")
        want = "\n".join(ln.rstrip() for ln in want.split("\n"))
        name = (cls.get("name") or "").strip()
        shown = page.get_element_by_id(name).find_class("grammar")[0].text_content()
        assert shown == want
        assert f"text\n{want}\n```" in md
        shown_by_class[name] = shown
    assert len(shown_by_class) >= 5
    # the layout is the file's; its terminals link to their methods, its names to their productions
    pre = page.get_element_by_id("connection").find_class("grammar")[0]
    links = {a.text_content(): a.get("href") for a in pre.iter("a")}
    assert links["S:START"] == "#connection.start" and links["C:START-OK"] == "#connection.start-ok"
    assert links["open-connection"] == "#grammar-open-connection"
    assert page.get_element_by_id("grammar-open-connection").text_content() == "open-connection"
    channel = page.get_element_by_id("channel").find_class("grammar")[0]
    assert {a.get("href") for a in channel.iter("a")} >= {"#channel.open", "#channel.close-ok", "#grammar-close-channel"}
    if "0-9-1" in spec:  # this one is indented: continuation lines sit under the right-hand side
        line = next(ln for ln in shown_by_class["connection"].split("\n") if "S:START C:START-OK" in ln)
        assert line.startswith(" " * 10)


@pytest.mark.slow
def test_links_resolve_and_anchors_are_unique_for_every_spec(tmp_path: Path) -> None:
    for i, spec in enumerate(SPECS):
        page = docs(tmp_path / f"h{i}", "html", spec).decode()
        ids = re.findall(r'\sid="([^"]*)"', page)
        assert len(ids) == len(set(ids)), f"{spec}: duplicate anchors"
        targets = {html.unescape(h) for h in re.findall(r'href="#([^"]*)"', page)}
        missing = targets - {html.unescape(i) for i in ids}
        assert not missing, f"{spec}: links to missing anchors {sorted(missing)[:5]}"
        md = docs(tmp_path / f"m{i}", "markdown", spec).decode()
        md_ids = {html.unescape(x) for x in re.findall(r'<a id="([^"]*)"></a>', md)}
        md_links = {urllib.parse.unquote(x) for x in re.findall(r"\]\(#([^)]*)\)", md)}
        assert not md_links - md_ids, f"{spec}: Markdown links to missing anchors"
        for anchor in ("basic.qos", "basic.qos.prefetch-count", "domain.delivery-tag", "constant.not-found"):
            assert anchor in ids and anchor in md_ids, f"{spec}: no anchor {anchor}"


@pytest.mark.slow
def test_same_bytes_on_every_run_and_from_any_path(tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere" / "amqp0-9.xml"
    copy.parent.mkdir()
    copy.write_bytes((ROOT / "spec" / "amqp0-9.xml").read_bytes())
    for fmt in ("html", "markdown"):
        a = docs(tmp_path / f"a-{fmt}", fmt)
        b = docs(tmp_path / f"b-{fmt}", fmt)
        c = docs(tmp_path / f"c-{fmt}", fmt, str(copy))
        assert a == b == c
        assert str(ROOT).encode() not in a and str(tmp_path).encode() not in c
    second = amqgen("docs", "--format", "html", "--out", str(tmp_path / "a-html"))
    assert second.returncode == 0 and "0 written, 1 unchanged" in second.stdout
    # The docs are an ordinary pack: `render --lang docs-html` writes the same page.
    assert amqgen("render", "--lang", "docs-html", "--out", str(tmp_path / "r")).returncode == 0
    assert (tmp_path / "r" / "index.html").read_bytes() == (tmp_path / "a-html" / "index.html").read_bytes()


@pytest.mark.parametrize(
    "args",
    [
        ["--format", "pdf", "--out", "{tmp}/x"],
        ["--format", "html", "--out", "{tmp}/x", "--spec", "{tmp}/missing.xml"],
        ["--format", "html", "--out", "{tmp}/file/x"],
        ["--format", "markdown", "--out", "{tmp}/x", "--spec", "no-such-spec-name"],
        ["--format", "html"],
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "file").write_text("not a directory")
    proc = amqgen("docs", *[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "x").exists()


# -- Markdown, read by GitHub's own parser ----------------------------------------------------

def gfm(text: str) -> str:
    # UNSAFE keeps raw HTML: any markup that got through our escaping would show in the output.
    return str(cmarkgfm.markdown_to_html_with_extensions(
        text, options=Options.CMARK_OPT_UNSAFE, extensions=["table", "autolink", "strikethrough"]
    ))


def table_blocks(md: str) -> Iterator[list[str]]:
    lines = md.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1]):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            yield lines[i:j]
            i = j
        else:
            i += 1


def cells(row: str) -> list[str]:
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def test_markdown_tables_are_valid_gfm(markdown_file: Path) -> None:
    md = markdown_file.read_text(encoding="utf-8")
    blocks = list(table_blocks(md))
    # One table each for domains, constants, ids and warnings; per class its methods, its
    # properties if any; per method with fields its fields (counted in the XML).
    xml = etree.parse(str(ROOT / "spec" / "amqp0-9.xml")).getroot()
    classes = xml.findall("class")
    expected = 4 + len(classes) + sum(1 for c in classes if c.findall("field")) + sum(
        1 for c in classes for m in c.findall("method") if m.findall("field")
    )
    assert len(blocks) == expected >= 100
    rows = 0
    for block in blocks:
        width = len(cells(block[0]))
        for row in block:
            assert row.endswith("|") and len(cells(row)) == width, f"bad table row: {row[:120]}"
            rows += 1
    out = gfm(md)
    # GitHub's parser sees the same tables, and every row has its header's width (it would pad or cut).
    assert out.count("<table>") == len(blocks)
    doc = lxml.html.fromstring(f"<div>{out}</div>")
    for table in doc.iter("table"):
        width = len(table.findall(".//thead/tr/th"))
        assert all(len(tr.findall("td")) == width for tr in table.findall(".//tbody/tr"))
    print(f"{len(blocks)} Markdown tables, {rows} rows checked")
    # A spec text pipe is escaped and survives as a character in its cell.
    assert "|" not in "".join(c for b in blocks for r in b for c in cells(r) if "\\|" in c).replace("\\|", "")


# -- hostile spec text -------------------------------------------------------------------------

EVIL = """<?xml version="1.0"?>
<amqp major="0" minor="9" revision="1" port="5672" comment="&lt;script&gt;window.__pwned=3&lt;/script&gt;">
  <constant name="frame-method" value="1"/>
  <constant name="frame-end" value="206"/>
  <constant name="reply-success" value="200"/>
  <constant name="not-found" value="404" class="soft-error">
    <doc>Not found &lt;script&gt;window.__pwned=1&lt;/script&gt; | pipe | and `tick`</doc>
  </constant>
  <domain name="octet" type="octet" label="single &lt;b&gt;octet&lt;/b&gt;"/>
  <domain name="shortstr" type="shortstr" label="a | pipe label"/>
  <domain name="evil&quot;&gt;&lt;img" type="shortstr" label="weird name"/>
  <class name="evil" index="10" label="&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;">
    <doc>Class doc &lt;script&gt;window.__pwned=1&lt;/script&gt;</doc>
    <doc type="grammar">
      evil = C:POKE S:POKE-OK &lt;/pre&gt;&lt;script&gt;window.__pwned=4&lt;/script&gt;
    </doc>
    <chassis name="server" implement="MUST"/>
    <method name="poke" index="10" synchronous="1" label="poke | the &lt;script&gt;window.__pwned=5&lt;/script&gt;">
      <doc>Method doc with a pipe | and *stars* and &lt;iframe src="https://example.invalid/"&gt;&lt;/iframe&gt;</doc>
      <rule name="no-scripts" on-failure="not-found">
        <doc>The server MUST NOT run &lt;script&gt;window.__pwned=6&lt;/script&gt;.</doc>
        <doc type="scenario">Render &lt;script&gt;window.__pwned=7&lt;/script&gt; and look.</doc>
      </rule>
      <chassis name="server" implement="MUST"/>
      <response name="poke-ok"/>
      <field name="target" domain="shortstr" label="the &lt;/td&gt;&lt;script&gt;window.__pwned=8&lt;/script&gt;"/>
      <field name="strange" domain="evil&quot;&gt;&lt;img" label="x"/>
    </method>
    <method name="poke-ok" index="11" synchronous="1" label="ok">
      <chassis name="client" implement="MUST"/>
    </method>
  </class>
</amqp>
"""


@pytest.fixture(scope="module")
def evil_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("evil") / "evil.xml"
    p.write_text(EVIL, encoding="utf-8")
    return p


def test_spec_text_is_escaped_in_markdown(evil_spec: Path, tmp_path: Path) -> None:
    md = docs(tmp_path, "markdown", str(evil_spec)).decode()
    out = gfm(md)
    assert "<script" not in out and "<img" not in out and "<iframe" not in out
    assert "window.__pwned=1" in html.unescape(out)  # shown as text, not dropped
    for block in table_blocks(md):
        assert len({len(cells(r)) for r in block}) == 1
    assert "poke \\| the" in md


# -- the HTML page in headless Chromium ---------------------------------------------------------

def test_html_loads_filters_and_deep_links_in_chromium(browser: Any, html_page: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    url = html_page.as_uri()
    browser.get(url + "#basic.qos.prefetch-count")
    assert console_errors(browser) == []
    # Nothing was fetched: the page is self-contained.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    target = browser.execute_script("var t = document.querySelector(':target'); return t && t.id")
    assert target == "basic.qos.prefetch-count"
    in_view = browser.execute_script(
        "var r = document.getElementById('basic.qos.prefetch-count').getBoundingClientRect();"
        "return r.top >= 0 && r.top < window.innerHeight && r.height > 0;"
    )
    assert in_view
    browser.save_screenshot(str(ARTIFACTS / "docs-deep-link.png"))

    # The filter box: the page's own script ran (the counter is filled) and typing hides rows.
    count = browser.find_element(By.ID, "filter-count")
    total = int(count.text.split()[0])
    assert total > 500
    box = browser.find_element(By.ID, "filter")
    box.send_keys("prefetch-count")
    row = browser.find_element(By.ID, "basic.qos.prefetch-count")
    assert row.is_displayed()
    assert not browser.find_element(By.ID, "basic.consume.queue").is_displayed()
    assert not browser.find_element(By.ID, "domain.queue-name").is_displayed()
    assert not browser.find_element(By.ID, "connection.start").is_displayed()
    assert not browser.find_element(By.ID, "constant.not-found").is_displayed()
    shown = int(count.text.split()[0])
    assert 1 <= shown < 10 and count.text.endswith(f"of {total} rows match")
    browser.execute_script("document.getElementById('basic.qos').scrollIntoView()")
    browser.save_screenshot(str(ARTIFACTS / "docs-filtered.png"))
    # Several terms narrow; clearing shows everything again.
    box.clear()
    box.send_keys("basic ack")
    assert browser.find_element(By.ID, "basic.ack.multiple").is_displayed()
    assert not browser.find_element(By.ID, "basic.qos.prefetch-count").is_displayed()
    # Escape clears the filter and shows everything again.
    box.send_keys(Keys.ESCAPE)
    assert box.get_attribute("value") == ""
    assert browser.find_element(By.ID, "connection.start").is_displayed()
    assert browser.find_element(By.ID, "basic.consume.queue").is_displayed()
    assert int(count.text.split()[0]) == total
    # Links from a field to its domain and from an on-failure code to its constant.
    link = browser.find_element(By.CSS_SELECTOR, "tr[id='basic.consume.queue'] a[href='#domain.queue-name']")
    # Centre it first: Selenium's own scrolling puts it at the top edge, under the sticky table heading.
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()
    assert browser.execute_script("return location.hash") == "#domain.queue-name"
    fail = browser.find_element(By.CSS_SELECTOR, "div[id='rule.basic.consume.exclusive.01'] a[href^='#constant.']")
    assert fail.text == "access-refused (403)"
    assert console_errors(browser) == []


def test_spec_script_does_not_run_in_chromium(browser: Any, evil_spec: Path, tmp_path: Path) -> None:
    docs(tmp_path, "html", str(evil_spec))
    browser.get((tmp_path / "index.html").as_uri())
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    body = browser.execute_script("return document.body.innerText")
    # The text is shown as written, and the page's own script still works.
    for n in (1, 3, 4, 5, 6, 7, 8):
        assert f"window.__pwned={n}" in body
    assert "<script>window.__pwned=1</script>" in body
    assert browser.execute_script("return document.querySelectorAll('script').length") == 1
    assert browser.execute_script("return document.querySelectorAll('img, iframe').length") == 0
    assert browser.find_element("id", "filter-count").text.endswith("rows")
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    browser.save_screenshot(str(ARTIFACTS / "docs-hostile-spec.png"))


# -- AMQP 1.0 -------------------------------------------------------------------------------------------------
SPEC10 = Path("/usr/share/amqp/specs/1-0")
#: written out by hand from the OASIS specification: a few rows each page must show, and links it must have
SPEC10_FACTS = ("amqp:open:list 0x00000000:0x00000010", "amqp:sasl-outcome:list 0x00000000:0x00000044",
                "amqp:data:binary 0x00000000:0x00000075", "smalluint", "str32-utf8", "MIN-MAX-FRAME-SIZE")


@pytest.fixture(scope="module")
def html10(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs10")
    proc = amqgen("docs", "--spec", "1-0", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out / "index.html"


def test_1_0_reference_shows_every_type_with_links_that_resolve(html10: Path, tmp_path: Path) -> None:
    from amqgen.amqp10 import loader

    spec = loader.load_spec(SPEC10)
    text = html10.read_text(encoding="utf-8")
    page = lxml.html.fromstring(text)
    ids = [e.get("id") for e in page.iter() if e.get("id")]
    assert len(ids) == len(set(ids)), "anchors are unique"
    hrefs = [a.get("href") for a in page.iter("a") if (a.get("href") or "").startswith("#")]
    missing = {h for h in hrefs if h[1:] not in ids}
    assert not missing, missing
    names = [t.name for t in (*spec.primitives, *spec.composites, *spec.restricted)]
    assert {f"type-{n}" for n in names} <= set(ids)
    assert {f"archetype-{a}" for a in spec.archetypes} <= set(ids)
    for fact in SPEC10_FACTS:
        assert fact in text, fact
    # every field row, linked to its type (or * with its archetype), the six choice defaults resolved
    assert len(page.xpath("//tr[starts-with(@id, 'type-') and contains(@id, '.')]")) == len(spec.fields) == 125
    row = page.get_element_by_id("type-attach.snd-settle-mode")
    assert row.xpath(".//a/@href") == ["#type-sender-settle-mode"] and "= 2" in row.text_content()
    row = page.get_element_by_id("type-declare.global-id")
    assert "provided by nothing" in row.text_content()
    # byte-identical on a second run, from the folder's path too; Markdown the same
    again = tmp_path / "again"
    assert amqgen("docs", "--spec", str(SPEC10) + "/", "--out", str(again)).returncode == 0
    assert (again / "index.html").read_bytes() == html10.read_bytes()
    md = tmp_path / "md"
    assert amqgen("docs", "--spec", "1-0", "--format", "markdown", "--out", str(md)).returncode == 0
    mdtext = (md / "reference.md").read_text(encoding="utf-8")
    for fact in SPEC10_FACTS:
        assert fact in mdtext, fact
    rendered = lxml.html.fromstring(cmarkgfm.github_flavored_markdown_to_html(mdtext, options=Options.CMARK_OPT_UNSAFE))
    md_ids = {e.get("id") for e in rendered.iter() if e.get("id")}
    md_missing = {a.get("href") for a in rendered.iter("a") if (a.get("href") or "").startswith("#")
                  and a.get("href")[1:] not in md_ids}
    assert not md_missing, md_missing
    # the tables are tables (GFM), not text: encodings, fields, choices, archetypes, definitions (+ files in HTML)
    tables = len(spec.primitives) + sum(1 for c in spec.composites if c.fields) + sum(
        1 for r in spec.restricted if r.choices) + 2
    assert len(rendered.xpath("//table")) == tables and len(page.xpath("//table")) == tables + 1


def test_1_0_reference_loads_and_deep_links_in_chromium(browser: Any, html10: Path) -> None:
    browser.get(html10.as_uri() + "#type-transfer")
    assert console_errors(browser) == []  # the CSP admits the page's own style; nothing else is asked for
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert browser.execute_script("var t = document.querySelector(':target'); return t && t.id") == "type-transfer"
    assert browser.execute_script(
        "var r = document.getElementById('type-transfer').getBoundingClientRect();"
        "return r.top > -1 && r.top < window.innerHeight && r.height > 0;")  # scrolled to, within a sub-pixel
    # the style applied (not blocked by the CSP): the table cells have their border
    assert browser.execute_script(
        "return getComputedStyle(document.querySelector('td')).borderTopStyle") == "solid"


def test_the_amqp10_fault_table_is_what_the_matrix_renders() -> None:
    """docs/amqp10.md's fault table is tests/faults/table10.py's rendering of the 1.0 rows the suite runs."""
    from faults import table10

    page = (ROOT / "docs" / "amqp10.md").read_text(encoding="utf-8")
    assert table10.replace(page) == page, "run: python tests/faults/table10.py docs/amqp10.md"


def test_the_091_fault_table_is_what_the_matrix_renders() -> None:
    """docs/clients.md's fault table is tests/faults/table.py's rendering of the 0-9-1 matrix (with its "not yet")."""
    from faults import table

    page = (ROOT / "docs" / "clients.md").read_text(encoding="utf-8")
    assert table.replace(page) == page, "run: python tests/faults/table.py docs/clients.md"
