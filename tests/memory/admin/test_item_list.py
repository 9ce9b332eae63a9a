"""The memory item list: fixed column widths with the customer second, a masked evidence column,
a customer filter and a date hierarchy, in a fixed number of queries."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections
from django.utils import timezone

from memory.items import memory_item_put
from memory.models import MemoryType
from tests.factories import MessageFactory

CHANGELIST = "/admin/memory/memoryitem/"


def test_memory_list_columns_put_the_customer_second_and_fix_their_widths(admin_client, review_items):
    response = admin_client.get(CHANGELIST)
    body = response.content.decode()
    # then the customer column comes right after the content, and the table has a fixed layout
    assert list(response.context["cl"].list_display)[1:3] == ["short_content", "customer"]
    # (the widths live in the admin stylesheet; tests/browser/test_admin_readable.py measures them)
    assert "qiwei_admin/admin.css" in body
    css = (Path(settings.BASE_DIR) / "qiwei_site/platform/static/qiwei_admin/admin.css").read_text()
    assert ".model-memoryitem.change-list #result_list," in css
    for column in ("short_content", "customer", "evidence_text", "expires_display", "created_display"):
        assert f".model-memoryitem #result_list th.column-{column}" in css, column


def test_memory_list_evidence_column_is_masked_and_shortened(admin_client, customer, review_items):
    # given an item resting on a long message with a phone number
    long_message = MessageFactory(
        customer=customer,
        sender="王先生",
        text="我电话13812345678，" + "我们一家三口想找学区附近的两居室，最好是电梯房，小区安静一点，" * 3,
    )
    item = memory_item_put(
        customer=customer,
        type=MemoryType.PREFERENCE,
        key="preference:quiet",
        content="更喜欢安静的小区",
        source_message_ids=[long_message.pk],
        confidence=0.85,
        actor="capture",
        reason="客户原话",
    ).item
    # when the supervisor opens the list
    response = admin_client.get(CHANGELIST)
    model_admin = response.context["cl"].model_admin
    row = next(obj for obj in response.context["cl"].result_list if obj.pk == item.pk)
    shown = model_admin.evidence_text(row)
    # then the evidence is quoted, masked and cut to the column's length
    assert shown.startswith("「我电话138****5678，")
    assert shown.endswith("…") and len(shown) == 61
    # and times read as Beijing time to the minute
    assert model_admin.expires_display(row) == "无"
    local = timezone.localtime(row.created_at)
    assert model_admin.created_display(row) == f"{local:%Y-%m-%d %H:%M}"
    assert "13812345678" not in response.content.decode()


def test_memory_list_filters_by_customer(admin_client, review_items):
    # when the supervisor picks 李女士 in the customer filter
    response = admin_client.get(CHANGELIST, {"customer__id__exact": review_items.neighbour.customer_id})
    # then only her item is listed, and the filter offers the customers who have memory
    assert [obj.pk for obj in response.context["cl"].result_list] == [review_items.neighbour.pk]
    body = response.content.decode()
    assert "李女士" in body and "王先生" in body  # both are choices in the filter


def test_memory_list_has_a_date_hierarchy(admin_client, review_items):
    response = admin_client.get(CHANGELIST)
    assert response.context["cl"].date_hierarchy == "created_at"
    body = response.content.decode()
    assert '<nav class="toplinks">' in body and "created_at__year=" in body


@pytest.mark.parametrize("count", [3, 30])
def test_memory_list_query_count_does_not_grow_with_rows(
    admin_client, customer, messages, count, django_assert_max_num_queries
):
    for n in range(count):
        memory_item_put(
            customer=customer,
            type=MemoryType.PREFERENCE,
            key=f"preference:house{n}",
            content=f"喜欢第{n}种户型",
            source_message_ids=[messages[n % 2].pk],
            confidence=0.8,
            actor="capture",
            reason="客户原话",
        )
    with django_assert_max_num_queries(8, connection=connections["acct_acme"]):
        response = admin_client.get(CHANGELIST)
    assert response.context["cl"].result_count == count
