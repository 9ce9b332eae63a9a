"""The stable public entry point `memory.recall.rank(query, documents, limit)` for benchmarks and
tools; the implementation lives in the reader (`qiwei_site.reading.recall`), importable without a
configured Django. The product path over a customer's history is `memory.context.recall.recall_for`."""

from qiwei_site.reading.recall import document, features, rank, rank_documents, rank_features, tokens

__all__ = ["document", "features", "rank", "rank_documents", "rank_features", "tokens"]
