"""The one error type for bad input, a collector that reports every problem at once, and the error of a
refresh that ran out of memory or disk."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_PREDICATES = ("is ", "appears ", "differs ", "must ")


@dataclass(frozen=True)
class Problem:
    """One broken rule: where it is, which field, what was found, which rule it breaks."""

    rule: str
    field: str | None = None
    value: Any = None
    path: str | None = None
    line: int | None = None
    question: str | None = None
    has_value: bool = False

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        parts = []
        if self.question is not None:
            parts.append(f"question {self.question!r}")
        if self.field:
            parts.append(f"field {self.field!r}")
        if self.has_value:
            parts.append(_show(self.value))
        head = ": ".join(parts)
        if not head:
            return f"{where}{self.rule}"
        joiner = " " if self.has_value and self.rule.startswith(_PREDICATES) else ": "
        return f"{where}{head}{joiner}{self.rule}"


class ValidationError(ValueError):
    """Input that breaks a declared rule. `problems` lists every one found, in file order."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(rule=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        shown = [str(p) for p in self.problems[:50]]
        if len(self.problems) > 50:
            shown.append(f"... and {len(self.problems) - 50} more problems")
        super().__init__("\n".join(shown))


def invalid(rule: str, field: str | None = None, value: Any = ..., **where: Any) -> ValidationError:
    """Build a one-problem ValidationError; pass `value` to name the offending value."""
    has_value = value is not ...
    return ValidationError(
        Problem(rule=rule, field=field, value=None if not has_value else value, has_value=has_value, **where)
    )


class Problems:
    """Collects problems so a whole workspace is checked before anything is reported."""

    def __init__(self, limit: int = 1000):
        self.items: list[Problem] = []
        self.limit = limit

    def add(self, rule: str, field: str | None = None, value: Any = ..., **where: Any) -> None:
        if len(self.items) < self.limit:
            has_value = value is not ...
            self.items.append(
                Problem(rule=rule, field=field, value=None if not has_value else value, has_value=has_value, **where)
            )

    def extend(self, error: ValidationError, **where: Any) -> None:
        for p in error.problems:
            fields = {k: v for k, v in where.items() if getattr(p, k) is None}
            self.items.append(Problem(**{**p.__dict__, **fields}))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        """Raise every problem at once, ordered by file and line."""
        if self.items:
            raise ValidationError(sorted(self.items, key=lambda p: (p.path or "", p.line or 0)))


class OutOfResources(RuntimeError):
    """A refresh that ran out of memory or disk in one of its steps: nothing was written. The message is
    one line naming the step and what to change."""

    def __init__(self, step: str, what: str, remedy: str):
        self.step, self.what, self.remedy = step, what, remedy
        super().__init__(f"out of {what} while {step}: nothing was written; {remedy}")
