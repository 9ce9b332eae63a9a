"""FilterSets for memory items and the audit trail (used by selectors, the API and admin)."""

from __future__ import annotations

import django_filters

from conversations.models import AuditEvent
from memory.models import MemoryCreatedBy, MemoryDirection, MemoryItem, MemoryStatus, MemoryType


class MemoryItemFilter(django_filters.FilterSet):
    type = django_filters.ChoiceFilter(choices=MemoryType.choices)
    status = django_filters.ChoiceFilter(choices=MemoryStatus.choices)
    created_by = django_filters.ChoiceFilter(choices=MemoryCreatedBy.choices)
    direction = django_filters.ChoiceFilter(choices=MemoryDirection.choices)

    class Meta:
        model = MemoryItem
        fields = ["type", "status", "created_by", "direction"]


class AuditEventFilter(django_filters.FilterSet):
    conversation_id = django_filters.CharFilter()
    action = django_filters.CharFilter()
    since = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = AuditEvent
        fields = ["conversation_id", "action", "since", "until"]
