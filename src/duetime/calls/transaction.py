"""``connection=``: the producer's calls on the application's own connection, inside its
transaction (docs/transactions.md), through the store's ``TRANSACTIONS`` capability."""

from __future__ import annotations

from duetime.calls.adapters import driver_connection
from duetime.errors import ConfigError
from duetime.partitions.store import PartitionedStore
from duetime.registry import ClientSide
from duetime.stores.base import Store
from duetime.stores.capabilities import TRANSACTIONS, has, use


async def store_on(client: ClientSide, connection: object) -> Store:
    """The client's store, open, with its writes and reads on ``connection`` for one call.

    Raises:
        ConfigError: the store shares no transaction with the application (Redis), or it
            refuses ``connection`` (see ``SharedTransactions.in_transaction``).
    """
    raw = client.store()
    if not has(raw, TRANSACTIONS):
        raise ConfigError(
            f"connection= needs {TRANSACTIONS.wanted}: the store {client.where()} "
            f"({type(raw).__name__}) has no transaction shared with the application's "
            "database, so a task cannot be written in it; schedule after the transaction "
            "commits instead (Django's transaction.on_commit, SQLAlchemy's after_commit "
            "event): see docs/transactions.md"
        )
    await client.open()
    inner: Store = await use(raw, TRANSACTIONS).in_transaction(driver_connection(connection))
    return PartitionedStore(inner, client.types.partitions_of)
