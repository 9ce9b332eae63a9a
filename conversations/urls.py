from django.urls import path

from conversations import apis

urlpatterns = [
    path("conversations/", apis.CustomerListApi.as_view(), name="customer-list"),
    path("conversations/<str:conversation_id>/", apis.CustomerDetailApi.as_view(), name="customer-detail"),
]
