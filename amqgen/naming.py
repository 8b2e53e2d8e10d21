"""The one place that turns canonical spec names into identifiers, per target language.

Every template gets its identifiers from here (as Jinja filters), so a keyword or a
collision is handled once for all targets. Escaping appends an underscore, the convention
PEP 8 and most C and Java style guides share (``global`` -> ``global_``).
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from .errors import Location, NamingError

PYTHON_RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(
    n for n in dir(builtins) if not n.startswith("_")
)

# C11 plus C++ keywords (headers are included from C++), and the names stdbool/stddef define.
C_RESERVED = frozenset(
    ["auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local", "bool", "true", "false", "NULL", "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "consteval", "constexpr", "constinit", "const_cast", "co_await", "co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "reinterpret_cast", "requires", "static_assert", "static_cast", "template", "this", "thread_local", "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq", "errno", "assert", "offsetof", "size_t"]
)

# Java keywords, reserved literals and contextual keywords.
JAVA_RESERVED = frozenset(
    ["abstract", "assert", "boolean", "break", "byte", "case", "catch", "char", "class", "const", "continue", "default", "do", "double", "else", "enum", "extends", "final", "finally", "float", "for", "goto", "if", "implements", "import", "instanceof", "int", "interface", "long", "native", "new", "package", "private", "protected", "public", "return", "short", "static", "strictfp", "super", "switch", "synchronized", "this", "throw", "throws", "transient", "try", "void", "volatile", "while", "true", "false", "null", "var", "yield", "record", "sealed", "permits", "non-sealed", "when", "_"]
)

class Scoped(Protocol):
    """A spec of any family that lists the scopes its targets declare names in."""

    def name_scopes(self) -> Iterable[tuple[str, str, Iterable[tuple[str, Location | None]]]]:
        """(scope, role, (canonical name, where)...) for each scope, in the order checked."""
        ...


_RESERVED = {"python": PYTHON_RESERVED, "c": C_RESERVED, "java": JAVA_RESERVED}
LANGUAGES: tuple[str, ...] = tuple(_RESERVED)


def words(*names: str) -> list[str]:
    """Split canonical names into lower-case words: ("basic", "consume-ok") -> basic consume ok."""
    out: list[str] = []
    for name in names:
        out.extend(w for w in re.split(r"[^0-9a-zA-Z]+", name.lower()) if w)
    return out


def _lead(ident: str) -> str:
    return "_" + ident if ident[:1].isdigit() else ident


@dataclass(frozen=True)
class Naming:
    """Identifier rules of one language. ``prefix`` namespaces C's global identifiers."""

    language: str
    prefix: str = "amqp"

    def __post_init__(self) -> None:
        if self.language not in _RESERVED:
            raise NamingError(f"no naming rules for language {self.language!r} (known: {', '.join(LANGUAGES)})")

    def escape(self, ident: str) -> str:
        return ident + "_" if ident in _RESERVED[self.language] else ident

    def snake(self, *names: str) -> str:
        return self.escape(_lead("_".join(words(*names))))

    def pascal(self, *names: str) -> str:
        return self.escape(_lead("".join(w.capitalize() for w in words(*names))))

    def camel(self, *names: str) -> str:
        ws = words(*names)
        return self.escape(_lead(ws[0] + "".join(w.capitalize() for w in ws[1:]) if ws else ""))

    def upper(self, *names: str) -> str:
        return self.escape(_lead("_".join(words(*names)).upper()))

    # -- the roles templates ask for -----------------------------------------------------
    def type(self, *names: str) -> str:
        """A class / struct / record name: BasicConsumeOk, amqp_basic_consume_ok_t."""
        if self.language == "c":
            return f"{self.prefix}_{'_'.join(words(*names))}_t"
        return self.pascal(*names)

    def member(self, name: str) -> str:
        """A field, attribute or parameter: prefetch_count (Python, C), prefetchCount (Java)."""
        return self.camel(name) if self.language == "java" else self.snake(name)

    def function(self, *names: str) -> str:
        if self.language == "c":
            return f"{self.prefix}_{'_'.join(words(*names))}"
        return self.camel(*names) if self.language == "java" else self.snake(*names)

    def constant(self, *names: str) -> str:
        if self.language == "c":
            return f"{self.prefix.upper()}_{'_'.join(words(*names)).upper()}"
        return self.upper(*names)

    def role(self, role: str) -> Callable[..., str]:
        roles: dict[str, Callable[..., str]] = {
            "type": self.type, "member": self.member, "function": self.function, "constant": self.constant,
        }
        return roles[role]

    # -- collisions ----------------------------------------------------------------------
    def check_unique(self, scope: str, role: str, items: Iterable[tuple[str, Location | None]]) -> None:
        """Stop with a NamingError when two spec names give one identifier in ``scope``."""
        make = self.role(role)
        seen: dict[str, str] = {}
        for name, loc in items:
            ident = make(name)
            if not ident.strip("_"):
                raise NamingError(f"{scope}: name {name!r} gives no {self.language} identifier", loc)
            if ident in seen and seen[ident] != name:
                raise NamingError(
                    f"{scope}: {seen[ident]!r} and {name!r} both become {self.language} identifier {ident!r}", loc
                )
            seen[ident] = name

    def check_spec(self, spec: Scoped) -> None:
        """Every scope a target declares names in: one error for the first collision found."""
        for scope, role, items in spec.name_scopes():
            self.check_unique(scope, role, items)
