"""Forgetting reaches the prompts kept on drafts (issue 12, item 6): a forgotten memory item's words
are replaced by the redaction mark in every stored prompt of that customer — in the sections that
quote the customer, with the section offsets recomputed — and no byte of them is left in the
account database or under the data dir; erasing the customer takes the prompts with the drafts."""

from __future__ import annotations

import pytest

from conversations.models import Draft
from memory.context.builder import CORE_MEMORY, INSTRUCTIONS, OUTPUT_CONTRACT
from memory.governance.erasure import customer_erase
from memory.governance.scrub import FORGOTTEN_MARK, Quotes, prompt_redact
from memory.governance.services import memory_item_add, memory_item_forget
from sessions_epoch.clients import OfflineClient
from sessions_epoch.pipeline import draft_generate
from tests.memory.governance.test_audit_trail import dump_account_database
from tests.memory.governance.test_no_bytes_left import files_containing, windows

API = "/api/accounts/acme"
NOTE = "离婚后独自带孩子住，周末才方便看房"


@pytest.fixture
def remembered(customer, staff_user):
    """A supervisor's sensitive note, in memory, and two drafts whose prompts quote it."""
    note = memory_item_add(customer=customer, content=NOTE, actor=staff_user, reason="主管电话回访")
    first = draft_generate(customer=customer, actor=staff_user, client=OfflineClient())
    second = draft_generate(customer=customer, actor=staff_user, client=OfflineClient(), regenerate=True)
    return note, [first, second]


def test_forget_replaces_the_note_in_every_stored_prompt_and_keeps_the_sections_aligned(
    remembered, staff_user, agent_client
):
    note, drafts = remembered
    before = {d.pk: Draft.objects.get(pk=d.pk).prompt for d in drafts}
    assert all(NOTE in prompt for prompt in before.values())
    # when the note is forgotten
    memory_item_forget(item=note, actor=staff_user, reason="客户要求删除")
    for draft in drafts:
        stored = Draft.objects.get(pk=draft.pk)
        # then the prompt keeps no run of it, only the mark where it was
        assert not any(gram in stored.prompt for gram in windows(NOTE, 4))
        assert FORGOTTEN_MARK in stored.prompt
        # and its sections still cut the stored prompt, our own ones unchanged
        body = agent_client.get(f"{API}/drafts/{draft.pk}/prompt/").json()
        assert body["available"] is True and body["redacted"] is True
        texts = {s["key"]: body["prompt"][s["start"] : s["end"]] for s in body["sections"]}
        assert "\n\n".join(texts.values()) == body["prompt"]
        assert all(
            body["prompt"][s["start"] : s["end"]].startswith(f"===== {s['title']} =====") for s in body["sections"]
        )
        original = before[draft.pk]
        for key in (INSTRUCTIONS, OUTPUT_CONTRACT):
            assert texts[key] in original
        assert FORGOTTEN_MARK in texts[CORE_MEMORY]


def test_forget_leaves_no_byte_of_the_note_from_the_prompts(remembered, staff_user):
    note, _drafts = remembered
    memory_item_forget(item=note, actor=staff_user, reason="客户要求删除")
    needles = {NOTE, *windows(NOTE, 4)}
    # then neither the account database's values nor any file under the data dir hold it
    dump = dump_account_database()
    assert not [needle for needle in needles if needle in dump]
    assert files_containing(needles) == {}


def test_forget_of_another_item_leaves_prompts_untouched(customer, remembered, staff_user):
    _note, drafts = remembered
    budget = memory_item_add(customer=customer, content="预算每月4500左右", actor=staff_user, reason="电话确认")
    before = {d.pk: Draft.objects.get(pk=d.pk).prompt for d in drafts}
    memory_item_forget(item=budget, actor=staff_user, reason="录错了")
    # the budget came after both drafts: their prompts never quoted it
    assert {d.pk: Draft.objects.get(pk=d.pk).prompt for d in drafts} == before


def test_prompt_redact_scrubs_a_prompt_without_offsets_whole():
    # given a prompt kept without section offsets (a provider that gives no trace)
    prompt = f"## 客户最新消息\n> {NOTE}\n\n## 输出要求\n只输出 JSON。"
    scrubbed, trace = prompt_redact(prompt, {}, Quotes([NOTE]).scrub)
    assert NOTE not in scrubbed and FORGOTTEN_MARK in scrubbed and trace == {"prompt_redacted": True}
    # and one that quotes nothing is returned as it was
    assert prompt_redact("只输出 JSON。", {}, Quotes([NOTE]).scrub) == ("只输出 JSON。", {})


def test_erasing_the_customer_takes_the_prompts_with_the_drafts(customer, remembered, staff_user):
    customer_erase(customer=customer, actor=staff_user, reason="客户要求注销")
    assert not Draft.objects.exists()
    assert files_containing({NOTE}) == {}
