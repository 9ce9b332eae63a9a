"""The stable public entry point `memory.recall.rank(query, documents, limit)` for benchmarks and
tools; the implementation lives in `memory.context.recall`. Importable without a configured Django."""

from memory.context.recall import RecalledMessage, features, rank, recall_for, tokens

__all__ = ["RecalledMessage", "features", "rank", "recall_for", "tokens"]
