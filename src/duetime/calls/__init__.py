"""The Client's calls on tasks, each module a part of :class:`~duetime.client.Client`:
producing tasks (``producing``, checked at the door by ``newtask``, on conditions through
``conditions``), reading them as listings show them (``listing``), their coming runs
(``upcoming``) and aborting a running one (``aborts``)."""
