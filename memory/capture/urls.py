"""Message ingest routes under /api/accounts/<account_id>/ (DESIGN §12)."""

from django.urls import path

from memory.capture import apis

urlpatterns = [
    path(
        "conversations/<str:conversation_id>/messages/",
        apis.MessageListApi.as_view(),
        name="conversation-messages",
    ),
]
