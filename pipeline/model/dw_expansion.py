"""``#DW`` expansion: flux-coral2's ``parse_dw_directives``, with bounds.

The jobspec's ``attributes.system.dw`` (a string or a list of strings) is
split into single directives, with ``rabbit.presets`` substituted; more
directives, or more bytes of them, than ``pipeline.limits`` allows is refused
before any is parsed (``pipeline.model.directives`` parses them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipeline.errors import ConfigError, DirectiveError


def _split(text: str) -> list[str]:
    return ["#DW " + piece.strip() for piece in text.split("#DW ") if piece.strip()]


def _expand_one(text: str, presets: Mapping[str, str | Sequence[str]]) -> list[str]:
    key = text.strip()
    if key in presets:
        preset = presets[key]
        if isinstance(preset, str):
            return _split(preset)
        if isinstance(preset, Sequence) and all(isinstance(p, str) for p in preset):
            return list(preset)
        raise ConfigError(
            f"presets must be list or str but preset {key} is {type(preset).__name__}"
        )
    return _split(text)


#: The most #DW directives a job may have once presets are expanded (a job has a handful).
MAX_DIRECTIVES = 64
#: The most bytes of ``#DW`` text a job may have once presets are expanded.
MAX_DW_BYTES = 64 * 1024


def expand_directives(
    dw: object,
    presets: Mapping[str, str | Sequence[str]],
    *,
    max_count: int = MAX_DIRECTIVES,
    max_bytes: int = MAX_DW_BYTES,
) -> list[str]:
    """Split ``attributes.system.dw`` into single ``#DW`` lines, expanding presets.

    A string is split on ``"#DW "``; a list has each element expanded and the
    results concatenated. A preset name (after stripping) is replaced by the
    preset: a string preset is split, a list preset is taken as-is. More than
    ``max_count`` directives, or more than ``max_bytes`` of them, is refused
    before any is parsed.
    """
    if isinstance(dw, str):
        out = _expand_one(dw, presets)
    elif isinstance(dw, list):
        out = []
        for item in dw:
            if not isinstance(item, str):
                raise DirectiveError(
                    f"Malformed #DW directives, not list or string: {_cut(repr(dw))}"
                )
            out.extend(_expand_one(item, presets))
            if len(out) > max_count:
                break
    else:
        raise DirectiveError(f"Malformed #DW directives, not list or string: {_cut(repr(dw))}")
    if len(out) > max_count:
        raise DirectiveError(
            f"too many #DW directives: more than {max_count} (pipeline.limits.max_directives)"
        )
    size = sum(len(line.encode("utf-8", "surrogatepass")) for line in out)
    if size > max_bytes:
        raise DirectiveError(
            f"#DW directives too long: {size:,} bytes, at most {max_bytes:,} "
            "(pipeline.limits.max_dw_bytes)"
        )
    return out


def _cut(text: str) -> str:
    return text if len(text) <= 80 else text[:76] + "...'"
