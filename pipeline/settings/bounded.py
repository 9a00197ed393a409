"""The base of every settings table: unknown keys refused, types strict, and every number
taken the one way (``pipeline.model.numbers``): finite, a duration no longer than a
year, a count no larger than :data:`~pipeline.model.numbers.MAX_COUNT`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from pipeline.model.numbers import MAX_COUNT, MAX_SECONDS


class Table(BaseModel):
    """A settings table (a TOML table of the configuration file)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, float) and abs(value) > MAX_SECONDS:  # every one is seconds
            raise ValueError(f"{value:g} seconds is more than a setting takes, {MAX_SECONDS:g}")
        if isinstance(value, int) and abs(value) > MAX_COUNT:
            raise ValueError(f"{value} is out of range: at most {MAX_COUNT} either way")
        return value
