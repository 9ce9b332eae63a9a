"""Typed, range-checked configuration read from the environment (DESIGN §10).

An out-of-range or malformed value stops start-up with a message that names the
variable and its allowed range, so a typo never silently changes behaviour.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


class ConfigError(ImproperlyConfigured):
    pass


def env_int(name: str, default: int, low: int, high: int) -> int:
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer; allowed range is {low}–{high}.") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={value} is out of range; allowed range is {low}–{high}.")
    return value


def env_float(name: str, default: float, low: float, high: float) -> float:
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number; allowed range is {low}–{high}.") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={value} is out of range; allowed range is {low}–{high}.")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, "").strip() or default
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not one of: {', '.join(choices)}.")
    return value


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, "").strip() or default


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (true/false).")


def env_list(name: str, default: str) -> list[str]:
    raw = os.environ.get(name, "").strip() or default
    return [part.strip() for part in raw.split(",") if part.strip()]
