"""The API's request parser (settings: DEFAULT_PARSER_CLASSES). Kept apart from api.py, which imports
DRF's APIView, whose class body reads this setting."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from rest_framework import exceptions as drf_exceptions
from rest_framework.parsers import JSONParser

from qiwei_site.platform.errors import ValidationFailed

# Deeper than any request body of ours (an ingest batch is 3 levels); deep nesting only costs
# recursion in parsing, validation and error rendering.
MAX_JSON_DEPTH = 32
_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")


def _refuse_constant(name: str) -> None:
    raise ValidationFailed(f"JSON 不允许 {name} (JSON must not contain {name}).", code="invalid_json")


def _check_json_tree(data: Any) -> None:
    """Depth and characters in one pass without recursion: NUL and lone surrogates are refused in
    every key and string, so nothing below has to care (SQLite stores them, PostgreSQL crashes)."""
    stack: list[tuple[Any, int, str]] = [(data, 1, "$")]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, str):
            _check_json_string(node, where)
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            raise _too_deep()
        if isinstance(node, dict):
            for key, value in node.items():
                _check_json_string(key, f"{where} 的键")
                stack.append((value, depth + 1, f"{where}.{key[:40]}"))
        else:
            stack.extend((value, depth + 1, f"{where}[{index}]") for index, value in enumerate(node))


def _check_json_string(value: str, where: str) -> None:
    found = _BAD_CHARACTER.search(value)
    if found is None:
        return
    if found.group() == "\x00":
        raise ValidationFailed(f"{where} 含有空字符 NUL (NUL is not allowed).", code="invalid_characters")
    raise ValidationFailed(f"{where} 含有孤立的代理字符 (a lone UTF-16 surrogate).", code="invalid_unicode")


def _too_deep() -> ValidationFailed:
    return ValidationFailed(
        f"JSON 嵌套超过 {MAX_JSON_DEPTH} 层 (JSON is nested deeper than {MAX_JSON_DEPTH}).", code="json_too_deep"
    )


class StrictJSONParser(JSONParser):
    """The API's only parser: UTF-8 JSON with no NaN/Infinity, at most MAX_JSON_DEPTH deep, and no
    NUL or lone surrogate anywhere. Anything else is a 400 with a code, never a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode(encoding)
        except LookupError:
            raise drf_exceptions.UnsupportedMediaType(f"charset={encoding}") from None
        except UnicodeDecodeError:
            raise ValidationFailed(
                f"请求体不是有效的 {encoding} 文本 (the body is not valid {encoding}).", code="invalid_unicode"
            ) from None
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise _too_deep() from None
        except ValueError as exc:
            raise drf_exceptions.ParseError(f"JSON parse error - {exc}") from None
        _check_json_tree(data)
        return data
