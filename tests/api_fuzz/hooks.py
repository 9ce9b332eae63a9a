"""schemathesis hooks (loaded by the CLI from schemathesis.toml): generated path parameters are
mostly swapped for ids that exist, read from the JSON file named by QIWEI_FUZZ_IDS, so cases get
past the 404 and reach validation and the services.

Destructive operations get their own rows (forget: `forgettable`, reject and expire: `retirable`,
erase: `erasable_ids`) so the other operations keep finding data. No Django import here: this
runs inside the CLI process."""

from __future__ import annotations

import itertools
import json
import os
from functools import cache
from typing import Any

import schemathesis
from hypothesis import strategies as st

# Out of REAL_ID_WEIGHT + 1 fuzzing cases, REAL_ID_WEIGHT use real ids; the rest keep generated values.
REAL_ID_WEIGHT = 3
_coverage_rotation = itertools.count()


@cache
def seeded_ids() -> dict[str, Any]:
    path = os.environ.get("QIWEI_FUZZ_IDS", "")
    if not path:
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def real_choices(ids: dict[str, Any], label: str, keys: set[str]) -> list[dict[str, Any]]:
    """Every consistent set of existing values for the path parameters named in `keys`."""
    base = {"account_id": ids["account_id"]} if "account_id" in keys else {}
    if "item_id" in keys:
        if label.startswith("DELETE "):
            pairs = ids["forgettable"]
        elif label.endswith(("/reject/", "/expire/")):
            pairs = ids["retirable"]  # they end an item's life; edit and confirm need active ones
        else:
            pairs = ids["items"]
        return [{**base, "conversation_id": conversation_id, "item_id": item_id} for conversation_id, item_id in pairs]
    if "conversation_id" in keys:
        conversations = ids["erasable_ids"] if label.endswith("/erase/") else ids["conversation_ids"]
        return [{**base, "conversation_id": conversation_id} for conversation_id in conversations]
    for key, seeded in (
        ("draft_id", "draft_ids"),
        ("task_id", "task_ids"),
        ("alert_id", "alert_ids"),
        ("recommendation_id", "recommendation_ids"),
    ):
        if key in keys:
            return [{**base, key: value} for value in ids.get(seeded) or []] or [base]
    return [base]


@schemathesis.hook
def before_generate_path_parameters(context: Any, strategy: st.SearchStrategy) -> st.SearchStrategy:
    """Fuzzing phase: most cases draw their ids from the seeded rows."""
    ids = seeded_ids()
    if not ids:
        return strategy
    label = context.operation.label

    def realize(generated: Any) -> st.SearchStrategy:
        if not isinstance(generated, dict):
            return st.just(generated)
        choices = real_choices(ids, label, set(generated))
        return st.sampled_from(choices).map(lambda real: {**generated, **real})

    return st.one_of(strategy, *[strategy.flatmap(realize)] * REAL_ID_WEIGHT)


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    """Coverage phase: a case aimed at the query or the body gets existing ids (round robin), so
    its boundary values reach the view; a case aimed at a path parameter keeps its own."""
    ids = seeded_ids()
    meta = case.meta
    if not ids or not case.path_parameters or meta is None or str(meta.phase.name) != "coverage":
        return case
    location = getattr(meta.phase.data, "parameter_location", None)
    if location is not None and str(getattr(location, "value", location)) == "path":
        return case
    choices = real_choices(ids, case.operation.label, set(case.path_parameters))
    case.path_parameters = {**case.path_parameters, **choices[next(_coverage_rotation) % len(choices)]}
    return case


def _error_code(response: Any) -> str:
    if response.status_code < 400:
        return ""
    try:
        body = response.json()
    except ValueError:
        return "(not json)"
    return str(body.get("code", "")) if isinstance(body, dict) else ""


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    """Append one JSON line per call to QIWEI_FUZZ_STATS, for the figures the test prints."""
    path = os.environ.get("QIWEI_FUZZ_STATS", "")
    if not path:
        return
    record = {
        "operation": case.operation.label,
        "phase": str(case.meta.phase.name) if case.meta else "",
        "status": response.status_code,
        "path": case.formatted_path,
        "code": _error_code(response),
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
