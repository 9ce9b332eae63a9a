"""Model routes outside any account: whether a model is connected (`GET /api/model-status`)."""

from django.urls import path

from sessions_epoch import apis

urlpatterns = [
    path("model-status", apis.ModelStatusApi.as_view(), name="model-status"),
    path("model-status/", apis.ModelStatusApi.as_view()),
]
