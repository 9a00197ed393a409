"""``#DW`` directives: expansion with presets, parsing, and the checks DWS makes.

* Expansion with presets (flux-coral2's ``parse_dw_directives``) comes first,
  in ``pipeline.model.dw_expansion``.
* :func:`parse_directive` / :func:`parse_directives` apply the nnf ruleset
  (DWS ``dwdparse``) and return typed directives; a bad line raises
  :class:`~pipeline.errors.DirectiveError` with DWS's own message, the text
  the validating webhook would answer with (without its
  ``admission webhook ... denied the request:`` wrapper).
* :func:`check_workflow` makes the whole-workflow checks nnf makes in
  Proposal and returns the ``DW Directive i: User error: ...`` text.
* :func:`check_persistent_creation` is ``rabbit.restrict_persistent_creation``.

Deliberate difference from DWS: when a line has several faults DWS reports a
random one (Go map order); this parser reports the first in written order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pipeline.errors import DirectiveError, PersistentCreationForbidden

# ---------------------------------------------------------------------------
# the nnf ruleset

ArgType = Literal["string", "list-of-string", "integer", "bool"]
_NAME = r"^[a-z][a-z0-9-]+$"
_CAPACITY = r"^\d+(KiB|KB|MiB|MB|GiB|GB|TiB|TB)$"
FS_TYPES = ("raw", "xfs", "gfs2", "lustre")


def _go_match(pattern: str, value: str) -> bool:
    """Whether ``value`` matches ``pattern`` as DWS's Go ``regexp`` matches it: ``\\d`` and
    ``\\w`` are ASCII alone (a capacity in fullwidth digits is refused, as DWS refuses it)."""
    return re.match(pattern, value, re.ASCII) is not None


@dataclass(frozen=True)
class ArgRule:
    """How one argument key (a regex) of a command is checked."""

    key: str
    type: ArgType = "string"
    patterns: tuple[str, ...] = ()
    required: bool = False
    unique_within: str | None = None
    value_required: bool = True


@dataclass(frozen=True)
class CommandRule:
    """The arguments one ``#DW`` command accepts."""

    command: str
    args: tuple[ArgRule, ...]


_REQUIRES = ArgRule("^requires$", "list-of-string", ("^copy-offload$", "^user-container-auth$"))

NNF_RULESET: tuple[CommandRule, ...] = (
    CommandRule(
        "jobdw",
        (
            ArgRule("^type$", patterns=(r"^(raw|xfs|gfs2|lustre)$",), required=True),
            ArgRule("^capacity$", patterns=(_CAPACITY,), required=True),
            ArgRule("^name$", patterns=(_NAME,), required=True, unique_within="jobdw_name"),
            ArgRule("^profile$", patterns=(_NAME,)),
            _REQUIRES,
        ),
    ),
    CommandRule(
        "create_persistent",
        (
            ArgRule("^type$", patterns=(r"^(raw|xfs|gfs2|lustre)$",), required=True),
            ArgRule("^capacity$", patterns=(_CAPACITY,)),
            ArgRule(
                "^name$", patterns=(_NAME,), required=True, unique_within="create_persistent_name"
            ),
            ArgRule("^profile$", patterns=(_NAME,)),
        ),
    ),
    CommandRule(
        "destroy_persistent",
        (
            ArgRule(
                "^name$", patterns=(_NAME,), required=True, unique_within="destroy_persistent_name"
            ),
        ),
    ),
    CommandRule("persistentdw", (ArgRule("^name$", patterns=(_NAME,), required=True), _REQUIRES)),
    CommandRule(
        "copy_in",
        (
            ArgRule("^source$", required=True),
            ArgRule("^destination$", required=True),
            ArgRule("^profile$", patterns=(_NAME,)),
        ),
    ),
    CommandRule(
        "copy_out",
        (
            ArgRule("^source$", required=True),
            ArgRule("^destination$", required=True),
            ArgRule("^profile$", patterns=(_NAME,)),
        ),
    ),
    CommandRule(
        "container",
        (
            ArgRule("^name$", patterns=(_NAME,), required=True),
            ArgRule("^profile$", patterns=(_NAME,), required=True),
            ArgRule(r"^(DW_JOB_|DW_PERSISTENT_|DW_GLOBAL_)[a-z][a-z0-9_]+$"),
        ),
    ),
)

_RULES = {rule.command: rule for rule in NNF_RULESET}

# ---------------------------------------------------------------------------
# typed directives

_UNITS = {
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}


def capacity_bytes(text: str) -> int:
    """Return the bytes of a ruleset capacity such as ``"10GiB"`` (powers of 2 for Ki..)."""
    match = re.match(_CAPACITY, text, re.ASCII)
    if match is None:
        raise DirectiveError(f"argument 'capacity' invalid string '{text}'")
    return int(text[: -len(match.group(1))]) * _UNITS[match.group(1)]


@dataclass(frozen=True)
class Directive:
    """A parsed ``#DW`` line: its command and ``key=value`` arguments."""

    line: str
    command: str
    args: Mapping[str, str | None] = field(default_factory=dict)

    def arg(self, key: str) -> str | None:
        """Return the value of ``key``, or None when absent."""
        return self.args.get(key)

    @property
    def requires(self) -> tuple[str, ...]:
        """The daemons named by ``requires=`` (jobdw, persistentdw)."""
        value = self.args.get("requires")
        return tuple(value.split(",")) if value else ()


@dataclass(frozen=True)
class NamedStorage(Directive):
    """A directive naming a storage instance (``name=``)."""

    @property
    def name(self) -> str:
        """The storage name: ``$DW_JOB_<name>`` for jobdw, the PSI name for persistents."""
        return self.args["name"] or ""


@dataclass(frozen=True)
class TypedStorage(NamedStorage):
    """A directive creating a file system (``type=``)."""

    @property
    def fs_type(self) -> str:
        """One of raw, xfs, gfs2, lustre."""
        return self.args["type"] or ""


@dataclass(frozen=True)
class JobDW(TypedStorage):
    """``#DW jobdw type=… capacity=… name=…``: job-lifetime storage."""

    @property
    def capacity(self) -> int:
        """The requested capacity in bytes."""
        return capacity_bytes(self.args["capacity"] or "")


@dataclass(frozen=True)
class PersistentDW(NamedStorage):
    """``#DW persistentdw name=…``: use an existing persistent instance."""


@dataclass(frozen=True)
class CreatePersistent(TypedStorage):
    """``#DW create_persistent type=… name=… capacity=…``."""

    @property
    def capacity(self) -> int | None:
        """The requested capacity in bytes, if given."""
        value = self.args.get("capacity")
        return capacity_bytes(value) if value else None


@dataclass(frozen=True)
class DestroyPersistent(NamedStorage):
    """``#DW destroy_persistent name=…``."""


@dataclass(frozen=True)
class Copy(Directive):
    """``#DW copy_in|copy_out source=… destination=…``: data movement."""

    @property
    def source(self) -> str:
        """The copy source (a path or ``$DW_JOB_x/...``)."""
        return self.args["source"] or ""

    @property
    def destination(self) -> str:
        """The copy destination."""
        return self.args["destination"] or ""


@dataclass(frozen=True)
class Container(Directive):
    """``#DW container name=… profile=… DW_JOB_x=…``: a user container on the rabbits."""

    @property
    def storages(self) -> dict[str, str]:
        """The ``DW_JOB_/DW_PERSISTENT_/DW_GLOBAL_`` arguments."""
        return {k: v or "" for k, v in self.args.items() if k not in ("name", "profile")}


_CLASSES: dict[str, type[Directive]] = {
    "jobdw": JobDW,
    "persistentdw": PersistentDW,
    "create_persistent": CreatePersistent,
    "destroy_persistent": DestroyPersistent,
    "copy_in": Copy,
    "copy_out": Copy,
    "container": Container,
}


def _check_value(rule: ArgRule, key: str, value: str | None) -> None:
    if value is None:
        if rule.type == "bool":
            return
        if rule.value_required:
            raise DirectiveError(f"argument '{key}' requires value")
        return
    if rule.type == "string":
        if rule.patterns and not any(_go_match(p, value) for p in rule.patterns):
            raise DirectiveError(f"argument '{key}' invalid string '{value}'")
    elif rule.type == "list-of-string":
        seen: set[str] = set()
        for word in value.split(","):
            if rule.patterns and not any(_go_match(p, word) for p in rule.patterns):
                raise DirectiveError(f"argument '{key}' invalid string '{word}' in list '{value}'")
            if word in seen:
                raise DirectiveError(f"argument '{key}' word '{word}' repeated in list '{value}'")
            seen.add(word)
    elif rule.type == "integer":
        if not _go_match(r"^-?\d+$", value):
            raise DirectiveError(f"argument '{key}' invalid integer '{value}'")
    elif (
        rule.type == "bool"
        and rule.patterns
        and not any(_go_match(p, value) for p in rule.patterns)
    ):
        raise DirectiveError(f"argument '{key}' invalid boolean '{value}'")


def parse_directive(line: str) -> Directive:
    """Parse one ``#DW`` line against the nnf ruleset; raise DWS's message if bad."""
    if not isinstance(line, str):
        raise DirectiveError(f"directive must be a string, got {line!r}")
    tokens = line.split()
    if not tokens or tokens[0] != "#DW":
        raise DirectiveError(f"missing '#DW' prefix in directive '{line}'")
    if len(tokens) < 2 or tokens[1] not in _RULES:
        raise DirectiveError(f"invalid directive '{line}'")
    rule = _RULES[tokens[1]]
    args: dict[str, str | None] = {}
    for token in tokens[2:]:
        key, sep, text = token.partition("=")
        if key in args:
            raise DirectiveError(f"repeated argument '{key}' in directive '{line}'")
        args[key] = text if sep else None
    for key, value in args.items():
        arg_rule = next((r for r in rule.args if _go_match(r.key, key)), None)
        if arg_rule is None:
            raise DirectiveError(f"unsupported argument '{key}'")
        _check_value(arg_rule, key, value)
    for arg_rule in rule.args:
        if arg_rule.required and not any(_go_match(arg_rule.key, k) for k in args):
            raise DirectiveError(f"missing required argument '{arg_rule.key}'")
    return _CLASSES[rule.command](line=line, command=rule.command, args=args)


def parse_directives(lines: Sequence[str]) -> list[Directive]:
    """Parse every line and check ``uniqueWithin`` across them (the webhook's checks)."""
    parsed = [parse_directive(line) for line in lines]
    seen: dict[str, set[str]] = {}
    for directive in parsed:
        rule = _RULES[directive.command]
        for key, value in directive.args.items():
            arg_rule = next(r for r in rule.args if _go_match(r.key, key))
            if arg_rule.unique_within and value is not None:
                scope = seen.setdefault(arg_rule.unique_within, set())
                if value in scope:
                    raise DirectiveError(
                        f"value '{value}' must be unique within '{arg_rule.unique_within}'"
                    )
                scope.add(value)
    return parsed


# ---------------------------------------------------------------------------
# whole-workflow checks nnf makes in Proposal

_JOB_VAR = re.compile(r"^\$DW_JOB_([a-z][a-z0-9_]+)")
_PERSISTENT_VAR = re.compile(r"^\$DW_PERSISTENT_([a-z][a-z0-9_]+)")


def check_workflow(directives: Sequence[Directive]) -> str | None:
    """Return nnf's Proposal error for the workflow, or None when it is acceptable.

    The text is what the Workflow's ``status.message`` shows, e.g.
    ``"DW Directive 0: User error: job storage instance 'x' not found"``: always on
    directive 0, whichever directive is at fault, since nnf-sos's ``validateWorkflow``
    checks the whole workflow at the start of the first driver entry it processes.
    Checks that need cluster state (persistent instances, global Lustre
    mounts, storage profiles) are the DWS controller's and are not made here.
    """
    commands = [d.command for d in directives]
    if len(directives) > 1 and (
        "create_persistent" in commands or "destroy_persistent" in commands
    ):
        return (
            "DW Directive 0: User error: only a single create_persistent or "
            "destroy_persistent directive is allowed per workflow"
        )
    if commands.count("container") > 1:
        return (
            "DW Directive 0: User error: only a single container directive is supported "
            "per workflow"
        )
    jobdws = {d.name: d for d in directives if isinstance(d, JobDW)}
    persistents = {d.name for d in directives if isinstance(d, PersistentDW)}
    for directive in directives:
        if not isinstance(directive, Copy):
            continue
        for path in (directive.source, directive.destination):
            job = _JOB_VAR.match(path)
            if job:
                name = job.group(1).replace("_", "-")
                if name not in jobdws:
                    return f"DW Directive 0: User error: job storage instance '{name}' not found"
                if jobdws[name].fs_type == "raw":
                    return (
                        "DW Directive 0: User error: data movement can not be used "
                        "with raw allocations"
                    )
            persistent = _PERSISTENT_VAR.match(path)
            if persistent:
                name = persistent.group(1).replace("_", "-")
                if name not in persistents:
                    return (
                        "DW Directive 0: User error: persistentdw directive mentioning "
                        f"'{name}' not found"
                    )
    return None


def check_persistent_creation(
    directives: Sequence[str], *, userid: int, owner_uid: int, restrict: bool
) -> None:
    """Refuse ``create_persistent`` from anyone but the instance owner when restricted."""
    if not restrict or userid == owner_uid:
        return
    if any("create_persistent" in line for line in directives):
        raise PersistentCreationForbidden(
            "only the instance owner can create persistent file systems"
        )
