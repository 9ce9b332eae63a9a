"""Index the knowledge-base Markdown into documents and heading sections (default DB).

Only regular files inside the knowledge root are read: a symlink is followed only when its
target stays inside the root, and symlinked directories are never entered.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from knowledge.models import KnowledgeDocument, KnowledgeSection
from qiwei_site.platform.errors import ValidationFailed

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 1_000_000
_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")


@dataclass
class IndexReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class ParsedSection:
    heading: str
    anchor: str
    level: int
    text: str


def slugify_heading(heading: str) -> str:
    """A GitHub-style anchor that keeps CJK characters: lower case, punctuation out, spaces → '-'."""
    slug = heading.strip().lower()
    slug = re.sub(r"[^\w\- ]", "", slug)
    return re.sub(r" ", "-", slug)


def parse_sections(text: str) -> list[ParsedSection]:
    """Split Markdown into heading sections. A section's text runs to the next heading of the
    same or a higher level, so a reference to it brings its sub-sections along."""
    lines = text.splitlines()
    headings: list[tuple[int, int, str]] = []  # (line index, level, heading)
    in_fence = False
    for number, line in enumerate(lines):
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING_RE.match(line)
        if match:
            headings.append((number, len(match.group(1)), match.group(2).strip()))
    sections: list[ParsedSection] = []
    preamble_end = headings[0][0] if headings else len(lines)
    preamble = "\n".join(lines[:preamble_end]).strip()
    if preamble:
        sections.append(ParsedSection(heading="", anchor="", level=0, text=preamble))
    seen: dict[str, int] = {}
    for position, (number, level, heading) in enumerate(headings):
        end = len(lines)
        for later_number, later_level, _later in headings[position + 1 :]:
            if later_level <= level:
                end = later_number
                break
        anchor = slugify_heading(heading)
        if anchor in seen:
            seen[anchor] += 1
            anchor = f"{anchor}-{seen[anchor]}"
        else:
            seen[anchor] = 0
        body = "\n".join(lines[number + 1 : end]).strip()
        sections.append(ParsedSection(heading=heading[:300], anchor=anchor[:300], level=level, text=body))
    return sections


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _markdown_files(root: Path, report: IndexReport) -> dict[str, Path]:
    """Relative path → real file, for every Markdown file that may be read."""
    found: dict[str, Path] = {}
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(directory)
        for name in list(dirnames):
            if (base / name).is_symlink():
                dirnames.remove(name)
                report.skipped.append(f"{(base / name).relative_to(root).as_posix()}/（符号链接目录不索引）")
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".md"):
                continue
            path = base / name
            relative = path.relative_to(root).as_posix()
            real = path.resolve()
            if not _inside(real, root) or not real.is_file():
                report.skipped.append(f"{relative}（链接指向知识库目录之外，拒绝读取）")
                logger.warning("knowledge: %s points outside the knowledge root; not read", relative)
                continue
            if real.stat().st_size > MAX_FILE_BYTES:
                report.skipped.append(f"{relative}（文件超过 {MAX_FILE_BYTES} 字节）")
                continue
            found[relative] = real
    return found


def knowledge_index(*, root: Path | str | None = None) -> IndexReport:
    """Bring the index in line with the Markdown under the knowledge root: new and changed files
    are (re)indexed, unchanged ones (same sha256) are left alone, removed ones are deleted."""
    root_path = Path(root if root is not None else settings.QIWEI_KNOWLEDGE_DIR).resolve()
    if not root_path.is_dir():
        raise ValidationFailed(
            f"知识库目录不存在：{root_path} (knowledge directory does not exist).", code="knowledge_dir_missing"
        )
    report = IndexReport()
    files = _markdown_files(root_path, report)
    existing = {document.path: document for document in KnowledgeDocument.objects.all()}
    with transaction.atomic():
        for relative, real in files.items():
            raw = real.read_bytes()
            digest = hashlib.sha256(raw).hexdigest()
            document = existing.get(relative)
            if document is not None and document.sha256 == digest:
                report.unchanged.append(relative)
                continue
            text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
            sections = parse_sections(text)
            title = next((s.heading for s in sections if s.level == 1), "") or Path(relative).stem
            if document is None:
                document = KnowledgeDocument(path=relative)
                report.added.append(relative)
            else:
                report.updated.append(relative)
            document.title = title[:200]
            document.sha256 = digest
            document.text = text
            document.mtime = real.stat().st_mtime
            document.save()
            document.sections.all().delete()
            KnowledgeSection.objects.bulk_create(
                KnowledgeSection(
                    document=document,
                    heading=section.heading,
                    anchor=section.anchor,
                    level=section.level,
                    order=order,
                    text=section.text,
                    sha256=hashlib.sha256(section.text.encode("utf-8")).hexdigest(),
                )
                for order, section in enumerate(sections)
            )
        gone = sorted(set(existing) - set(files))
        if gone:
            KnowledgeDocument.objects.filter(path__in=gone).delete()
            report.removed.extend(gone)
    if report.added or report.updated or report.removed:
        knowledge_version_flush()
        logger.info("knowledge index: %s", report.as_dict())
    return report


KNOWLEDGE_VERSION_CACHE_KEY = "qiwei:knowledge:version"


def knowledge_version_flush() -> None:
    """Forget the cached index version (`knowledge.context.knowledge_version_token`)."""
    cache.delete(KNOWLEDGE_VERSION_CACHE_KEY)
