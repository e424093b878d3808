"""Cron schedules: expressions in a time zone, the missed-tick and overlap policies, the
trigger kind that runs them, and their management by name."""
