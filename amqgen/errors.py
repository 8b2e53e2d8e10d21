"""One error hierarchy for every stage, each error carrying where it came from.

The CLI prints ``str(error)``: one line, ``file:line: error: message``, and exits 2.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where a model element or a problem comes from."""

    file: str
    line: int | None = None
    path: str = ""  # element path inside the spec, e.g. "basic.consume.queue"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Diagnostic:
    """A spec defect the loader resolved (a warning), with its documented resolution."""

    code: str  # stable identifier, documented in README "Spec defects"
    message: str
    resolution: str
    location: Location

    def format(self, severity: str = "warning") -> str:
        return f"{self.location}: {severity}: {self.message}; {self.resolution} [{self.code}]"


class AmqgenError(Exception):
    """Base of every error amqgen reports to its user (exit 2 unless a subclass says otherwise)."""

    exit_code = 2

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}error: {self.message}"

    def lines(self) -> list[str]:
        """What the CLI prints: one line per problem."""
        return [str(self)]


class SpecError(AmqgenError):
    """The spec file cannot be read, is not a supported AMQP spec, or is inconsistent."""


class StrictError(SpecError):
    """Warnings found while --strict was given: each is reported as an error."""

    def __init__(self, diagnostics: tuple[Diagnostic, ...]) -> None:
        first = diagnostics[0]
        super().__init__(first.message, first.location)
        self.diagnostics = diagnostics

    def lines(self) -> list[str]:
        return [d.format("error") for d in self.diagnostics]


class ConflictError(SpecError):
    """Several problems found together (an overlay's conflicts): each is reported on its own line."""

    def __init__(self, problems: tuple[AmqgenError, ...]) -> None:
        super().__init__(problems[0].message, problems[0].location)
        self.problems = problems

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]


class NamingError(AmqgenError):
    """Two spec names map to one identifier, or a name cannot become an identifier."""


class RenderError(AmqgenError):
    """A template pack is missing, malformed, or produced output its formatter rejects."""


class UsageError(AmqgenError):
    """A command-line argument is wrong in a way click cannot check by itself."""
