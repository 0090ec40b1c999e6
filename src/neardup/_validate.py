"""One message format for every parameter check (scikit-learn style).

Each check raises :class:`~neardup.errors.ConfigError` with the owner, the parameter, the value
and what the value must be, so that the command line can name the option instead
(:func:`neardup.cli._common.option_error`)."""

from __future__ import annotations

from numbers import Integral, Real

from .errors import ConfigError


def _fail(message: str, *, owner: str, name: str, value, requirement: str) -> ConfigError:
    return ConfigError(message, owner=owner, parameter=name, value=value, requirement=requirement)


def check_int(name: str, value, low: int | None = None, high: int | None = None, *, owner: str, hint: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise _fail(f"The '{name}' parameter of {owner} must be an int. Got {value!r} instead.{hint}",
                    owner=owner, name=name, value=value, requirement="a whole number")
    if (low is not None and value < low) or (high is not None and value > high):
        rng = f"[{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        # the bound that the value crosses: "--num-perm must be at least 1, got 0"
        requirement = f"at least {low}" if low is not None and value < low else f"at most {high}"
        raise _fail(f"The '{name}' parameter of {owner} must be an int in the range {rng}. Got {value!r} instead.{hint}",
                    owner=owner, name=name, value=value, requirement=requirement)


def check_float(name: str, value, low: float, high: float, *, owner: str, closed: str = "both", hint: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise _fail(f"The '{name}' parameter of {owner} must be a float. Got {value!r} instead.{hint}",
                    owner=owner, name=name, value=value, requirement="a number")
    lo_ok = value >= low if closed in ("both", "left") else value > low
    hi_ok = value <= high if closed in ("both", "right") else value < high
    if not (lo_ok and hi_ok):
        left = "[" if closed in ("both", "left") else "("
        right = "]" if closed in ("both", "right") else ")"
        raise _fail(
            f"The '{name}' parameter of {owner} must be a float in the range {left}{low:g}, {high:g}{right}. Got {value!r} instead.{hint}",
            owner=owner, name=name, value=value, requirement=f"in {left}{low:g}, {high:g}{right}")


def check_choice(name: str, value, choices, *, owner: str, requirement: str | None = None) -> None:
    """``requirement``: what the command line says instead of the choices, where its option takes
    more than their names (``--keep``: ``field:NAME`` beside ``first``)."""
    if value not in choices:
        opts = ", ".join(repr(c) for c in choices)
        raise _fail(f"The '{name}' parameter of {owner} must be one of {opts}. Got {value!r} instead.",
                    owner=owner, name=name, value=value, requirement=requirement or f"one of {opts}")


def check_bool(name: str, value, *, owner: str) -> None:
    if not isinstance(value, bool):
        raise _fail(f"The '{name}' parameter of {owner} must be a bool. Got {value!r} instead.",
                    owner=owner, name=name, value=value, requirement="true or false")


def check_text(name: str, value, *, owner: str, optional: bool = False) -> None:
    """A non-empty str (or None when ``optional``): the name of a field, a source."""
    if optional and value is None:
        return
    if not isinstance(value, str) or not value:
        kind = "a non-empty str or None" if optional else "a non-empty str"
        raise _fail(f"The '{name}' parameter of {owner} must be {kind}. Got {value!r} instead.",
                    owner=owner, name=name, value=value, requirement="a non-empty name")
