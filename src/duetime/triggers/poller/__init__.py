"""Pollers: Planton's polling schedulers, called by one worker at a time, whose
instructions become tasks that duetime runs; the trigger kind of their calls, their events
and their registry."""
