"""Loading the settings: TOML file, environment overrides, and errors naming every bad key."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ValidationError

from pipeline.errors import ConfigError
from pipeline.model.files import load, shape_problem
from pipeline.settings.hwcoll import HwcollSettings
from pipeline.settings.pipeline_table import PipelineSettings
from pipeline.settings.secrets import check_config_file, with_credentials
from pipeline.settings.tables import (
    CONFIG_ENV,
    ENV_PREFIX,
    FLUX_TABLES_IGNORED,
    RabbitSettings,
    ResourceTable,
    Settings,
    SlingshotSettings,
)

_TABLES: dict[str, type[BaseModel]] = {
    "rabbit": RabbitSettings,
    "cray-slingshot": SlingshotSettings,
    "pipeline": PipelineSettings,
    "resource": ResourceTable,
    "hwcoll": HwcollSettings,
}


def _accepted(model: type[BaseModel]) -> list[str]:
    names: list[str] = []
    for name, info in model.model_fields.items():
        if isinstance(info.validation_alias, AliasChoices):
            names.extend(str(c) for c in info.validation_alias.choices)
        else:
            names.append(info.alias or name)
    return names


def _sub_model(model: type[BaseModel], key: str) -> type[BaseModel] | None:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            ann = info.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                return ann
    return None


def _env_key(name: str) -> str:
    return name.upper().replace("-", "_").replace(".", "_")


#: The longest value an environment variable may give a setting (bytes).
ENV_VALUE_MAX = 64 * 1024


def _env_value(var: str, text: str) -> Any:
    """``text`` read as a TOML value (else as a string), through the same bounds as a
    settings file: its size, its depth."""
    if len(text) > ENV_VALUE_MAX:
        raise ConfigError(f"environment variable {var} is longer than {ENV_VALUE_MAX:,} bytes")
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except RecursionError:
        raise ConfigError(f"environment variable {var} nests too deeply") from None
    except tomllib.TOMLDecodeError:
        return text
    if problem := shape_problem(value):
        raise ConfigError(f"environment variable {var} {problem}")
    return value


def _env_overrides(env: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Return the nested overrides found in ``env`` and the names of unknown variables."""
    overrides: dict[str, Any] = {}
    unknown: list[str] = []
    tables = {_env_key(t): (t, m) for t, m in _TABLES.items()}
    for var, text in env.items():
        if not var.startswith(ENV_PREFIX) or var == CONFIG_ENV:
            continue
        parts = var[len(ENV_PREFIX) :].split("__")
        if parts[0] not in tables or len(parts) < 2:
            unknown.append(var)
            continue
        table, model = tables[parts[0]]
        path = [table]
        current: type[BaseModel] | None = model
        for part in parts[1:]:
            match = None
            if current is not None:
                match = next((k for k in _accepted(current) if _env_key(k) == part), None)
            if match is None:
                unknown.append(var)
                break
            path.append(match)
            current = _sub_model(current, match) if current is not None else None
        else:
            node = overrides
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = _env_value(var, text)
    return overrides, unknown


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def _expected(kind: str) -> str:
    return {
        "float_type": "a number",
        "int_type": "an integer",
        "bool_type": "true or false",
        "string_type": "a string",
        "dict_type": "a table",
        "list_type": "a list",
        "model_type": "a table",
    }.get(kind, kind.replace("_", " "))


def _describe(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc)
        if err["type"] == "extra_forbidden":
            table = ".".join(loc[:-1])
            model: type[BaseModel] | None = Settings
            for part in loc[:-1]:
                model = _sub_model(model, part) if model is not None else None
            accepted = ", ".join(_accepted(model)) if model is not None else "?"
            where = f"table [{table}]" if table else "the top level"
            lines.append(f"unknown key '{loc[-1]}' in {where}; accepted keys: {accepted}")
        elif err["type"].endswith("_type") or err["type"].endswith("_parsing"):
            lines.append(
                f"{key} = {err.get('input')!r}: wrong type, expected {_expected(err['type'])}"
            )
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
            lines.append(f"{key} = {err.get('input')!r}: {msg}")
    return _listed(source, lines)


#: The most problems a configuration error lists; the rest are counted.
SHOWN_PROBLEMS = 20


def _listed(source: str, problems: list[str]) -> str:
    """The configuration error: one line for one problem; else at most
    :data:`SHOWN_PROBLEMS` lines, then how many more (each cut to a line's length: a
    value can be megabytes)."""
    shown = [p if len(p) <= 500 else p[:499] + "…" for p in problems[:SHOWN_PROBLEMS]]
    if len(problems) == 1:  # one problem: one line
        return f"invalid configuration in {source}: {shown[0]}"
    text = f"invalid configuration in {source}:" + "".join(f"\n  - {p}" for p in shown)
    if len(problems) > SHOWN_PROBLEMS:
        text += f"\n  - and {len(problems) - SHOWN_PROBLEMS} more"
    return text


def load_settings(
    path: str | Path | None = None, *, env: Mapping[str, str] | None = None
) -> Settings:
    """Load settings from ``path`` (or ``$CORAL2_PIPELINE_CONFIG``) and the environment.

    Raises :class:`ConfigError` listing every problem.
    """
    environ = os.environ if env is None else env
    if path is None:
        path = environ.get(CONFIG_ENV) or None
    data: dict[str, Any] = {}
    source = "defaults and environment"
    if path is not None:
        source = str(path)
        data = load(path, "config file", "toml")
    unknown_tables = [t for t in data if t not in _TABLES and t not in FLUX_TABLES_IGNORED]
    problems = [
        f"unknown table [{t}]; accepted tables: {', '.join(_TABLES)} "
        f"(and Flux's own tables, which are ignored)"
        for t in unknown_tables
    ]
    overrides, unknown_env = _env_overrides(environ)
    problems += [
        f"environment variable {v} names no setting (form: {ENV_PREFIX}<TABLE>__<KEY>)"
        for v in unknown_env
    ]
    relevant = {k: v for k, v in data.items() if k in _TABLES}
    for table, value in relevant.items():
        if not isinstance(value, Mapping):
            problems.append(f"[{table}] must be a table, got {value!r}")
    if problems:
        raise ConfigError(_listed(source, problems))
    merged = _merge(relevant, overrides)
    try:
        settings = Settings(**merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from exc
    if path is not None:
        check_config_file(settings, path)
    return with_credentials(settings)
