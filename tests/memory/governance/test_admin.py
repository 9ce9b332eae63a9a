"""Admin curation with Django's test client: every page and action goes through the services."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from conversations.models import AuditEvent, CustomerProfile
from memory.governance.services import memory_item_add, memory_item_edit
from memory.models import MemoryCreatedBy, MemoryItem, MemorySnapshot, MemoryStatus, MemoryType

CHANGELIST = "/admin/memory/memoryitem/"


def last_history(item):
    return MemoryItem.history.filter(id=item.pk).order_by("-history_date", "-history_id").first()


def run_action(client, action, items, reason="", **extra):
    data = {"action": action, "_selected_action": [i.pk for i in items], "reason": reason, **extra}
    return client.post(CHANGELIST, data, follow=True)


def test_memory_changelist_lists_items_with_filters(admin_client, preference, hypothesis):
    # When a supervisor opens the list filtered to hypotheses
    response = admin_client.get(CHANGELIST, {"type__exact": "hypothesis"})
    # Then the hypothesis shows, with its evidence count, and the preference does not
    assert response.status_code == 200
    assert [item.pk for item in response.context["cl"].result_list] == [hypothesis.pk]
    body = response.content.decode()
    assert "可能在陆家嘴上班" in body
    assert "证据原文（已遮蔽）" in body and "确认所选推断为事实" in body
    assert "delete_selected" not in body
    assert "地铁" in admin_client.get(CHANGELIST, {"q": "地铁"}).content.decode()


def test_memory_admin_hidden_until_an_account_is_chosen(staff_user, preference):
    client = Client()
    client.force_login(staff_user)
    assert client.get(CHANGELIST).status_code == 403


def test_memory_change_page_quotes_source_messages(admin_client, preference, messages):
    response = admin_client.get(f"{CHANGELIST}{preference.pk}/change/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "我更喜欢地铁附近的，上班方便" in body and "来源消息" in body and "客户" in body


def test_memory_admin_confirm_action(admin_client, staff_user, hypothesis, preference):
    # When a supervisor confirms the hypothesis (and, by mistake, a preference) on the page that asks
    # for the wording (issue 39), left as offered
    response = run_action(admin_client, "confirm_selected", [hypothesis, preference], reason="客户电话确认", post="yes")
    # Then the hypothesis is a fact with history by the supervisor, and the preference error is shown
    hypothesis.refresh_from_db()
    assert (hypothesis.type, hypothesis.confidence) == (MemoryType.FACT, 1.0)
    history = last_history(hypothesis)
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "客户电话确认")
    body = response.content.decode()
    assert "已确认 1 条记忆" in body and "只有「推断（待确认）」可以确认" in body
    assert AuditEvent.objects.get(action="memory_item_confirmed").actor_id == staff_user.pk


def test_memory_admin_reject_and_expire_actions(admin_client, staff_user, hypothesis, preference):
    run_action(admin_client, "reject_selected", [hypothesis], reason="推断错误")
    run_action(admin_client, "expire_selected", [preference], reason="客户已租到房")
    hypothesis.refresh_from_db()
    preference.refresh_from_db()
    assert (hypothesis.status, preference.status) == (MemoryStatus.REJECTED, MemoryStatus.SUPERSEDED)
    assert last_history(hypothesis).history_change_reason == "推断错误"
    assert last_history(preference).history_change_reason == "客户已租到房"
    assert AuditEvent.objects.filter(action__in=["memory_item_rejected", "memory_item_expired"]).count() == 2


def test_memory_admin_forget_action_asks_for_confirmation(admin_client, staff_user, preference):
    # When the supervisor chooses "forget"
    response = run_action(admin_client, "forget_selected", [preference], reason="客户要求")
    # Then a confirmation page lists the item and nothing is deleted yet
    assert response.status_code == 200 and "确认遗忘" in response.content.decode()
    assert MemoryItem.objects.filter(pk=preference.pk).exists()
    # When they confirm without a reason, nothing happens either
    run_action(admin_client, "forget_selected", [preference], reason="", post="yes")
    assert MemoryItem.objects.filter(pk=preference.pk).exists()
    # When they confirm with a reason
    response = run_action(admin_client, "forget_selected", [preference], reason="客户要求删除该偏好", post="yes")
    # Then the item and its history are gone, and the audit names the supervisor
    assert "已遗忘 1 条记忆" in response.content.decode()
    assert not MemoryItem.objects.filter(pk=preference.pk).exists()
    assert not MemoryItem.history.filter(id=preference.pk).exists()
    audit = AuditEvent.objects.get(action="memory_item_forgotten")
    assert (audit.actor_id, audit.reason) == (staff_user.pk, "客户要求删除该偏好")


def test_memory_admin_delete_view_forgets(admin_client, staff_user, preference):
    url = f"{CHANGELIST}{preference.pk}/delete/"
    assert "遗忘" in admin_client.get(url).content.decode()
    admin_client.post(url, {"post": "yes", "reason": "录入错误"})
    assert not MemoryItem.objects.filter(pk=preference.pk).exists()
    assert AuditEvent.objects.get(action="memory_item_forgotten").reason == "录入错误"
    assert all("地铁" not in s.content for s in MemorySnapshot.objects.all())


def test_memory_admin_add_form_uses_service(admin_client, staff_user, customer):
    # When a supervisor adds a fact through the form
    response = admin_client.post(
        f"{CHANGELIST}add/",
        {
            "customer": customer.pk,
            "type": "fact",
            "content": "女儿明年上小学，需要学区房",
            "importance": 5,
            "expires_at_0": "",
            "expires_at_1": "",
            "reason": "电话沟通得知",
        },
    )
    # Then it is a human-confirmed fact with history by the supervisor, audited and in the snapshot
    assert response.status_code == 302, response.content.decode()[:2000]
    item = MemoryItem.objects.get(content="女儿明年上小学，需要学区房")
    assert (item.created_by, item.confidence) == (MemoryCreatedBy.HUMAN, 1.0)
    history = last_history(item)
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "电话沟通得知")
    assert AuditEvent.objects.get(action="memory_item_added").actor_id == staff_user.pk
    assert "学区房" in MemorySnapshot.objects.order_by("-version").first().content


def test_memory_admin_add_form_requires_reason(admin_client, customer):
    response = admin_client.post(
        f"{CHANGELIST}add/",
        {"customer": customer.pk, "type": "fact", "content": "预算4500", "importance": 5},
    )
    assert response.status_code == 200 and not MemoryItem.objects.exists()


def test_memory_admin_edit_form_uses_service(admin_client, staff_user, preference):
    response = admin_client.post(
        f"{CHANGELIST}{preference.pk}/change/",
        {
            "type": "preference",
            "content": "更喜欢2号线地铁附近",
            "importance": 4,
            "confidence": 0.8,
            "expires_at_0": "",
            "expires_at_1": "",
            "reason": "客户补充线路",
        },
    )
    assert response.status_code == 302
    preference.refresh_from_db()
    assert (preference.content, preference.created_by) == ("更喜欢2号线地铁附近", MemoryCreatedBy.HUMAN)
    history = last_history(preference)
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "客户补充线路")
    assert AuditEvent.objects.get(action="memory_item_edited").payload["fields"] == ["content", "importance"]


def test_memory_admin_edit_domain_error_is_shown(admin_client, preference):
    # When the supervisor tries to turn a preference into a hypothesis
    response = admin_client.post(
        f"{CHANGELIST}{preference.pk}/change/",
        {"type": "hypothesis", "content": "更喜欢地铁附近", "importance": 3, "confidence": 0.8, "reason": "试试"},
        follow=True,
    )
    # Then the error is shown and nothing changed
    assert "人工编辑不能把记忆改成推断" in response.content.decode()
    preference.refresh_from_db()
    assert preference.type == MemoryType.PREFERENCE


def test_memory_admin_history_page_shows_reason(admin_client, staff_user, preference):
    memory_item_edit(item=preference, content="更喜欢2号线", actor=staff_user, reason="客户补充线路")
    response = admin_client.get(f"{CHANGELIST}{preference.pk}/history/")
    assert response.status_code == 200 and "客户补充线路" in response.content.decode()


def test_snapshot_diff_page_renders(admin_client, staff_user, customer, preference):
    # Given two snapshot versions
    memory_item_add(customer=customer, content="预算4500", actor=staff_user, reason="电话")
    latest = MemorySnapshot.objects.get(customer=customer, version=2)
    # When the supervisor opens the diff
    response = admin_client.get(reverse("admin:memory_memorysnapshot_diff", args=[latest.pk]))
    # Then the added item is marked, by its text
    body = response.content.decode()
    assert response.status_code == 200
    assert response.context["diff"].changes[0].label == "新增" and "预算4500" in body and "v1" in body
    assert admin_client.get("/admin/memory/memorysnapshot/").status_code == 200


def test_audit_admin_is_filterable(admin_client, staff_user, preference):
    # Given the audit of a captured item beside other actions
    # When the supervisor filters the audit by that action
    response = admin_client.get("/admin/conversations/auditevent/", {"action": "memory_item_captured"})
    # Then only rows of that action are listed, and there is one
    rows = list(response.context["cl"].result_list)
    assert response.status_code == 200
    assert rows and {row.action for row in rows} == {"memory_item_captured"}
    # And an action nobody took lists nothing
    none = admin_client.get("/admin/conversations/auditevent/", {"action": "memory_item_forgotten"})
    assert none.status_code == 200 and list(none.context["cl"].result_list) == []


def inline_post_data(response) -> dict:
    """The inline formsets of a change page as POST data (management forms and initial forms)."""
    data: dict = {}
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        for name in formset.management_form.fields:
            data[f"{formset.prefix}-{name}"] = formset.management_form[name].value()
        for form in formset.initial_forms:
            for name in form.fields:
                value = form[name].value()
                if value not in (None, False):
                    data[form.add_prefix(name)] = getattr(value, "pk", value)
    return data


def test_customer_admin_profile_inline_saves_through_service(admin_client, staff_user, customer):
    # Given the customer's change page
    url = f"/admin/conversations/customer/{customer.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    data = inline_post_data(page)
    # When the supervisor sets the budget in the profile inline
    data |= {"display_name": "王先生", "session_mode": "assisted", "reason": "电话确认预算", "profile-0-budget": "4500"}
    response = admin_client.post(url, data)
    # Then the profile and its stable memory item are updated with the supervisor as author
    assert response.status_code == 302, response.context and response.context["errors"]
    profile = CustomerProfile.objects.get(customer=customer)
    assert profile.budget == "4500"
    history = profile.history.first()
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "电话确认预算")
    item = MemoryItem.objects.get(key="profile:budget")
    assert (item.content, item.created_by) == ("预算：4500", MemoryCreatedBy.HUMAN)
    assert AuditEvent.objects.get(action="customer_profile_updated").actor_id == staff_user.pk


def test_customer_admin_history_page_renders(admin_client, staff_user, customer):
    # The user table lives in `default`: the history page must not join it in the account database
    from memory.profile import customer_profile_update

    customer_profile_update(customer=customer, changes={"city": "上海"}, actor=staff_user, reason="电话")
    response = admin_client.get(f"/admin/conversations/customer/{customer.pk}/history/")
    assert response.status_code == 200
    assert admin_client.get("/admin/conversations/customer/add/").status_code == 403


def test_audit_admin_filters_by_actor_and_shows_detail(admin_client, staff_user, preference):
    # Given a capture by the system and a rejection by the supervisor
    from memory.governance.services import memory_item_reject

    memory_item_reject(item=preference, actor=staff_user, reason="客户否认")
    # When the supervisor filters the audit by their own name
    response = admin_client.get("/admin/conversations/auditevent/", {"actor_name": staff_user.username})
    # Then only their rejection shows, with its item as a link
    assert [e.action for e in response.context["cl"].result_list] == ["memory_item_rejected"]
    assert f'记忆条目：<a href="/admin/memory/memoryitem/{preference.pk}/change/">#{preference.pk}</a>' in (
        response.content.decode()
    )
    event = AuditEvent.objects.get(action="memory_item_rejected")
    assert admin_client.get(f"/admin/conversations/auditevent/{event.pk}/change/").status_code == 200


def test_memory_admin_forget_leaves_the_content_in_no_message(admin_client, staff_user, preference):
    # given a supervisor forgetting an item through the delete page
    url = f"{CHANGELIST}{preference.pk}/delete/"
    # when the deletion redirects to the list with Django's success message
    response = admin_client.post(url, {"post": "yes", "reason": "客户要求删除"}, follow=True)
    # then neither the message shown nor the page holds the forgotten words
    shown = " ".join(str(m) for m in response.context["messages"])
    assert "地铁" not in shown and "地铁" not in response.content.decode()
