"""Capture: from a customer's message to memory (spec §3, DESIGN §6): safety gate, extraction,
evidence-gated writes and the durable job queue."""

from memory.capture.extract import Candidate, extract_candidates

__all__ = ["Candidate", "extract_candidates"]
