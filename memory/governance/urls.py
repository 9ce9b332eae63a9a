"""Governance API routes under /api/accounts/<account_id>/ (DESIGN §12)."""

from django.urls import path

from memory.governance import apis

conversation = "conversations/<str:conversation_id>/"
item = conversation + "memory/<str:item_id>/"

urlpatterns = [
    path(conversation + "memory/", apis.MemoryItemListApi.as_view(), name="memory-item-list"),
    path(item, apis.MemoryItemDetailApi.as_view(), name="memory-item-detail"),
    path(item + "confirm/", apis.MemoryItemConfirmApi.as_view(), name="memory-item-confirm"),
    path(item + "reject/", apis.MemoryItemRejectApi.as_view(), name="memory-item-reject"),
    path(item + "accept/", apis.MemoryProposalAcceptApi.as_view(), name="memory-proposal-accept"),
    path(item + "expire/", apis.MemoryItemExpireApi.as_view(), name="memory-item-expire"),
    path(item + "history/", apis.MemoryItemHistoryApi.as_view(), name="memory-item-history"),
    path(conversation + "snapshot/", apis.SnapshotApi.as_view(), name="memory-snapshot"),
    path(conversation + "snapshots/", apis.SnapshotListApi.as_view(), name="memory-snapshot-list"),
    path(conversation + "profile/", apis.ProfileApi.as_view(), name="customer-profile"),
    path(conversation + "erase/", apis.CustomerEraseApi.as_view(), name="customer-erase"),
    path(conversation + "messages/<str:message_id>/forget/", apis.MessageForgetApi.as_view(), name="message-forget"),
]
