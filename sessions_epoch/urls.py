"""The turn's routes under /api/accounts/<account_id>/ (DESIGN §12)."""

from django.urls import path

from sessions_epoch import apis

urlpatterns = [
    path("conversations/<str:conversation_id>/drafts/", apis.DraftListGenerateApi.as_view(), name="draft-list"),
    path("conversations/<str:conversation_id>/epochs/", apis.EpochListApi.as_view(), name="epoch-list"),
]
