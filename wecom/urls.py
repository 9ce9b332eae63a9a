"""WeCom's callback URL, one per account (issue 37)."""

from django.urls import path

from wecom import views

urlpatterns = [
    path("wecom/<str:account_id>/callback/", views.wecom_callback, name="wecom-callback"),
]
