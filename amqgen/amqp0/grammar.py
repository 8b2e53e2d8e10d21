"""Each class's grammar (``<doc type="grammar">``, an ABNF-like notation) parsed into productions.

    connection      = open-connection *use-connection close-connection
    open-connection = C:protocol-header S:START C:START-OK *challenge S:TUNE C:TUNE-OK C:OPEN S:OPEN-OK
    close-connection = C:CLOSE S:CLOSE-OK / S:CLOSE C:CLOSE-OK

A production starts a line with ``name =`` and runs until the next one. Alternatives are separated by ``/`` (the
0-9 connection grammar also writes ``C:OPEN S:OPEN-OK | S:REDIRECT``, read with a warning as a choice between
the two items beside the ``|``); ``*x`` repeats, ``n*m x`` bounds it, ``[x]``
is optional, parentheses group. ``C:NAME`` / ``S:NAME`` name a method of the grammar's class, sent by the client
or the server; ``C:protocol-header`` is the protocol header. Other names are productions (of any class: the
connection grammar's ``*channel`` is the channel class's), the built-in ``content`` (a content header and its body
frames) and ``functional-class`` (any class's grammar but connection's and channel's: the channel grammars use it
and no grammar defines it), or undefined (a warning).

Defects in the grammars of real specs are warnings with the grammar's file:line, never errors: a spec without
grammars (Debian's stripped files, RabbitMQ's ``confirm`` class) loads the same, and what behaviour needs is then
taken from ``synchronous``, ``<response>`` and the chassis.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import Diagnostic, Location
from .model import Choice, Class, GrammarExpr, Method, NonTerminal, Production, Repeat, Sequence, Terminal

#: names a grammar may use without defining them
BUILTIN = {
    "content": "a content header frame and its body frames, on the method's channel",
    # the channel grammars of 0-9 and 0-9-1 use it for what a channel carries; no grammar defines it
    "functional-class": "the grammar of any class but connection and channel",
}
PROTOCOL_HEADER = "protocol-header"

_TOKEN = re.compile(r"\s*(?:(?P<term>[CS]:[A-Za-z][A-Za-z0-9-]*)|(?P<rep>\d*\*\d*)|(?P<name>[A-Za-z][A-Za-z0-9-]*)"
                    r"|(?P<punct>[=/|()\[\]]))")
_START = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*=")


class _Syntax(Exception):
    pass


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _Syntax(f"unexpected {text[pos:].strip()[:20]!r}")
        kind = next(k for k, v in m.groupdict().items() if v is not None)
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.bars = False  # "|" used for alternation

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise _Syntax("the production ends early")
        self.pos += 1
        return tok

    def alternatives(self) -> GrammarExpr:
        options = [self.sequence()]
        while (tok := self.peek()) is not None and tok[1] == "/":
            self.take()
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Choice(tuple(options))

    def sequence(self) -> GrammarExpr:
        items: list[GrammarExpr] = []
        while (tok := self.peek()) is not None and tok[1] not in ("/", ")", "]"):
            if tok[1] == "|" and items:  # "C:OPEN S:OPEN-OK | S:REDIRECT": the two items beside it, as meant
                self.bars = True
                self.take()
                last = items.pop()
                nxt = self.item()
                items.append(Choice((*last.options, nxt)) if isinstance(last, Choice) else Choice((last, nxt)))
                continue
            items.append(self.item())
        if not items:
            raise _Syntax("an empty alternative")
        return items[0] if len(items) == 1 else Sequence(tuple(items))

    def item(self) -> GrammarExpr:
        kind, text = self.take()
        if kind == "rep":
            lo, _, hi = text.partition("*")
            return Repeat(self.item(), int(lo) if lo else 0, int(hi) if hi else None)
        if kind == "term":
            return Terminal("client" if text[0] == "C" else "server", text[2:].lower(), None)
        if kind == "name":
            return NonTerminal(text.lower(), None)
        if text == "(":
            inner = self.alternatives()
            self._close(")")
            return inner
        if text == "[":
            inner = self.alternatives()
            self._close("]")
            return Repeat(inner, 0, 1)
        raise _Syntax(f"unexpected {text!r}")

    def _close(self, what: str) -> None:
        tok = self.take()
        if tok[1] != what:
            raise _Syntax(f"{tok[1]!r} where {what!r} closes a group")


def _split(text: str, first_line: int) -> list[tuple[str, str, int]]:
    """(name, body, line) of each production, in order."""
    out: list[tuple[str, str, int]] = []
    for i, line in enumerate(text.split("\n")):
        m = _START.match(line)
        if m is not None:
            out.append((m.group(1).lower(), line[m.end():], first_line + i))
        elif out and line.strip():
            name, body, at = out[-1]
            out[-1] = (name, body + "\n" + line, at)
    return out


def parse(classes: Iterable[Class], grammar_lines: dict[str, Location]) -> tuple[dict[str, tuple[Production, ...]],
                                                                                  list[Diagnostic]]:
    """Every class's productions, terminals and names resolved, and the defects found, as warnings.
    ``grammar_lines``: class name -> where its grammar text's first line is."""
    classes = list(classes)
    warnings: list[Diagnostic] = []
    raw: dict[str, list[tuple[str, GrammarExpr, Location, bool]]] = {}
    defined: dict[str, str] = {}  # production name -> class
    for c in classes:
        if not c.grammar:
            continue
        where = grammar_lines.get(c.name, c.loc)
        for name, body, line in _split(c.grammar, where.line or 0):
            loc = Location(where.file, line if where.line else None, f"{c.name} grammar {name}")
            try:
                p = _Parser(_tokens(body))
                expr = p.alternatives()
                if p.peek() is not None:
                    raise _Syntax(f"unexpected {p.peek()[1]!r}")  # type: ignore[index]
            except _Syntax as e:
                warnings.append(Diagnostic("W013", f"grammar production {name!r} of class {c.name} does not parse: {e}",
                                           "the production is left out of the parsed grammar", loc))
                continue
            if name in defined:
                warnings.append(Diagnostic("W014", f"grammar production {name!r} is defined twice ({defined[name]} "
                                           f"and {c.name})", "the first definition is used", loc))
                continue
            defined[name] = c.name
            raw.setdefault(c.name, []).append((name, expr, loc, p.bars))
    out: dict[str, tuple[Production, ...]] = {}
    for c in classes:
        methods = {m.name: m for m in c.methods}
        prods = []
        for name, expr, loc, bars in raw.get(c.name, []):
            if bars:
                warnings.append(Diagnostic("W015", f"grammar production {name!r} writes an alternative with '|'",
                                           "read as a choice between the two items beside it (the notation's '/' "
                                           "would split the whole production)", loc))
            prods.append(Production(name, _resolve(expr, c, methods, defined, loc, warnings), loc))
        out[c.name] = tuple(prods)
    return out, warnings


def _resolve(expr: GrammarExpr, c: Class, methods: dict[str, Method], defined: dict[str, str], loc: Location,
             warnings: list[Diagnostic]) -> GrammarExpr:
    if isinstance(expr, Terminal):
        if expr.name == PROTOCOL_HEADER:
            if expr.sender != "client":
                warnings.append(Diagnostic("W016", f"{expr.sender} sends the protocol header in the grammar",
                                           "kept as written: the client opens a connection with it", loc))
            return expr
        m = methods.get(expr.name)
        if m is None:
            warnings.append(Diagnostic("W016", f"grammar names {expr.sender[0].upper()}:{expr.name.upper()}, which "
                                       f"class {c.name} does not define", "the terminal matches no method", loc))
            return expr
        sends = {"client-to-server": ("client",), "server-to-client": ("server",), "both": ("client", "server")}
        if expr.sender not in sends[m.direction]:
            warnings.append(Diagnostic("W017", f"grammar has the {expr.sender} send {m.full_name}, which the "
                                       f"chassis give the other side to send", "the chassis decide who sends it", loc))
        return Terminal(expr.sender, expr.name, m.full_name)
    if isinstance(expr, NonTerminal):
        if expr.name in defined:
            return NonTerminal(expr.name, defined[expr.name])
        if expr.name not in BUILTIN:
            warnings.append(Diagnostic("W018", f"grammar uses {expr.name!r}, which no grammar defines",
                                       "it matches nothing", loc))
        return expr
    if isinstance(expr, Sequence):
        return Sequence(tuple(_resolve(x, c, methods, defined, loc, warnings) for x in expr.items))
    if isinstance(expr, Choice):
        return Choice(tuple(_resolve(x, c, methods, defined, loc, warnings) for x in expr.options))
    return Repeat(_resolve(expr.item, c, methods, defined, loc, warnings), expr.min, expr.max)


def format_expr(expr: GrammarExpr, top: bool = True) -> str:
    """The expression in the notation, normalised (one space, ``/`` for alternatives)."""
    if isinstance(expr, Terminal):
        return f"{expr.sender[0].upper()}:{expr.name.upper() if expr.method else expr.name}"
    if isinstance(expr, NonTerminal):
        return expr.name
    if isinstance(expr, Sequence):
        return " ".join(format_expr(x, False) for x in expr.items)
    if isinstance(expr, Choice):
        inner = " / ".join(format_expr(x, False) for x in expr.options)
        return inner if top else f"( {inner} )"
    if expr.min == 0 and expr.max == 1:
        return f"[ {format_expr(expr.item)} ]"
    prefix = f"{expr.min or ''}*{expr.max if expr.max is not None else ''}"
    return prefix + format_expr(expr.item, False)


def terminals(expr: GrammarExpr) -> list[Terminal]:
    """Every terminal of an expression, in order."""
    if isinstance(expr, Terminal):
        return [expr]
    if isinstance(expr, NonTerminal):
        return []
    if isinstance(expr, Sequence):
        return [t for x in expr.items for t in terminals(x)]
    if isinstance(expr, Choice):
        return [t for x in expr.options for t in terminals(x)]
    return terminals(expr.item)


_WORD = re.compile(r"(?P<term>\b[CS]:[A-Za-z][A-Za-z0-9-]*)|(?P<name>\b[A-Za-z][A-Za-z0-9-]*\b)")


def linked(cls: Class, defined: Iterable[str]) -> list[tuple[str, str | None, str | None]]:
    """The class's grammar text exactly as written (its layout kept), in pieces: (text, the anchor it links to,
    the anchor it defines). A terminal links to its method (``basic.get``), a production's name to its definition
    (``grammar-NAME``), which the name before its ``=`` defines."""
    text = cls.grammar or ""
    names = set(defined)
    methods = {m.name: m.full_name for m in cls.methods}
    out: list[tuple[str, str | None, str | None]] = []
    pos = 0
    for m in _WORD.finditer(text):
        if m.start() > pos:
            out.append((text[pos:m.start()], None, None))
        word = m.group(0)
        if m.group("term"):
            out.append((word, methods.get(word[2:].lower()), None))
        elif word.lower() in names:
            starts = _START.match(text[text.rfind("\n", 0, m.start()) + 1:])
            defines = starts is not None and starts.group(1).lower() == word.lower() and \
                text[:m.start()].rsplit("\n", 1)[-1].strip() == ""
            anchor = f"grammar-{word.lower()}"
            out.append((word, None, anchor) if defines else (word, anchor, None))
        else:
            out.append((word, None, None))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], None, None))
    return out
