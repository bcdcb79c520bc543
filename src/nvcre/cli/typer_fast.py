"""Parameter coercion for nvcrectl without importing pydantic at start.

Typer (0.29) coerces every non-flag parameter through a pydantic TypeAdapter
(``typer._coercion.build_runtime_param``), so any command that takes an option loaded
pydantic and built adapters: about 130 ms of a 300 ms start budget, before the command
did anything. Most values on a command line are plain strings, digits and paths whose
coercion is trivial; this module coerces those directly and hands everything else (and
every value the short path does not accept) to Typer's own pydantic path, so results
and error messages stay Typer's. The wrapped function is private to Typer: if it is
absent (another Typer version) nothing is patched and only start time is lost.
"""

from __future__ import annotations

import re
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?")
_NO = object()


def fast_value(annotation: Any, info: Any, value: Any) -> Any:
    """The value Typer's pydantic adapter would return for ``value``, or ``_NO`` where
    only that adapter can say (other types, constraints, unusual input)."""
    if getattr(info, "parser", None) is not None or info.min is not None or info.max is not None:
        return _NO
    if annotation is str:
        return value if type(value) is str else _NO
    if annotation is bool:
        return value if type(value) is bool else _NO
    if annotation is int:
        if type(value) is int:
            return value
        return int(value) if type(value) is str and _INT.fullmatch(value) else _NO
    if annotation is float:
        if type(value) is float:
            return value
        return float(value) if type(value) is str and _FLOAT.fullmatch(value) else _NO
    if annotation == list[str] and isinstance(value, (list, tuple)):
        return list(value) if all(type(item) is str for item in value) else _NO
    return _NO


def _path_input(annotation: Any, info: Any, value: Any) -> Any:
    """A plain ``Path`` option's string as the ``Path`` pydantic would make of it."""
    if annotation is not Path or info.path_type not in (None, Path):
        return _NO
    if type(value) is str and value and "\x00" not in value:
        return Path(value)
    return _NO


def install() -> None:
    """Route Typer's parameter coercion through the short path; idempotent."""
    try:
        from typer import _coercion, _param_types, core
    except ImportError:  # another Typer layout: nothing to speed up
        return
    current = getattr(core, "build_runtime_param", None)
    if current is None or getattr(current, "_nvcre_fast", False) or not hasattr(_coercion, "build_runtime_param"):
        return
    # Only the layout this was written against (Typer 0.29): a frozen dataclass whose required
    # fields are the annotation and the parameter info. Anything else keeps Typer's own path,
    # so a Typer release that reshapes these internals costs speed, never a traceback.
    base = getattr(_coercion, "RuntimeParam", None)
    if base is None or not dataclasses.is_dataclass(base) or not base.__dataclass_params__.frozen:
        return
    required = {f.name for f in dataclasses.fields(base)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    if required != {"annotation", "parameter_info"} or not callable(getattr(base, "_coerce_value", None)):
        return
    try:
        fast_class = _fast_class(base, _coercion, _param_types)
    except Exception:  # noqa: BLE001 - an unforeseen Typer layout: keep Typer's path
        return

    def build(descriptor: Any) -> Any:
        file_annotation = getattr(descriptor, "file_annotation", _NO)
        if file_annotation is not None or not hasattr(descriptor, "annotation"):
            return current(descriptor)
        return fast_class(annotation=descriptor.annotation, parameter_info=descriptor.parameter_info,
                          descriptor=descriptor)

    build._nvcre_fast = True  # type: ignore[attr-defined]
    core.build_runtime_param = build


def _fast_class(base: Any, _coercion: Any, _param_types: Any) -> type:
    """Typer's RuntimeParam with the short path in front of its pydantic adapter."""

    @dataclass(frozen=True)
    class FastRuntimeParam(base):
        """Coerces the trivial cases itself, builds Typer's adapter for the rest."""

        descriptor: Any = None
        slow: list = field(default_factory=list)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            quick = fast_value(self.annotation, self.parameter_info, value)
            if quick is not _NO:
                return quick
            as_path = _path_input(self.annotation, self.parameter_info, value)
            if as_path is not _NO:
                return _param_types.coerce_cli_path(as_path, self.parameter_info, path_type=Path,
                                                    param=param, ctx=ctx)
            if not self.slow:
                self.slow.append(_coercion.build_runtime_param(self.descriptor))
            return self.slow[0]._coerce_value(value, param=param, ctx=ctx)

    return FastRuntimeParam


