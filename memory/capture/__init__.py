"""Capture: from a customer's message to memory (spec §3, DESIGN §6): ingest and its API, safety
gate, extraction, evidence-gated writes, the durable job queue and backfill."""

from qiwei_site.reading.extract import Candidate, extract_candidates

__all__ = ["Candidate", "extract_candidates"]
