"""Conversations' routes under /api/accounts/<account_id>/ (DESIGN §12). The drafts list of a
conversation shares its path with draft generation, so sessions_epoch routes it."""

from django.urls import path

from conversations import apis

urlpatterns = [
    path("conversations/", apis.CustomerListApi.as_view(), name="customer-list"),
    path("conversations/<str:conversation_id>/", apis.CustomerDetailApi.as_view(), name="customer-detail"),
    path("drafts/<int:draft_id>/", apis.DraftDetailApi.as_view(), name="draft-detail"),
    path("drafts/<int:draft_id>/approve/", apis.DraftApproveApi.as_view(), name="draft-approve"),
    path("drafts/<int:draft_id>/reject/", apis.DraftRejectApi.as_view(), name="draft-reject"),
    path("drafts/<int:draft_id>/send/", apis.DraftSendApi.as_view(), name="draft-send"),
    path("drafts/<int:draft_id>/prompt/", apis.DraftPromptApi.as_view(), name="draft-prompt"),
    # business state
    path("conversations/<str:conversation_id>/tasks/", apis.TaskListApi.as_view(), name="task-list"),
    path("tasks/<int:task_id>/", apis.TaskDetailApi.as_view(), name="task-detail"),
    path("tasks/<int:task_id>/resolve/", apis.TaskResolveApi.as_view(), name="task-resolve"),
    path("conversations/<str:conversation_id>/alerts/", apis.AlertListApi.as_view(), name="alert-list"),
    path("alerts/<int:alert_id>/", apis.AlertDetailApi.as_view(), name="alert-detail"),
    path("alerts/<int:alert_id>/resolve/", apis.AlertResolveApi.as_view(), name="alert-resolve"),
    path(
        "conversations/<str:conversation_id>/recommendations/",
        apis.RecommendationListApi.as_view(),
        name="recommendation-list",
    ),
    path(
        "recommendations/<int:recommendation_id>/", apis.RecommendationDetailApi.as_view(), name="recommendation-detail"
    ),
    path(
        "recommendations/<int:recommendation_id>/resolve/",
        apis.RecommendationResolveApi.as_view(),
        name="recommendation-resolve",
    ),
    path(
        "recommendations/<int:recommendation_id>/feedback/",
        apis.RecommendationFeedbackApi.as_view(),
        name="recommendation-feedback",
    ),
    path("audit/", apis.AuditListApi.as_view(), name="audit-list"),
]
