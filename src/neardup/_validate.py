"""One message format for every parameter check (scikit-learn style)."""

from __future__ import annotations

from numbers import Integral, Real

from .errors import ConfigError


def check_int(name: str, value, low: int | None = None, high: int | None = None, *, owner: str, hint: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ConfigError(f"The '{name}' parameter of {owner} must be an int. Got {value!r} instead.{hint}")
    if (low is not None and value < low) or (high is not None and value > high):
        rng = f"[{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise ConfigError(f"The '{name}' parameter of {owner} must be an int in the range {rng}. Got {value!r} instead.{hint}")


def check_float(name: str, value, low: float, high: float, *, owner: str, closed: str = "both", hint: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ConfigError(f"The '{name}' parameter of {owner} must be a float. Got {value!r} instead.{hint}")
    lo_ok = value >= low if closed in ("both", "left") else value > low
    hi_ok = value <= high if closed in ("both", "right") else value < high
    if not (lo_ok and hi_ok):
        left = "[" if closed in ("both", "left") else "("
        right = "]" if closed in ("both", "right") else ")"
        raise ConfigError(
            f"The '{name}' parameter of {owner} must be a float in the range {left}{low:g}, {high:g}{right}. Got {value!r} instead.{hint}"
        )


def check_choice(name: str, value, choices, *, owner: str) -> None:
    if value not in choices:
        opts = ", ".join(repr(c) for c in choices)
        raise ConfigError(f"The '{name}' parameter of {owner} must be one of {opts}. Got {value!r} instead.")
