"""Small helpers shared by the command groups: options, consoles and config errors."""

from __future__ import annotations

import json
import os
import sys
import types
from typing import Any, Literal, Self, Union, get_args, get_origin

import click
import typer
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.config import ExtraValues

from kairos.report.console import WIDE, make_console

__all__ = [
    "WIDE",
    "SettingError",
    "Settings",
    "config_error",
    "make_console",
    "parse_assignments",
    "setting_error",
    "wide_help",
]


def parse_assignments(pairs: list[str] | None, option: str) -> dict[str, Any]:
    """`["a=1", "b=x"]` -> `{"a": 1, "b": "x"}`: values are JSON when they parse as JSON."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{option} takes KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def wide_help() -> None:
    """`--help` piped or captured: typer's rich help would cut defaults at 80 columns."""
    if (
        not sys.stdout.isatty()
        and not os.environ.get("TERMINAL_WIDTH")
        and not os.environ.get("COLUMNS")
    ):
        os.environ["TERMINAL_WIDTH"] = str(WIDE)


def config_error(exc: Exception) -> str:
    """A config error as a person acts on it: each bad field, what is wrong and what it got,
    instead of pydantic's multi-line report that ends with a link to its docs."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for err in exc.errors():
        msg = str(err["msg"]).removeprefix("Value error, ")
        where = ".".join(str(p) for p in err["loc"])
        got = err.get("input")
        shown = "" if isinstance(got, dict) or got is None else f" (got {got!r})"
        parts.append(f"invalid {where}: {msg}{shown}" if where else f"{msg}{shown}")
    return "; ".join(parts)


class SettingError(click.UsageError, ValueError):
    """A setting a person gave is unknown or of the wrong type. A click usage error, so a
    command prints it as one line (`Error: ...`, exit 2) instead of a traceback; a ValueError,
    so code that validates configs catches it as before."""


def _type_name(annotation: Any) -> str:
    """A field's type as a person reads it: `PacingConfig | None`, not its module path."""
    if isinstance(annotation, types.UnionType) or get_origin(annotation) is Union:
        return " | ".join(_type_name(a) for a in get_args(annotation))
    if annotation is type(None):
        return "None"
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(annotation))
    name = getattr(annotation, "__name__", None)
    return name if name and not getattr(annotation, "__args__", None) else str(annotation)


def _section(annotation: Any) -> type[BaseModel] | None:
    """The settings model a field holds, also when it is optional (`PacingConfig | None`,
    where None switches the section off); None for any other type."""
    if isinstance(annotation, types.UnionType) or get_origin(annotation) is Union:
        models = [a for a in get_args(annotation) if a is not type(None)]
        return _section(models[0]) if len(models) == 1 else None
    is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return annotation if is_model else None


def _model_at(model: type[BaseModel], path: list[str]) -> type[BaseModel] | None:
    """The model a nested key lives in (`point.load_factor` lives in the `point` field's,
    `pacing.margin` in the optional `pacing` field's)."""
    for name in path:
        field = model.model_fields.get(name)
        inner = _section(field.annotation) if field else None
        if inner is None:
            return None
        model = inner
    return model


def setting_error(exc: ValidationError, model: type[BaseModel], what: str = "setting") -> str:
    """One line per bad key: an unknown key with the allowed ones, or a value with the type
    the field expects; never pydantic's multi-line report."""
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc)
        got = err.get("input")
        owner = _model_at(model, loc[:-1])
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(owner.model_fields)) if owner else "none"
            parts.append(f"unknown {what} {key!r} (allowed: {allowed})")
            continue
        field = owner.model_fields.get(loc[-1]) if owner and loc else None
        expected = f"expected {_type_name(field.annotation)}: " if field else ""
        msg = str(err["msg"]).removeprefix("Value error, ")
        shown = "" if isinstance(got, dict) else f"={got!r}"
        parts.append(f"invalid {what} {key}{shown}: {expected}{msg}" if key else msg)
    return "; ".join(parts)


class Settings(BaseModel):
    """A config a person sets key by key (`--set KEY=VALUE`): an unknown key is an error, not
    silently ignored, and a bad key or value is one `SettingError` line naming the key, the
    value and what was expected (the allowed keys, or the field's type)."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        try:
            return super().model_validate(
                obj,
                strict=strict,
                extra=extra,
                from_attributes=from_attributes,
                context=context,
                by_alias=by_alias,
                by_name=by_name,
            )
        except ValidationError as exc:
            raise SettingError(setting_error(exc, cls)) from None
