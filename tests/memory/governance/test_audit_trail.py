"""Every governance write leaves history (user, reason) and an audit row; forget leaves no content anywhere."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re

from django.apps import apps
from django.db import connections
from django.utils import timezone

from conversations.models import AuditEvent, CustomerProfile, Draft
from memory.governance.erasure import customer_erase
from memory.governance.services import (
    memory_item_add,
    memory_item_confirm,
    memory_item_edit,
    memory_item_expire,
    memory_item_forget,
    memory_item_reject,
    memory_items_expire_due,
)
from memory.items import memory_item_put
from memory.models import CaptureJob, MemoryItem, MemoryType
from memory.profile import customer_profile_update
from qiwei_site.platform.tenancy import current_alias
from tests.factories import CustomerFactory, DraftFactory


def history_rows_by(reason: str) -> int:
    """History rows of any account model written with this change reason."""
    total = 0
    for model in apps.get_models():
        names = {f.name for f in model._meta.get_fields()}
        if "history_id" in names and model._meta.app_label in {"conversations", "memory", "sessions_epoch"}:
            total += model._default_manager.filter(history_change_reason=reason).count()
    return total


def test_every_governance_service_writes_history_and_audit(customer, messages, staff_user):
    # Given items in every state the services need
    def put(key, content, type=MemoryType.PREFERENCE):
        return memory_item_put(
            customer=customer, type=type, key=key, content=content, actor="capture", reason="客户原话"
        ).item

    temporary = memory_item_add(
        customer=customer,
        content="本周六上午方便看房",
        type=MemoryType.EVENT,
        expires_at=timezone.now() + dt.timedelta(hours=1),
        actor=staff_user,
        reason="约看房",
    )
    items = {name: put(f"preference:{name}", f"偏好{name}") for name in ("edit", "reject", "expire", "forget")}
    hypothesis = put("hypothesis:job", "可能在陆家嘴上班", type=MemoryType.HYPOTHESIS)
    calls = [
        (
            "memory_item_added",
            True,
            lambda r: memory_item_add(customer=customer, content="南北通透", actor=staff_user, reason=r),
        ),
        (
            "memory_item_edited",
            True,
            lambda r: memory_item_edit(item=items["edit"], content="改过", actor=staff_user, reason=r),
        ),
        ("memory_item_confirmed", True, lambda r: memory_item_confirm(item=hypothesis, actor=staff_user, reason=r)),
        ("memory_item_rejected", True, lambda r: memory_item_reject(item=items["reject"], actor=staff_user, reason=r)),
        ("memory_item_expired", True, lambda r: memory_item_expire(item=items["expire"], actor=staff_user, reason=r)),
        (
            "memory_item_expired",
            True,
            lambda r: memory_items_expire_due(now=timezone.now() + dt.timedelta(hours=2), actor="expiry", reason=r),
        ),
        (
            "customer_profile_updated",
            True,
            lambda r: customer_profile_update(customer=customer, changes={"city": "上海"}, actor=staff_user, reason=r),
        ),
        # These two delete the history of what they remove by design; the audit is what remains.
        (
            "memory_item_forgotten",
            False,
            lambda r: memory_item_forget(item=items["forget"], actor=staff_user, reason=r),
        ),
        ("customer_erased", False, lambda r: customer_erase(customer=customer, actor=staff_user, reason=r)),
    ]
    for index, (action, keeps_history, call) in enumerate(calls):
        reason = f"审计走查 {index} {action}"
        # When the service runs
        call(reason)
        # Then an audit row names the action, the actor and the reason
        audit = AuditEvent.objects.filter(action=action, reason=reason).first()
        assert audit is not None, f"{action} wrote no audit"
        assert audit.actor_name in {staff_user.username, "expiry"}, action
        # And history rows carry the same reason (and the user, when a person acted)
        if keeps_history:
            assert history_rows_by(reason) > 0, f"{action} wrote no history"
    assert not MemoryItem.objects.filter(pk=temporary.pk).exists()  # erased with the customer


def stands_alone(number: str, text: str) -> bool:
    """The number on its own in the dump, not inside a timestamp's microseconds ("…:32.883100")."""
    return re.search(rf"(?<![\d.]){number}(?!\d)", text) is not None


def dump_account_database() -> str:
    """Every value of every table in the selected account database, as one string."""
    connection = connections[current_alias()]
    parts: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                for value in row:
                    parts.append(str(value))
                    # JSON columns store non-ASCII text as \u escapes: read them as text too.
                    if isinstance(value, str) and value[:1] in '[{"':
                        with contextlib.suppress(ValueError):
                            parts.append(json.dumps(json.loads(value), ensure_ascii=False))
    return "\n".join(parts)


def test_memory_item_forget_leaves_content_nowhere_in_account_database(customer, messages, staff_user):
    # Given a sensitive fact that was added, quoted in a reason, edited, and shown in snapshots
    secret, edited = "客户离婚后独自带孩子", "客户离婚后独自带孩子，需要两居室"
    item = memory_item_add(customer=customer, content=secret, actor=staff_user, reason=f"电话得知：{secret}")
    memory_item_edit(item=item, content=edited, actor=staff_user, reason="补充户型")
    memory_item_add(customer=customer, content="预算4500", actor=staff_user, reason="电话")
    CustomerFactory(conversation_id="wm_other").memory_items.create(
        type=MemoryType.FACT, key="fact:other", content="另一个客户的记忆"
    )
    assert secret in dump_account_database()
    # When it is forgotten
    memory_item_forget(item=item, actor=staff_user, reason="客户要求遗忘")
    # Then neither value appears anywhere in the account database: items, history, snapshots, audit
    dump = dump_account_database()
    assert secret not in dump and "离婚" not in dump
    # And everything else survives
    assert "预算4500" in dump and "另一个客户的记忆" in dump
    assert AuditEvent.objects.filter(action="memory_item_forgotten", payload__item_id=item.pk).exists()


def test_forgetting_a_profile_item_clears_the_profile_value_everywhere(customer, staff_user):
    # Given a budget in the profile, its history, its stable item, a draft and a capture job
    customer_profile_update(customer=customer, changes={"budget": "47500元"}, actor=staff_user, reason="电话")
    item = MemoryItem.objects.get(key="profile:budget")
    DraftFactory(customer=customer, profile_updates={"budget": "47500元", "city": "上海"})
    CaptureJob.objects.create(customer=customer, payload={"profile_updates": {"budget": "47500元"}})
    assert stands_alone("47500", dump_account_database())
    # When the item is forgotten
    memory_item_forget(item=item, actor=staff_user, reason="客户不愿透露预算")
    # Then the value is gone from the profile and the whole database
    assert CustomerProfile.objects.get(customer=customer).budget == ""
    assert not stands_alone("47500", dump_account_database())
    assert Draft.objects.get(customer=customer).profile_updates["city"] == "上海"


def test_forgetting_a_profile_item_scrubs_the_bare_value_from_reasons_and_dropped_updates(customer, staff_user):
    # Given a supervisor who quoted the bare value in a reason, and a draft that dropped it as ungrounded
    customer_profile_update(
        customer=customer, changes={"budget": "83100元"}, actor=staff_user, reason="客户电话里说预算83100元"
    )
    item = MemoryItem.objects.get(key="profile:budget")
    DraftFactory(
        customer=customer, dropped_updates=[{"field": "budget", "value": "83100元", "reason": "客户原话中没有"}]
    )
    assert stands_alone("83100", dump_account_database())
    # When the item is forgotten
    memory_item_forget(item=item, actor=staff_user, reason="客户要求删除预算")
    # Then no trace of the value is left: not in audit reasons, profile history or dropped updates
    assert not stands_alone("83100", dump_account_database())
