"""Governance tasks: expire memory items whose expires_at has passed (issue: governance)."""
