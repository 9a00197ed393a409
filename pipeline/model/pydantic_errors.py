"""Turn pydantic ``ValidationError``s into one readable message.

Every problem is listed (not just the first), each as ``<where>: <what>``,
with the offending value when pydantic kept it.
"""

from __future__ import annotations

from pydantic import ValidationError


def location(loc: tuple[int | str, ...]) -> str:
    """Return ``("a", 0, "b")`` as ``"a[0].b"``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def problems(exc: ValidationError) -> list[str]:
    """Return one line per problem of ``exc``."""
    lines = []
    for err in exc.errors(include_url=False):
        where = location(tuple(err["loc"])) or "(top level)"
        msg = str(err["msg"])
        msg = msg.removeprefix("Value error, ")
        if err["type"] in {"missing"}:
            lines.append(f"{where}: required key is missing")
        elif err["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown key")
        elif "input" in err and err["type"] not in {"value_error", "assertion_error"}:
            lines.append(f"{where}: {msg} (got {err['input']!r})")
        else:
            lines.append(f"{where}: {msg}")
    return lines


def describe_validation_error(what: str, exc: ValidationError) -> str:
    """Return ``"invalid <what>: <problem>; <problem>"``."""
    return f"invalid {what}: " + "; ".join(problems(exc))
