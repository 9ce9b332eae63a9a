"""Context and session-search routes (DESIGN §12)."""

from django.urls import path

from memory.providers import apis

urlpatterns = [
    path(
        "conversations/<str:conversation_id>/context/",
        apis.ConversationContextApi.as_view(),
        name="conversation-context",
    ),
    path("messages/", apis.AccountMessageSearchApi.as_view(), name="account-message-search"),
]
