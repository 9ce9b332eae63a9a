"""Reads for customers."""

from __future__ import annotations

from conversations.models import Customer
from qiwei_site.platform.errors import NotFound


def customer_get(conversation_id: str) -> Customer:
    customer = Customer.objects.filter(conversation_id=conversation_id).first()
    if customer is None:
        raise NotFound(f"会话 {conversation_id} 不存在 (no such conversation).", code="conversation_not_found")
    return customer
