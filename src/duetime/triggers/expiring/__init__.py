"""Expiring entries: values under keys that go to their group's handler when their TTL runs
out; the trigger kind that hands each expiry off, and the group users put entries in."""
