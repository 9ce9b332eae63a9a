"""Admin labels in Chinese (issue 24, item 2) where a library ships English: the project's
zh_Hans catalogue is compiled and in force (every entry of the .po is what gettext answers), the
sign-in records app is 登录保护, permissions read as app | model | verb, and a draft's context
trace is a table of sections (conversations.admin.trace)."""

from __future__ import annotations

import re
from pathlib import Path

from axes.models import AccessLog
from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import Permission
from django.utils import translation

from conversations.admin.trace import draft_trace_table
from qiwei_site.platform.admin import permission_label
from tests.factories import DraftFactory, MessageFactory

CATALOGUES = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES"
ENTRY = re.compile(r'^msgid ((?:".*"\n)+)msgstr ((?:".*"\n)+)', re.MULTILINE)


def _unquote(block: str) -> str:
    return "".join(re.findall(r'"(.*)"', block)).replace('\\"', '"')


def test_locale_catalogue_is_compiled_and_in_force():
    # given every entry of the project's zh_Hans catalogue
    entries = [
        (_unquote(msgid), _unquote(msgstr))
        for msgid, msgstr in ENTRY.findall((CATALOGUES / "django.po").read_text(encoding="utf-8"))
        if _unquote(msgid)
    ]
    assert len(entries) > 30
    # then Chinese is what Django answers for each (the .mo is current)
    with translation.override("zh-hans"):
        stale = [
            (msgid, translation.gettext(msgid)) for msgid, msgstr in entries if translation.gettext(msgid) != msgstr
        ]
    assert stale == []
    assert (CATALOGUES / "djangojs.mo").stat().st_mtime >= (CATALOGUES / "djangojs.po").stat().st_mtime - 1


def test_sign_in_records_are_named_in_chinese():
    with translation.override("zh-hans"):
        assert apps.get_app_config("axes").verbose_name == "登录保护"
        assert str(AccessLog._meta.verbose_name) == "登录记录"
        assert str(AccessLog._meta.get_field("user_agent").verbose_name) == "浏览器标识"


def test_permission_label_reads_app_model_and_verb(db):
    # given Django's stored English names
    change = Permission.objects.get(codename="change_memoryitem")
    history = Permission.objects.get(codename="view_historicalmemoryitem")
    with translation.override("zh-hans"):
        assert change.name.startswith("Can change")
        # then the admin shows them in Chinese
        assert permission_label(change) == "客户记忆 | 记忆条目 | 可以修改"
        assert permission_label(history) == "客户记忆 | 记忆条目（历史记录） | 可以查看"


def test_draft_trace_table_reads_sections_budgets_trims_and_quotes(customer):
    # given an older draft whose trace names sections, budgets, a trimmed message and quotes
    latest = MessageFactory(customer=customer, text="周六能看房吗？我电话13812345678")
    trace = {
        "snapshot_version": 3,
        "prompt_chars": 5200,
        "sections": {"core_memory": 180, "recent_conversation": 900, "latest_message": 40},
        "budgets": {"core_memory": 4000, "recent_conversation": 8000},
        "trimmed": {"recent_conversation": [11, 12], "core_memory": []},
        "truncated_sections": ["recent_conversation"],
        "memory_item_ids": [7],
        "latest_message_id": latest.pk,
        "failures": [{"stage": "knowledge", "error": "OSError"}],
    }
    draft = DraftFactory(customer=customer, context_trace=trace)
    # when it is read as a table
    table = draft_trace_table(draft)
    rows = {row.title: row for row in table.rows}
    # then each section has its characters, budget, what was cut and what it quotes
    assert rows["客户核心记忆快照"].chars == 180 and rows["客户核心记忆快照"].budget == 4000
    assert rows["客户核心记忆快照"].links[0].label == "记忆条目 #7"
    assert rows["近期有效会话"].trimmed and rows["近期有效会话"].trimmed_note == "删去消息 #11、#12"
    quoted = rows["需要回复的最新客户消息"].links[0]
    assert (
        quoted.label == f"客户消息 #{latest.pk}" and "13812345678" not in quoted.text and "周六能看房吗" in quoted.text
    )
    assert table.snapshot_version == 3 and table.prompt_chars == 5200 and table.failures == ["读取知识库失败"]
