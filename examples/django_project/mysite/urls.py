"""The example project's URLs."""

from __future__ import annotations

from django.urls import path

from mysite import views

urlpatterns = [
    path("signups", views.sign_up),
    path("signups/<str:email>", views.signup_state),
]
