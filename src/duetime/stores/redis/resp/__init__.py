"""duetime's own Redis client: RESP2 over asyncio, replies read by hiredis.

Every call to one server (or to the primary a Sentinel group names) goes through this
client, not redis-py: it loads in a millisecond where redis-py takes some fifty (a
worker's start), and a round trip costs about half the CPU (docs/performance.md, "The
fifth round"). redis-py stays for Redis Cluster only (:mod:`duetime.stores.redis.clustercalls`).

- :mod:`.address`: the ``redis://``, ``rediss://`` and ``unix://`` URLs, as an Endpoint;
- :mod:`.connection`: one connection, its handshake and its replies;
- :mod:`.client`: calls on a set of connections, sent again on a lost one;
- :mod:`.commands`: the replies of a few reads shaped, and pipelines that raise;
- :mod:`.credentials`: credentials asked of a hook on each new connection;
- :mod:`.subscription`: a subscribed connection and its messages;
- :mod:`.errors`: what it raises.
"""
