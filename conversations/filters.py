"""FilterSets for the audit trail (used by its selector, the API and admin)."""

from __future__ import annotations

import django_filters

from conversations.models import AuditEvent


class AuditEventFilter(django_filters.FilterSet):
    conversation_id = django_filters.CharFilter()
    action = django_filters.CharFilter()
    since = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = AuditEvent
        fields = ["conversation_id", "action", "since", "until"]
