"""The indexed knowledge base (default DB): Markdown documents split into heading sections."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from qiwei_site.platform.models import TimeStampedModel


class KnowledgeDocument(TimeStampedModel):
    path = models.CharField(_("相对路径"), max_length=300, unique=True)
    title = models.CharField(_("标题"), max_length=200, blank=True)
    sha256 = models.CharField(_("内容哈希"), max_length=64)
    text = models.TextField(_("全文"))
    mtime = models.FloatField(_("修改时间"), default=0)

    class Meta:
        verbose_name = _("知识库文档")
        verbose_name_plural = _("知识库文档")
        ordering = ["path"]

    def __str__(self) -> str:
        return self.path


class KnowledgeSection(models.Model):
    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="sections")
    heading = models.CharField(_("标题"), max_length=300)
    anchor = models.CharField(_("锚点"), max_length=300)
    level = models.PositiveSmallIntegerField(_("层级"))
    order = models.PositiveIntegerField(_("顺序"))
    text = models.TextField(_("内容"))
    sha256 = models.CharField(_("内容哈希"), max_length=64)

    class Meta:
        verbose_name = _("知识库片段")
        verbose_name_plural = _("知识库片段")
        ordering = ["document", "order"]
        constraints = [
            models.UniqueConstraint(fields=["document", "order"], name="uniq_section_order"),
        ]

    def __str__(self) -> str:
        return f"{self.document.path}#{self.heading}"
