"""The stable public entry point `memory.recall.rank(query, documents, limit)` for benchmarks and
tools; the implementation lives in `memory.context.recall`. Importable without a configured Django."""

from memory.context.recall import (
    RecalledMessage,
    document,
    features,
    rank,
    rank_documents,
    rank_features,
    recall_for,
    tokens,
)

__all__ = ["RecalledMessage", "document", "features", "rank", "rank_documents", "rank_features", "recall_for", "tokens"]
