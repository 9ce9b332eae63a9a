"""Memory API paths, split by sub-domain so each module owns its own routes."""

from django.urls import include, path

urlpatterns = [
    path("", include("memory.urls_capture")),
    path("", include("memory.urls_governance")),
    path("", include("memory.urls_context")),
]
