"""Root URLs. Account-scoped API paths live under /api/accounts/<account_id>/ (DESIGN §12)."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from qiwei_site import health

account_api = [
    path("", include("conversations.urls")),
    path("", include("memory.urls")),
    path("", include("sessions_epoch.urls")),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("conversations.urls_global")),
    path("api/", include("sessions_epoch.urls_global")),
    path("api/accounts/<str:account_id>/", include(account_api)),
    path("", include("wecom.urls")),
    path("", include("qiwei_site.workbench.urls")),
]
