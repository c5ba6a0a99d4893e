"""Typed values from text: what a ``KEY=VALUE`` flag or a sweep's value list says."""

from __future__ import annotations

import json
from typing import Any


def parse_value(text: str, like: Any = None) -> Any:
    """A value from text, typed like ``like`` (a default of the field it sets) when given;
    otherwise JSON where it parses (numbers, lists, ``true``) and the text itself where not."""
    if isinstance(like, bool) or text.lower() in ("true", "false"):
        if text.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {text!r}")
        return text.lower() == "true"
    if isinstance(like, int) and not isinstance(like, bool):
        return int(float(text))
    if isinstance(like, float):
        return float(text)
    if isinstance(like, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
