"""The Workbench page (智能会话) routes: the page at the site root and its local read endpoints."""

from django.urls import path

from qiwei_site import workbench

urlpatterns = [
    path("", workbench.workbench_page, name="workbench"),
    path("workbench/api/accounts/", workbench.WorkbenchAccountListApi.as_view(), name="workbench-accounts"),
    path(
        "workbench/api/accounts/<str:account_id>/conversations/",
        workbench.WorkbenchConversationListApi.as_view(),
        name="workbench-conversations",
    ),
    path(
        "workbench/api/accounts/<str:account_id>/conversations/<str:conversation_id>/overview/",
        workbench.WorkbenchOverviewApi.as_view(),
        name="workbench-overview",
    ),
]
