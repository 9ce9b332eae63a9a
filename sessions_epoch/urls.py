"""Drafts, review, sending and epochs under /api/accounts/<account_id>/ (DESIGN §12)."""

from django.urls import path

from sessions_epoch import apis

urlpatterns = [
    path("conversations/<str:conversation_id>/drafts/", apis.DraftListApi.as_view(), name="draft-list"),
    path("conversations/<str:conversation_id>/epochs/", apis.EpochListApi.as_view(), name="epoch-list"),
    path("drafts/<int:draft_id>/", apis.DraftDetailApi.as_view(), name="draft-detail"),
    path("drafts/<int:draft_id>/approve/", apis.DraftApproveApi.as_view(), name="draft-approve"),
    path("drafts/<int:draft_id>/reject/", apis.DraftRejectApi.as_view(), name="draft-reject"),
    path("drafts/<int:draft_id>/send/", apis.DraftSendApi.as_view(), name="draft-send"),
]
