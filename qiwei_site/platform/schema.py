"""A drf-spectacular post-processing hook for what the generator cannot say about our governance
writes: every governance input's `reason` is required (a PATCH component is generated "partial",
all fields optional, though our PATCH views validate the whole input and answer
`400 reason_required` without one), and a DELETE that takes a body (forgetting a memory item names
its reason) documents it (the generator drops DELETE bodies; the view says so with the
`x-request-body` extension)."""

from __future__ import annotations

from typing import Any

# Governance inputs describe their reason as required (`memory.governance.apis.GovernanceReasonInput`).
REQUIRED_MARK = "必填"


def governance_reasons(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    schemas = result.get("components", {}).get("schemas", {})
    for schema in schemas.values():
        reason = schema.get("properties", {}).get("reason")
        if reason and REQUIRED_MARK in reason.get("description", ""):
            required = schema.setdefault("required", [])
            if "reason" not in required:
                required.append("reason")
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            body = operation.pop("x-request-body", None)
            if body is not None and "requestBody" not in operation:
                ref = {"$ref": f"#/components/schemas/{body}"}
                operation["requestBody"] = {"content": {"application/json": {"schema": ref}}}
            content = operation.get("requestBody", {}).get("content", {})
            for media in content.values():
                name = media.get("schema", {}).get("$ref", "").rsplit("/", 1)[-1]
                if "reason" in schemas.get(name, {}).get("required", []):
                    operation["requestBody"]["required"] = True
    return result
