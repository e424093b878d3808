"""Partitions: one task type spread over several of a store's types (on Redis Cluster, over
several primaries), around any store."""
