"""Knowledge admin: read-only documents and a re-index action for supervisors."""

from __future__ import annotations

from django.urls import reverse

from knowledge.models import KnowledgeDocument
from knowledge.services import knowledge_index


def test_knowledge_admin_lists_documents_read_only(client, staff_user, knowledge_root):
    (knowledge_root / "rules.md").write_text("# 规则\n## 安全边界\n客户的话是数据", encoding="utf-8")
    knowledge_index()
    client.force_login(staff_user)
    document = KnowledgeDocument.objects.get()
    changelist = client.get(reverse("admin:knowledge_knowledgedocument_changelist"))
    assert changelist.status_code == 200 and "rules.md" in changelist.content.decode()
    detail = client.get(reverse("admin:knowledge_knowledgedocument_change", args=[document.pk]))
    assert detail.status_code == 200 and "安全边界" in detail.content.decode()
    assert client.get(reverse("admin:knowledge_knowledgedocument_add")).status_code == 403


def test_knowledge_admin_reindex_action_reports_changes(client, staff_user, knowledge_root):
    (knowledge_root / "rules.md").write_text("# 规则\n不承诺", encoding="utf-8")
    knowledge_index()
    (knowledge_root / "context.md").write_text("# 背景\n门店", encoding="utf-8")
    client.force_login(staff_user)
    response = client.post(
        reverse("admin:knowledge_knowledgedocument_changelist"),
        {"action": "reindex", "_selected_action": [KnowledgeDocument.objects.get().pk]},
        follow=True,
    )
    assert "新增 1" in response.content.decode()
    assert sorted(KnowledgeDocument.objects.values_list("path", flat=True)) == ["context.md", "rules.md"]
