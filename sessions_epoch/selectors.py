"""Reads for session epochs."""

from __future__ import annotations

from django.db.models import QuerySet

from conversations.models import Customer
from sessions_epoch.models import SessionEpoch


def epoch_list(*, customer: Customer) -> QuerySet[SessionEpoch]:
    return SessionEpoch.objects.filter(customer=customer).order_by("-started_at", "-id")
