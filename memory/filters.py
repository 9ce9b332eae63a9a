"""FilterSets for memory items (used by selectors, the API and admin)."""

from __future__ import annotations

import django_filters

from memory.models import MemoryCreatedBy, MemoryDirection, MemoryItem, MemoryStatus, MemoryType


class MemoryItemFilter(django_filters.FilterSet):
    type = django_filters.ChoiceFilter(choices=MemoryType.choices)
    status = django_filters.ChoiceFilter(choices=MemoryStatus.choices)
    created_by = django_filters.ChoiceFilter(choices=MemoryCreatedBy.choices)
    direction = django_filters.ChoiceFilter(choices=MemoryDirection.choices)

    class Meta:
        model = MemoryItem
        fields = ["type", "status", "created_by", "direction"]
