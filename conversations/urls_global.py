"""API paths outside any account (the upstream status)."""

from django.urls import path

from conversations import apis_status

urlpatterns = [
    path("status", apis_status.UpstreamStatusApi.as_view(), name="upstream-status"),
    path("status/", apis_status.UpstreamStatusApi.as_view()),
]
