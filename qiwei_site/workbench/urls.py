"""Workbench (智能会话) routes: sign-in and sign-out, the page at the site root, its local read endpoints
and the version it polls (account-wide, or with one open conversation)."""

from django.urls import path

from qiwei_site.workbench import apis, views
from qiwei_site.workbench.auth_views import WorkbenchLoginView, WorkbenchLogoutView

urlpatterns = [
    # Agents sign in at /login/ (settings.LOGIN_URL), not at /admin/login/, which only lets staff in.
    path("", views.workbench_page, name="workbench"),
    path("login/", WorkbenchLoginView.as_view(), name="workbench-login"),
    path("logout/", WorkbenchLogoutView.as_view(), name="workbench-logout"),
    path("workbench/api/accounts/", apis.WorkbenchAccountListApi.as_view(), name="workbench-accounts"),
    path(
        "workbench/api/accounts/<str:account_id>/conversations/",
        apis.WorkbenchConversationListApi.as_view(),
        name="workbench-conversations",
    ),
    path(
        "workbench/api/accounts/<str:account_id>/conversations/<str:conversation_id>/overview/",
        apis.WorkbenchOverviewApi.as_view(),
        name="workbench-overview",
    ),
    path(
        "workbench/api/accounts/<str:account_id>/conversations/<str:conversation_id>/drafts/",
        apis.WorkbenchDraftGenerateApi.as_view(),
        name="workbench-draft-generate",
    ),
    path(
        "workbench/api/accounts/<str:account_id>/version/",
        apis.WorkbenchVersionApi.as_view(),
        name="workbench-version",
    ),
    path(
        "workbench/api/accounts/<str:account_id>/conversations/<str:conversation_id>/version/",
        apis.WorkbenchVersionApi.as_view(),
        name="workbench-conversation-version",
    ),
]
