"""Context and session-search routes (DESIGN §12)."""

from django.urls import path

from memory import apis_context

urlpatterns = [
    path(
        "conversations/<str:conversation_id>/context/",
        apis_context.ConversationContextApi.as_view(),
        name="conversation-context",
    ),
    path("messages/", apis_context.AccountMessageSearchApi.as_view(), name="account-message-search"),
]
