"""The Workbench page (智能会话) routes."""

from django.urls import path  # noqa: F401

urlpatterns: list = []
