"""Project-level fixed context (spec §2): the persona, business context and rules files, with
`@context file.md#标题` lines resolved from the knowledge index only, within a character limit.

A reference that climbs (`../`), is absolute, names an unknown file or heading, or loops back
on itself resolves to nothing and is reported; the file system is never read here.
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache

from knowledge.models import KnowledgeDocument, KnowledgeSection
from knowledge.services import KNOWLEDGE_VERSION_CACHE_KEY, knowledge_index, slugify_heading

logger = logging.getLogger(__name__)

_REFERENCE_RE = re.compile(r"^[ \t]*@context[ \t]+(\S+)[ \t]*$")
MAX_REFERENCE_DEPTH = 8
TRUNCATION_MARK = "\n…（项目上下文超出字符上限，已截断）"


@dataclass
class ContextReport:
    chars: int = 0
    files: list[str] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)
    references_resolved: list[str] = field(default_factory=list)
    references_refused: list[dict[str, str]] = field(default_factory=list)
    truncated: bool = False

    @property
    def problems(self) -> list[str]:
        return [f"{name}：文件未索引" for name in self.missing_files] + [
            f"{ref['reference']}：{ref['reason']}" for ref in self.references_refused
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "chars": self.chars,
            "files": self.files,
            "missing_files": self.missing_files,
            "references_resolved": self.references_resolved,
            "references_refused": self.references_refused,
            "truncated": self.truncated,
        }


@dataclass
class KnowledgeContext:
    text: str
    report: ContextReport


class _Refused(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _safe_path(raw: str, *, relative_to: str = "") -> str:
    """A normalised path inside the knowledge root, or _Refused."""
    if not raw or "\\" in raw or "\x00" in raw or ":" in raw.split("/")[0]:
        raise _Refused("路径不合法")
    if raw.startswith("/") or raw.startswith("~"):
        raise _Refused("不允许绝对路径")
    if ".." in raw.split("/"):
        raise _Refused("不允许越过知识库目录（../）")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(relative_to), raw))
    if joined.startswith("..") or joined.startswith("/"):
        raise _Refused("不允许越过知识库目录")
    return joined


def _section_text(path: str, heading: str, seen: set[int] | None = None) -> str:
    document = KnowledgeDocument.objects.filter(path=path).first()
    if document is None:
        raise _Refused("知识库中没有这个文件")
    if not heading:
        return document.text
    sections = list(KnowledgeSection.objects.filter(document=document).order_by("order"))
    wanted = heading.strip()
    for section in sections:
        if section.heading == wanted or section.anchor == wanted or section.anchor == slugify_heading(wanted):
            if seen is not None:
                seen.add(section.pk)
            found = _section_in(document.text, section)
            return found.group(0) if found else f"{'#' * section.level} {section.heading}\n{section.text}"
    raise _Refused("文件中没有这个标题")


def _section_in(text: str, section: KnowledgeSection) -> re.Match[str] | None:
    """Where a section stands in its document's text: its heading line, then its text as written."""
    heading = rf"^#{{{section.level}}}[ \t]+{re.escape(section.heading)}[ \t#]*\n\s*"
    return re.search(heading + re.escape(section.text), text, flags=re.MULTILINE)


def _without_sections(document: KnowledgeDocument, seen: set[int]) -> str:
    """The document's text without the sections an earlier `@context` line already brought in:
    each instruction section once in the prompt (the first place it appears)."""
    text = document.text
    for section in KnowledgeSection.objects.filter(document=document, pk__in=seen):
        found = _section_in(text, section)
        if found:
            text = text[: found.start()] + text[found.end() :]
    return text


def _expand(
    text: str, *, path: str, stack: tuple[str, ...], report: ContextReport, seen: set[int] | None = None
) -> str:
    out: list[str] = []
    for line in text.splitlines():
        match = _REFERENCE_RE.match(line)
        if not match:
            out.append(line)
            continue
        reference = match.group(1)
        try:
            file_part, _hash, heading = reference.partition("#")
            target = _safe_path(file_part, relative_to=path) if file_part else path
            key = f"{target}#{heading}"
            if key in stack or (not heading and target in stack):
                raise _Refused("循环引用，已截断")
            if len(stack) >= MAX_REFERENCE_DEPTH:
                raise _Refused("引用层级过深")
            resolved = _section_text(target, heading, seen)
        except _Refused as refused:
            report.references_refused.append({"reference": reference, "in": path, "reason": refused.reason})
            logger.warning("knowledge context: @context %s in %s refused: %s", reference, path, refused.reason)
            continue
        report.references_resolved.append(key)
        out.append(_expand(resolved, path=target, stack=(*stack, key), report=report, seen=seen))
    return "\n".join(out)


def _truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    room = max(limit - len(TRUNCATION_MARK), 0)
    cut = text[:room]
    # Prefer to cut at a line break, so a rule is never half a sentence when avoidable.
    newline = cut.rfind("\n")
    if newline > room // 2:
        cut = cut[:newline]
    return (cut + TRUNCATION_MARK)[:limit], True


def project_context(*, files: list[str] | None = None, limit: int | None = None) -> KnowledgeContext:
    """The fixed instructions for every turn, from QIWEI_AGENT_CONTEXT_FILES (indexed lazily)."""
    names = list(files if files is not None else settings.QIWEI_AGENT_CONTEXT_FILES)
    limit = limit if limit is not None else settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT
    if not KnowledgeDocument.objects.exists():
        knowledge_index()
    report = ContextReport()
    parts: list[str] = []
    seen: set[int] = set()  # sections already brought in by an `@context` line
    for name in names:
        try:
            path = _safe_path(name)
            document = KnowledgeDocument.objects.filter(path=path).first()
            if document is None:
                raise _Refused("知识库中没有这个文件")
        except _Refused as refused:
            report.missing_files.append(name)
            logger.warning("knowledge context: %s not loaded: %s", name, refused.reason)
            continue
        report.files.append(path)
        text = _without_sections(document, seen) if seen else document.text
        parts.append(_expand(text, path=path, stack=(f"{path}#",), report=report, seen=seen).strip())
    text, report.truncated = _truncate("\n\n".join(part for part in parts if part), limit)
    report.chars = len(text)
    return KnowledgeContext(text=text, report=report)


# --- the fixed instructions, cached per knowledge-index version ------------------------------

# What project_context's text depends on: every indexed document as (path, content hash). A
# section is derived from its document's text when the document is (re)indexed, so the hashes
# cover the sections too; any reindex that changes, adds or removes a file changes the version.
KnowledgeVersion = tuple[tuple[str, str], ...]

# A handful of versions at most (a reindex makes a new one; tests switch knowledge roots).
_CACHED_VERSIONS = 4
_cache: OrderedDict[tuple[str, tuple[str, ...], int], KnowledgeContext] = OrderedDict()
_cache_lock = threading.Lock()


def knowledge_version() -> KnowledgeVersion:
    """The current index version: one query over the (few) documents, paths and hashes only."""
    return tuple(KnowledgeDocument.objects.order_by("path").values_list("path", "sha256"))


# Another process's reindex is seen within this many seconds (this process's at once: the index
# service flushes the key); the context answer cache keys on the token.
KNOWLEDGE_VERSION_CACHE_SECONDS = 5


def _version_token(version: KnowledgeVersion) -> str:
    return hashlib.sha256(repr(version).encode()).hexdigest()[:32]


_EMPTY_VERSION_TOKEN = _version_token(())


def knowledge_version_token() -> str:
    """A short digest of `knowledge_version()`, kept in Django's cache by key and flushed when the
    index is written (`knowledge_version_flush`)."""
    token = cache.get(KNOWLEDGE_VERSION_CACHE_KEY)
    if token is None:
        token = _version_token(knowledge_version())
        cache.set(KNOWLEDGE_VERSION_CACHE_KEY, token, KNOWLEDGE_VERSION_CACHE_SECONDS)
    return str(token)


def _copied(context: KnowledgeContext) -> KnowledgeContext:
    """A caller's own copy: the report's lists are mutable and end up in traces."""
    report = context.report
    return KnowledgeContext(
        text=context.text,
        report=ContextReport(
            chars=report.chars,
            files=list(report.files),
            missing_files=list(report.missing_files),
            references_resolved=list(report.references_resolved),
            references_refused=[dict(refused) for refused in report.references_refused],
            truncated=report.truncated,
        ),
    )


def project_context_cached(*, files: list[str] | None = None, limit: int | None = None) -> KnowledgeContext:
    """`project_context`, computed once per knowledge-index version (and files, limit) in this
    process: a build reads the version's token (`knowledge_version_token`: Django's cache, a query
    at most every few seconds) instead of the documents and sections. The result is equal to
    `project_context`'s for the index that token names, since that depends on nothing else; another
    process's reindex is seen when the token is, as by the context answer cache. An empty index is
    not cached (project_context indexes it lazily; the next call caches)."""
    names = tuple(files if files is not None else settings.QIWEI_AGENT_CONTEXT_FILES)
    limit = limit if limit is not None else settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT
    # The version's token, as the context answer cache keys on it (no query while it is cached).
    token = knowledge_version_token()
    if token == _EMPTY_VERSION_TOKEN:
        return project_context(files=list(names), limit=limit)
    key = (token, names, limit)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
    if cached is None:
        # Kept under the version it is rendered from, read now: a token still naming the version
        # before another process's reindex never labels the new text (it misses until it expires).
        version = knowledge_version()
        cached = project_context(files=list(names), limit=limit)
        if not version:
            return cached
        key = (_version_token(version), names, limit)
        with _cache_lock:
            _cache[key] = cached
            while len(_cache) > _CACHED_VERSIONS:
                _cache.popitem(last=False)
    return _copied(cached)


def project_context_cache_clear() -> None:
    """Forget every cached version (benchmarks' cold runs; never needed for correctness)."""
    with _cache_lock:
        _cache.clear()
