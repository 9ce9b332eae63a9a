"""The review queue (待确认) in admin: hypotheses and low-confidence automatic items of the chosen
account, newest first, each with the customer's words (masked), decided in one click with a reason."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from conversations.models import AuditEvent
from memory.attention import review_queue
from memory.governance.services import memory_items_expire_due
from memory.items import memory_item_put
from memory.models import MemoryCreatedBy, MemoryItem, MemoryStatus, MemoryType
from memory.snapshots import snapshot_current
from qiwei_site.platform.middleware import SESSION_KEY
from qiwei_site.platform.services import membership_grant
from qiwei_site.platform.tenancy import use_account
from tests.factories import CustomerFactory, MessageFactory

QUEUE = "/admin/memory/memoryitem/review/"


def queue_ids(response) -> list[int]:
    return [row.item.pk for row in response.context["rows"]]


def decide(client, item, decision, reason, **extra):
    return client.post(QUEUE, {"item": item.pk, "decision": decision, "reason": reason, **extra}, follow=True)


def last_history(item):
    return MemoryItem.history.filter(id=item.pk).order_by("-history_date", "-history_id").first()


def test_review_queue_lists_hypotheses_and_low_confidence_automatic_items_newest_first(admin_client, review_items):
    # when the supervisor opens the queue for acme
    response = admin_client.get(QUEUE)
    # then only the waiting hypotheses and the hedged automatic item show, newest first
    assert response.status_code == 200
    assert queue_ids(response) == [review_items.neighbour.pk, review_items.hedged.pk, review_items.hypothesis.pk]
    assert response.context["total"] == 3
    body = response.content.decode()
    # and the sure constraint, the supervisor's fact and the lapsed hypothesis are not there
    for absent in ("不考虑顶楼", "客户是中学教师", "可能有车"):
        assert absent not in body, absent
    assert "共 <strong>3</strong> 条待处理" in body


def test_review_queue_quotes_the_evidence_masked(admin_client, review_items):
    # when the supervisor reads the hypothesis's row
    response = admin_client.get(QUEUE)
    row = next(row for row in response.context["rows"] if row.item.pk == review_items.hypothesis.pk)
    # then it quotes the customer's own message, with the phone number masked
    assert [quote.text for quote in row.evidence] == ["孩子明年上小学，最好离学校近一点，我电话138****5678"]
    assert row.evidence[0].speaker == "王先生" and row.evidence[0].inbound
    body = response.content.decode()
    assert "138****5678" in body and "13812345678" not in body


def test_review_queue_confirm_turns_a_hypothesis_into_a_fact_with_the_reason(admin_client, staff_user, review_items):
    # when the supervisor confirms the hypothesis in one click, saying why
    response = decide(admin_client, review_items.hypothesis, "confirm", "客户电话里确认孩子明年上小学")
    # then it is a fact written by them, out of the queue, in the next snapshot as a fact
    item = MemoryItem.objects.get(pk=review_items.hypothesis.pk)
    assert (item.type, item.confidence, item.created_by) == (MemoryType.FACT, 1.0, MemoryCreatedBy.HUMAN)
    history = last_history(item)
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "客户电话里确认孩子明年上小学")
    audit = AuditEvent.objects.get(action="memory_item_confirmed")
    assert (audit.actor_id, audit.reason) == (staff_user.pk, "客户电话里确认孩子明年上小学")
    assert item.pk not in queue_ids(response)
    assert "已确认为事实" in response.content.decode()
    # and it reads as a fact, without the guess's 「可能」
    facts = snapshot_current(item.customer).content.split("## 待确认")[0]
    assert item.content == "在为孩子上学找学区房" and "- 在为孩子上学找学区房" in facts


def test_review_queue_confirm_makes_a_lasting_fact_the_sweep_keeps(admin_client, review_items):
    # Given the model's hypothesis, due to lapse in a week
    assert review_items.hypothesis.expires_at is not None
    # When the supervisor confirms it in the queue
    decide(admin_client, review_items.hypothesis, "confirm", "客户电话里确认孩子明年上小学")
    # Then the fact has no expiry, and the sweep eight days later leaves it active
    item = MemoryItem.objects.get(pk=review_items.hypothesis.pk)
    assert item.expires_at is None
    memory_items_expire_due(now=timezone.now() + dt.timedelta(days=8))
    item.refresh_from_db()
    assert item.status == MemoryStatus.ACTIVE
    assert "在为孩子上学找学区房" in snapshot_current(item.customer).content.split("## 待确认")[0]


def test_review_queue_confirm_vouches_for_a_low_confidence_automatic_item(admin_client, staff_user, review_items):
    # when the supervisor confirms the hedged preference
    decide(admin_client, review_items.hedged, "confirm", "客户确认要地铁附近")
    # then it keeps its type, now at confidence 1 by a person, and leaves the queue
    item = MemoryItem.objects.get(pk=review_items.hedged.pk)
    assert (item.type, item.confidence, item.created_by) == (MemoryType.PREFERENCE, 1.0, MemoryCreatedBy.HUMAN)
    assert last_history(item).history_change_reason == "客户确认要地铁附近"
    assert item.pk not in review_queue().values_list("pk", flat=True)


def test_review_queue_reject_is_final_and_audited(admin_client, staff_user, review_items):
    # when the supervisor rejects the hypothesis
    decide(admin_client, review_items.hypothesis, "reject", "客户说孩子已经上初中了")
    # then it is rejected with the reason and the same inference from capture cannot come back
    item = MemoryItem.objects.get(pk=review_items.hypothesis.pk)
    assert item.status == MemoryStatus.REJECTED
    assert AuditEvent.objects.get(action="memory_item_rejected").reason == "客户说孩子已经上初中了"
    again = memory_item_put(
        customer=item.customer,
        type=MemoryType.HYPOTHESIS,
        key=item.key,
        content=item.content,
        source_message_ids=item.source_message_ids,
        confidence=0.5,
        actor="capture",
        reason="模型再次推断",
    )
    assert again.outcome == "refused"


def test_review_queue_edit_corrects_a_hypothesis_which_still_waits(admin_client, staff_user, review_items):
    # when the supervisor corrects the hypothesis's text
    decide(admin_client, review_items.hypothesis, "edit", "更准确的说法", content="孩子明年上小学，需要学区")
    # then the text changed with their reason, and it still waits to be confirmed
    item = MemoryItem.objects.get(pk=review_items.hypothesis.pk)
    assert (item.content, item.type, item.status) == ("孩子明年上小学，需要学区", MemoryType.HYPOTHESIS, "active")
    assert last_history(item).history_change_reason == "更准确的说法"
    assert item.pk in review_queue().values_list("pk", flat=True)


def test_review_queue_edit_of_a_low_confidence_item_confirms_the_new_text(admin_client, review_items):
    # when the supervisor rewrites the hedged preference
    decide(admin_client, review_items.hedged, "edit", "客户电话里说清楚了", content="更喜欢2号线地铁附近")
    # then it is the supervisor's item now, out of the queue
    item = MemoryItem.objects.get(pk=review_items.hedged.pk)
    assert (item.content, item.confidence, item.created_by) == ("更喜欢2号线地铁附近", 1.0, MemoryCreatedBy.HUMAN)
    assert item.pk not in review_queue().values_list("pk", flat=True)


@pytest.mark.parametrize("decision", ["confirm", "reject", "edit"])
def test_review_queue_without_a_reason_is_refused_and_keeps_what_was_typed(admin_client, review_items, decision):
    # given the supervisor typed a new text but no reason
    audit_rows = AuditEvent.objects.count()
    # when they click
    response = admin_client.post(
        QUEUE, {"item": review_items.hypothesis.pk, "decision": decision, "reason": "  ", "content": "孩子要上小学"}
    )
    # then nothing changed, the row says why, and their text is still in the box
    assert response.status_code == 200
    item = MemoryItem.objects.get(pk=review_items.hypothesis.pk)
    assert (item.type, item.status, item.content) == (MemoryType.HYPOTHESIS, "active", "可能在为孩子上学找学区房")
    assert AuditEvent.objects.count() == audit_rows
    row = next(row for row in response.context["rows"] if row.item.pk == item.pk)
    assert row.errors and "请填写原因" in row.errors[0]
    assert row.content == "孩子要上小学"
    assert "孩子要上小学</textarea>" in response.content.decode()


def test_review_queue_edit_without_text_is_refused(admin_client, review_items):
    response = admin_client.post(
        QUEUE, {"item": review_items.hedged.pk, "decision": "edit", "reason": "改一下", "content": ""}
    )
    assert response.status_code == 200
    assert MemoryItem.objects.get(pk=review_items.hedged.pk).content == "可能更喜欢地铁附近"


def test_review_queue_refuses_an_item_no_longer_waiting(admin_client, review_items):
    # when a stale page posts a decision on the supervisor's own fact (never in the queue)
    response = decide(admin_client, review_items.human, "reject", "误点")
    # then nothing happens and the supervisor is told
    assert MemoryItem.objects.get(pk=review_items.human.pk).status == MemoryStatus.ACTIVE
    assert "不在待确认队列" in response.content.decode()


def test_review_queue_filters_by_customer(admin_client, review_items):
    response = admin_client.get(QUEUE, {"customer": review_items.neighbour.customer_id})
    assert queue_ids(response) == [review_items.neighbour.pk]
    assert "李女士" in response.content.decode()


def test_review_queue_never_shows_another_accounts_items(review_items, staff_user, other_account):
    # given a hypothesis in globex, where the supervisor is also a member
    membership_grant(user=staff_user, account=other_account)
    with use_account(other_account.id):
        zhao = CustomerFactory(conversation_id="wm_zhao_003", display_name="赵女士")
        message = MessageFactory(customer=zhao, sender="赵女士", text="想在静安找个三居室，老人要一起住")
        foreign = memory_item_put(
            customer=zhao,
            type=MemoryType.HYPOTHESIS,
            key="hypothesis:elderly",
            content="可能和父母同住",
            source_message_ids=[message.pk],
            confidence=0.5,
            actor="capture",
            reason="模型推断",
        ).item
    client = Client()
    client.force_login(staff_user)
    session = client.session
    session[SESSION_KEY] = "acme"
    session.save()
    # when they open the queue with acme chosen
    body = client.get(QUEUE).content.decode()
    # then globex's hypothesis is not there, and a decision on its id does nothing
    assert "可能和父母同住" not in body and "赵女士" not in body
    client.post(QUEUE, {"item": foreign.pk, "decision": "reject", "reason": "越权"})
    with use_account(other_account.id):
        assert MemoryItem.objects.get(pk=foreign.pk).status == MemoryStatus.ACTIVE
    # and with globex chosen, only globex's shows
    session = client.session
    session[SESSION_KEY] = other_account.id
    session.save()
    body = client.get(QUEUE).content.decode()
    assert "可能和父母同住" in body and "可能在为孩子上学找学区房" not in body


def test_review_queue_is_forbidden_until_an_account_is_chosen(staff_user, review_items):
    client = Client()
    client.force_login(staff_user)
    assert client.get(QUEUE).status_code == 403


def test_review_queue_is_read_only_without_change_permission(review_items, account):
    # given a staff member who may only view memory items
    from django.contrib.auth.models import Permission

    from tests.factories import UserFactory

    viewer = UserFactory(username="viewer_zhou", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_memoryitem"))
    membership_grant(user=viewer, account=account)
    client = Client()
    client.force_login(viewer)
    session = client.session
    session[SESSION_KEY] = account.id
    session.save()
    # when they open the queue and try to reject
    page = client.get(QUEUE)
    refused = client.post(QUEUE, {"item": review_items.hypothesis.pk, "decision": "reject", "reason": "试试"})
    # then they see the queue without buttons, and the post is forbidden
    assert page.status_code == 200 and 'name="decision"' not in page.content.decode()
    assert refused.status_code == 403
    assert MemoryItem.objects.get(pk=review_items.hypothesis.pk).status == MemoryStatus.ACTIVE


@pytest.mark.parametrize("extra", [2, 20])
def test_review_queue_query_count_does_not_grow_with_items(
    admin_client, customer, messages, extra, django_assert_max_num_queries
):
    # given many hypotheses, each citing the customer's words
    for n in range(extra):
        memory_item_put(
            customer=customer,
            type=MemoryType.HYPOTHESIS,
            key=f"hypothesis:visit{n}",
            content=f"可能想在第{n}周看房",
            source_message_ids=[messages[n % 2].pk],
            confidence=0.5,
            actor="capture",
            reason="模型推断",
        )
    # when the queue is opened, then the account database sees a fixed number of queries
    with django_assert_max_num_queries(4, connection=connections["acct_acme"]):
        response = admin_client.get(QUEUE)
    assert response.context["total"] == extra


def test_review_queue_is_linked_from_the_memory_list(admin_client, review_items):
    body = admin_client.get(reverse("admin:memory_memoryitem_changelist")).content.decode()
    assert f'href="{QUEUE}"' in body and "待确认队列" in body


def test_review_queue_threshold_is_a_setting(admin_client, review_items, settings):
    # given a stricter account-wide threshold
    settings.QIWEI_REVIEW_CONFIDENCE_BELOW = 0.95
    # when the queue is opened, then the 0.9 automatic constraint waits too, and the page says why
    response = admin_client.get(QUEUE)
    assert review_items.sure.pk in queue_ids(response)
    assert review_items.human.pk not in queue_ids(response)  # a person's item is never re-reviewed
    assert "置信度低于 0.95" in response.content.decode()


@pytest.mark.parametrize("value", ["99999999999999999999", "abc", "-3", "0", "１２"])
def test_review_queue_invalid_customer_filter_is_400(admin_client, review_items, value):
    # when the queue is asked for a customer id that cannot be one
    response = admin_client.get(QUEUE, {"customer": value})
    # then it answers 400 with a reason, never a 500 (and never silently the whole queue)
    assert response.status_code == 400
    assert "客户 ID 无效" in response.content.decode()


def test_review_queue_post_of_an_out_of_range_item_id_is_a_warning(admin_client, review_items):
    # when a decision names an item id larger than any database key
    response = admin_client.post(
        QUEUE, {"item": "99999999999999999999", "decision": "confirm", "reason": "测试"}, follow=True
    )
    # then nothing is decided and the supervisor is told, with the queue shown
    assert response.status_code == 200
    assert "该条目已处理或不在待确认队列中" in response.content.decode()
