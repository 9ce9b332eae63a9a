"""API paths outside any account (the upstream status)."""

from django.urls import path  # noqa: F401

urlpatterns: list = []
