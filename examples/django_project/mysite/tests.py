"""The views through Django's test client: ``python manage.py test mysite``."""

from __future__ import annotations

from django.test import SimpleTestCase

from duetime.contrib.django import sync_client


class SignUpTests(SimpleTestCase):
    def test_signing_up_schedules_the_welcome_mail(self) -> None:
        reply = self.client.post("/signups", {"email": "ana@example.com", "delay": "3600"})
        self.assertEqual(reply.status_code, 202)
        self.assertEqual(reply.json()["task"], "ana@example.com")
        info = sync_client().get("welcome", "ana@example.com")
        assert info is not None
        self.assertEqual(info.state, "due")
        self.assertEqual(info.payload, {"email": "ana@example.com"})
        state = self.client.get("/signups/ana@example.com").json()
        self.assertEqual(state, {"task": "ana@example.com", "state": "due"})

    def test_a_mail_not_in_the_store_was_sent(self) -> None:
        state = self.client.get("/signups/nobody@example.com").json()
        self.assertEqual(state["state"], "sent")

    def test_only_post_schedules(self) -> None:
        self.assertEqual(self.client.get("/signups").status_code, 405)
