"""Throwaway redis-server processes for tests, each on a free port, stopped by pid."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_binary() -> str:
    path = shutil.which("redis-server")
    if path is None:
        raise RuntimeError(
            "redis-server is not on the PATH: the tests start their own Redis. Install it "
            "(Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), "
            "or run `make test`, which installs it when it can."
        )
    return path


#: How many ports a server picked by itself tries before it gives up.
PORT_TRIES = 5


class PortTaken(RuntimeError):
    """Another process answers on the port a server was to start on."""


class RedisServer:
    """A redis-server this test session started; it is never the machine's shared one."""

    def __init__(self, *args: str, port: int | None = None) -> None:
        #: Whether the port was picked here: another process may take it between the pick
        #: and the start (tests run in several processes), and then another is picked.
        self.picked = port is None
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"duetime-redis-{self.port}-"))
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        """Whether the process this object started is alive."""
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        return [
            redis_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir),
            "--save",
            "",
            "--appendonly",
            "no",
            "--enable-debug-command",
            "local",
            *self.args,
        ]

    def start(self) -> RedisServer:
        for _ in range(PORT_TRIES):
            try:
                return self._start()
            except PortTaken:
                if not self.picked:
                    raise
                self.port = free_port()
        raise RuntimeError(f"no free port for a redis-server in {PORT_TRIES} tries")

    def _start(self) -> RedisServer:
        cmd = self.command()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    # The server that answers must be this one: another process may have
                    # taken the port between its pick and this start.
                    if int(client.info("server")["process_id"]) != self.proc.pid:
                        self.proc.wait(10)
                        raise PortTaken(self.port)
                    # Loading an AOF: PING answers before the data is there.
                    while client.info("persistence").get("loading"):
                        time.sleep(0.01)
                    return self
                except (redis.ConnectionError, redis.BusyLoadingError) as exc:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"redis-server on port {self.port} did not start"
                        ) from exc
                    time.sleep(0.02)
        finally:
            client.close()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True)

    def kill(self) -> None:
        """SIGKILL: the process dies at once, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


# -- helpers shared by the cluster and the sentinel group -----------------------------------

#: A cluster node's bus listens on its port + 10000.
CLUSTER_BUS_OFFSET = 10000
#: redis-server logs to this file in its own dir (the dirs go when the test ends).
LOG_FILE = "redis.log"
#: A replica's first sync starts at once, not after the 5 s Redis 7 waits by default for
#: more replicas to share a diskless transfer.
QUICK_SYNC = ("--repl-diskless-sync-delay", "0")


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_ports(n: int, *, cluster_bus: bool = False) -> list[int]:
    """``n`` distinct free ports; with ``cluster_bus``, ports whose bus port (+10000) is
    free, below 65536, and none of them another node's port or bus port."""
    taken: set[int] = set()
    ports: list[int] = []
    for _ in range(1000):
        if len(ports) == n:
            return ports
        port = free_port()
        wanted = {port, port + CLUSTER_BUS_OFFSET} if cluster_bus else {port}
        if port == 6379 or wanted & taken:
            continue
        if cluster_bus and (
            port + CLUSTER_BUS_OFFSET > 65535 or not _bindable(port + CLUSTER_BUS_OFFSET)
        ):
            continue
        taken |= wanted
        ports.append(port)
    raise RuntimeError(f"could not find {n} free ports")


def _log_tail(server: RedisServer, lines: int = 15) -> str:
    try:
        text = (server.dir / LOG_FILE).read_text(errors="replace")
    except OSError:
        return ""
    tail = "\n    ".join(text.splitlines()[-lines:])
    return f"\n  {server.port} ({'up' if server.running else 'down'}):\n    {tail}"


def _client(port: int, *, decode: bool = True) -> redis.Redis:
    """A short-lived client for polling: short timeouts, no retries, and replies as the
    server sent them (no redis-py parsing of INFO, ROLE and the like)."""
    client = redis.Redis(
        port=port,
        decode_responses=decode,
        socket_connect_timeout=0.5,
        socket_timeout=2,
        retry=Retry(NoBackoff(), 0),
        protocol=2,  # flat arrays, as parsed here (redis-py 8 speaks RESP3 by default)
    )
    client.response_callbacks.clear()
    return client


def _ask(port: int, *command: str | int | bytes, decode: bool = True) -> Any:
    """One command to one server, raw (no redis-py reply parsing)."""
    client = _client(port, decode=decode)
    try:
        return client.execute_command(*command)  # type: ignore[no-untyped-call]
    finally:
        client.close()


def _info(port: int, section: str) -> dict[str, str]:
    """``INFO section`` as strings (``k:v`` lines), without redis-py's number parsing."""
    return _fields(str(_ask(port, "INFO", section)))


def _fields(text: str) -> dict[str, str]:
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {key: value.strip() for key, value in pairs}


def _poll(
    check: Callable[[], str | None], timeout: float, what: str, logs: Callable[[], str]
) -> float:
    """Call ``check`` until it returns None (ready) and return the seconds that took;
    ``check`` returns why it is not ready yet, and a connection error counts as not ready.
    After ``timeout`` s, raise with the last reason and the servers' log tails."""
    start = time.monotonic()
    reason: str | None = "not checked"
    while True:
        try:
            reason = check()
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        if reason is None:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"{what} not reached within {timeout} s: {reason}{logs()}")
        time.sleep(0.05)


# -- Redis Cluster --------------------------------------------------------------------------

CLUSTER_SLOTS = 16384


class NodeInfo(NamedTuple):
    """One line of ``CLUSTER NODES``."""

    id: str
    addr: str  # "127.0.0.1:PORT"
    role: str  # "master" or "slave"
    slots: list[tuple[int, int]]  # inclusive ranges, those the node owns
    master_id: str | None  # a replica's primary

    @property
    def port(self) -> int:
        return int(self.addr.rsplit(":", 1)[1])


def parse_cluster_nodes(text: str) -> tuple[list[NodeInfo], dict[str, set[str]]]:
    """``CLUSTER NODES`` as NodeInfo rows, and each node's flags (myself, fail, ...)."""
    nodes: list[NodeInfo] = []
    flags: dict[str, set[str]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split()
        node_id, addr, flag_text, master = fields[:4]
        node_flags = set(flag_text.split(","))
        slots = []
        for part in fields[8:]:
            if part.startswith("["):  # a slot importing or migrating: still the owner's
                continue
            first, _, last = part.partition("-")
            slots.append((int(first), int(last or first)))
        role = "master" if "master" in node_flags else "slave"
        address = addr.split("@", 1)[0]
        nodes.append(NodeInfo(node_id, address, role, slots, None if master == "-" else master))
        flags[node_id] = node_flags
    return nodes, flags


class RedisCluster:
    """A Redis Cluster of local processes: ``primaries`` primaries with ``replicas``
    replicas each, every node on a free port (and its bus port) with its own dir, AOF on
    and fsynced on every write so that a node killed and started again keeps its data.

    ``server_args`` are added to every node's command line, after those settings (so they
    win over them).

    ``with RedisCluster() as cluster:`` creates it and waits until every slot is served;
    leaving the block kills every node and removes the dirs.
    """

    def __init__(
        self,
        *,
        primaries: int = 3,
        replicas: int = 1,
        node_timeout_ms: int = 2000,
        server_args: Sequence[str] = (),
    ) -> None:
        self.primaries_count = primaries
        self.replicas_count = replicas
        self.node_timeout_ms = node_timeout_ms
        self.ports = free_ports(primaries * (1 + replicas), cluster_bus=True)
        node_args = (
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            str(node_timeout_ms),
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--logfile",
            LOG_FILE,
            *QUICK_SYNC,
            *server_args,
        )
        self.servers = {port: RedisServer(*node_args, port=port) for port in self.ports}

    # -- addresses

    @property
    def urls(self) -> list[str]:
        return [self.servers[port].url for port in self.ports]

    @property
    def seed_url(self) -> str:
        """A ``redis://`` URL of one node (a primary when the cluster was created)."""
        return self.urls[0]

    @property
    def cluster_url(self) -> str:
        """``redis+cluster://127.0.0.1:P1,...``: the nodes that were created primaries."""
        seeds = ",".join(f"127.0.0.1:{port}" for port in self.ports[: self.primaries_count])
        return f"redis+cluster://{seeds}"

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", port) for port in self.ports]

    # -- lifecycle

    def create(self) -> RedisCluster:
        """Start every node, join them with ``redis-cli --cluster create``, and wait until
        the cluster serves every slot and each replica is in sync."""
        for server in self.servers.values():
            server.start()
        cli = shutil.which("redis-cli")
        if cli is None:
            raise RuntimeError("redis-cli is not on the PATH (it comes with redis-server)")
        cmd = [
            cli,
            "--cluster",
            "create",
            *(f"127.0.0.1:{port}" for port in self.ports),
            "--cluster-replicas",
            str(self.replicas_count),
            "--cluster-yes",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"redis-cli --cluster create failed ({done.returncode}):\n"
                f"{done.stdout}{done.stderr}{self._logs()}"
            )
        self.wait_ok(30)
        return self

    def kill(self, port: int) -> None:
        """SIGKILL one node, as in a crash."""
        self.servers[port].kill()

    def start(self, port: int) -> None:
        """Start a killed (or stopped) node again, with its dir: it reads its nodes.conf and
        AOF and rejoins (a primary that lost its slots to a failover comes back a replica).
        Follow with :meth:`wait_ok` to wait until it has."""
        self.servers[port].start()

    def stop(self) -> None:
        """SIGKILL every node."""
        for server in self.servers.values():
            server.kill()

    def cleanup(self) -> None:
        self.stop()  # SIGKILL: the data goes anyway, no need to wait for a clean shutdown
        for server in self.servers.values():
            server.cleanup()

    def __enter__(self) -> RedisCluster:
        try:
            return self.create()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- what the cluster says

    def running_ports(self) -> list[int]:
        return [port for port in self.ports if self.servers[port].running]

    def client(self, port: int) -> redis.Redis:
        """A plain client of one node (no redirections followed)."""
        return redis.Redis(port=port, decode_responses=True)

    def nodes(self, port: int | None = None) -> list[NodeInfo]:
        """``CLUSTER NODES`` as one node sees it (``port``, or the first running node), in
        the order of :attr:`ports`."""
        nodes = parse_cluster_nodes(self._nodes_text(port))[0]
        order = {port: n for n, port in enumerate(self.ports)}
        return sorted(nodes, key=lambda node: order.get(node.port, len(order)))

    def _nodes_text(self, port: int | None = None) -> str:
        if port is None:
            running = self.running_ports()
            if not running:
                raise RuntimeError("no cluster node is running")
            port = running[0]
        return str(_ask(port, "CLUSTER", "NODES"))

    def node(self, node_id_or_port: str | int) -> NodeInfo:
        for node in self.nodes():
            if node_id_or_port in (node.id, node.port):
                return node
        raise KeyError(node_id_or_port)

    def primaries(self) -> list[NodeInfo]:
        """The primaries that own slots."""
        return [node for node in self.nodes() if node.role == "master" and node.slots]

    def replicas_of(self, node_id: str) -> list[NodeInfo]:
        return [node for node in self.nodes() if node.master_id == node_id]

    def primary_for_slot(self, slot: int) -> NodeInfo:
        for node in self.nodes():
            if node.role == "master" and any(a <= slot <= b for a, b in node.slots):
                return node
        raise LookupError(f"no node owns slot {slot}")

    def key_slot(self, key: str) -> int:
        return int(_ask(self.running_ports()[0], "CLUSTER", "KEYSLOT", key))

    def primary_for_key(self, key: str) -> NodeInfo:
        return self.primary_for_slot(self.key_slot(key))

    # -- waiting

    def wait_ok(self, timeout: float = 15) -> float:
        """Wait until every running node says ``cluster_state:ok``, they all agree which
        node owns each of the 16384 slots, every owner is a running node none sees as
        failed, and every running replica's link to its primary is up; return the seconds
        it took. After killing a primary, this waits for its replica's failover; after
        starting a node, for it to have rejoined and synced."""
        return _poll(self._not_ok, timeout, "cluster ok", self._logs)

    def _not_ok(self) -> str | None:
        running = self.running_ports()
        live: set[str] = set()
        maps: dict[int, Any] = {}
        for port in running:
            reason = self._node_not_ok(port, running, live, maps)
            if reason is not None:
                return reason
        first = maps[running[0]]
        for port in running:
            if maps[port] != first:
                return f"{port} and {running[0]} disagree on the slots' owners or the roles"
        for _, _, owner in first[0]:
            if owner not in live:
                return f"slots owned by {owner}, which is not running"
        return None

    def _node_not_ok(
        self,
        port: int,
        running: list[int],
        live: set[str],
        maps: dict[int, Any],
    ) -> str | None:
        """Why one running node is not ok yet; adds its id to ``live`` and its view of the
        slots' owners and of the running nodes' roles to ``maps``."""
        info = _fields(str(_ask(port, "CLUSTER", "INFO")))
        if info.get("cluster_state") != "ok":
            return f"{port}: cluster_state {info.get('cluster_state')}"
        if info.get("cluster_slots_ok") != str(CLUSTER_SLOTS):
            return f"{port}: cluster_slots_ok {info.get('cluster_slots_ok')}"
        nodes, flags = parse_cluster_nodes(self._nodes_text(port))
        me = next(node for node in nodes if "myself" in flags[node.id])
        live.add(me.id)
        owners = sorted((a, b, n.id) for n in nodes if n.role == "master" for a, b in n.slots)
        roles = {n.id: (n.role, n.master_id) for n in nodes if n.port in running}
        maps[port] = (owners, roles)
        covered = sum(b - a + 1 for a, b, _ in owners)
        if covered != CLUSTER_SLOTS:
            return f"{port}: sees {covered} slots owned"
        for node in nodes:
            if node.port in running and flags[node.id] & {"fail", "fail?", "handshake"}:
                return f"{port}: sees {node.port} as {','.join(sorted(flags[node.id]))}"
        if me.role == "slave":
            link = _info(port, "replication").get("master_link_status")
            if link != "up":
                return f"{port}: replica link {link}"
        return None

    def _logs(self) -> str:
        return "".join(_log_tail(server) for server in self.servers.values())

    # -- moving slots

    def reshard(self, slot: int, to_node_id: str, timeout: float = 15) -> None:
        """Move one slot, and its keys, to the primary ``to_node_id``: the sequence
        ``redis-cli --cluster reshard`` runs, for this slot (which it cannot be told):
        SETSLOT IMPORTING on the target, MIGRATING on the source, MIGRATE the keys in
        batches, then SETSLOT NODE on the target, the source and the other primaries.
        Returns once every node agrees (:meth:`wait_ok`)."""
        source = self.primary_for_slot(slot)
        target = self.node(to_node_id)
        if target.role != "master":
            raise ValueError(f"{to_node_id} is not a primary")
        if source.id == target.id:
            return
        _ask(target.port, "CLUSTER", "SETSLOT", slot, "IMPORTING", source.id)
        _ask(source.port, "CLUSTER", "SETSLOT", slot, "MIGRATING", target.id)
        while True:
            keys = _ask(source.port, "CLUSTER", "GETKEYSINSLOT", slot, 100, decode=False)
            if not keys:
                break
            _ask(
                source.port,
                *("MIGRATE", "127.0.0.1", target.port, "", 0, 10_000, "REPLACE", "KEYS"),
                *keys,
                decode=False,
            )
        others = [
            n for n in self.nodes() if n.role == "master" and n.id not in (source.id, target.id)
        ]
        for node in [target, source, *others]:
            if self.servers[node.port].running:
                _ask(node.port, "CLUSTER", "SETSLOT", slot, "NODE", target.id)
        self.wait_ok(timeout)


# -- Sentinel -------------------------------------------------------------------------------


class SentinelServer(RedisServer):
    """A redis-server in sentinel mode, watching one primary; its config file (which the
    sentinel rewrites as it learns) is in its dir, so a restart keeps what it knew."""

    #: Sentinel's timers, shortened with ``SENTINEL DEBUG`` (Redis 7.0+; not kept in the
    #: config, so applied after every start): INFO to each server every 1 s rather than
    #: 10 s, hello messages every 0.5 s rather than 2 s (a primary that comes back is
    #: turned into a replica after 4 of them, 2 s rather than 8 s), TILT for 5 s not 30 s.
    TIMERS = ("info-period", 1000, "publish-period", 500, "tilt-period", 5000)

    def __init__(
        self,
        service: str,
        primary_port: int,
        *,
        quorum: int = 2,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 5000,
        port: int | None = None,
    ) -> None:
        super().__init__(port=port)
        self.conf = self.dir / "sentinel.conf"
        self.conf.write_text(
            "\n".join(
                [
                    f"port {self.port}",
                    "bind 127.0.0.1",
                    f'dir "{self.dir}"',
                    f"logfile {LOG_FILE}",
                    "sentinel announce-ip 127.0.0.1",
                    f"sentinel announce-port {self.port}",
                    f"sentinel monitor {service} 127.0.0.1 {primary_port} {quorum}",
                    f"sentinel down-after-milliseconds {service} {down_after_ms}",
                    f"sentinel failover-timeout {service} {failover_timeout_ms}",
                    f"sentinel parallel-syncs {service} 1",
                    "",
                ]
            )
        )

    def command(self) -> list[str]:
        return [redis_binary(), str(self.conf), "--sentinel"]

    def start(self) -> SentinelServer:
        super().start()
        _ask(self.port, "SENTINEL", "DEBUG", *self.TIMERS)
        return self


def _pairs(flat: list[Any]) -> dict[str, str]:
    """A sentinel's ``[k1, v1, k2, v2, ...]`` reply as a dict."""
    return {str(flat[i]): str(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}


class SentinelGroup:
    """A primary, ``replicas`` replicas (``--replicaof``) and ``sentinels`` sentinels
    watching them as ``service``, every process on a free port with its own dir.

    ``server_args`` go to every data server (a replica may become the primary),
    ``primary_args`` to the first primary only, ``replica_args`` to the replicas only; for
    example ``server_args=("--min-replicas-to-write", "1", "--min-replicas-max-lag",
    "10")`` or ``("--appendonly", "yes")``.

    ``with SentinelGroup() as group:`` starts it and waits until the replicas are in
    sync and each sentinel knows every replica and every other sentinel; leaving the block
    kills every process and removes the dirs.
    """

    def __init__(
        self,
        *,
        service: str = "mymaster",
        replicas: int = 2,
        sentinels: int = 3,
        quorum: int = 2,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 5000,
        server_args: Sequence[str] = (),
        primary_args: Sequence[str] = (),
        replica_args: Sequence[str] = (),
    ) -> None:
        self.service = service
        first, *others = free_ports(1 + replicas)
        logs = ("--logfile", LOG_FILE, *QUICK_SYNC)
        self.servers = {first: RedisServer(*server_args, *primary_args, *logs, port=first)}
        for port in others:
            replica_of = ("--replicaof", "127.0.0.1", str(first))
            args = (*server_args, *replica_args, *replica_of, *logs)
            self.servers[port] = RedisServer(*args, port=port)
        self.sentinels = [
            SentinelServer(
                service,
                first,
                quorum=quorum,
                down_after_ms=down_after_ms,
                failover_timeout_ms=failover_timeout_ms,
                port=port,
            )
            for port in free_ports(sentinels)
        ]

    # -- addresses

    @property
    def sentinel_addrs(self) -> list[tuple[str, int]]:
        """For ``redis.sentinel.Sentinel(group.sentinel_addrs)``."""
        return [("127.0.0.1", sentinel.port) for sentinel in self.sentinels]

    @property
    def sentinel_url(self) -> str:
        """``redis+sentinel://127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3/<service>/0``."""
        hosts = ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)
        return f"redis+sentinel://{hosts}/{self.service}/0"

    @property
    def ports(self) -> list[int]:
        """The data servers' ports (not the sentinels')."""
        return list(self.servers)

    # -- lifecycle

    def launch(self) -> SentinelGroup:
        """Start the servers, then the sentinels, and wait until all is in place."""
        for server in self.servers.values():
            server.start()
        for sentinel in self.sentinels:
            sentinel.start()
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 20) -> float:
        """Wait until every running replica's link to the primary is up and each running
        sentinel sees the primary up, knows every running replica (up, linked to it) and
        every other running sentinel; return the seconds it took."""
        return _poll(self._not_ready, timeout, "sentinel group ready", self._logs)

    def _not_ready(self) -> str | None:
        primary = self.primary_port()
        replicas = [port for port in self.running_ports() if port != primary]
        for port in replicas:
            info = _info(port, "replication")
            if info.get("master_port") != str(primary) or info.get("master_link_status") != "up":
                return f"replica {port}: {info.get('master_port')} {info.get('master_link_status')}"
        running = [sentinel for sentinel in self.sentinels if sentinel.running]
        for sentinel in running:
            master = _pairs(_ask(sentinel.port, "SENTINEL", "MASTER", self.service))
            if master.get("flags") != "master" or master.get("port") != str(primary):
                return (
                    f"sentinel {sentinel.port}: primary {master.get('port')} {master.get('flags')}"
                )
            seen = [_pairs(r) for r in _ask(sentinel.port, "SENTINEL", "REPLICAS", self.service)]
            ok = {
                int(r["port"])
                for r in seen
                if r.get("flags") == "slave"
                and r.get("master-link-status") == "ok"
                and r.get("master-port") == str(primary)
            }
            if not ok >= set(replicas):
                return f"sentinel {sentinel.port}: replicas up {sorted(ok)}, not {replicas}"
            peers = [_pairs(r) for r in _ask(sentinel.port, "SENTINEL", "SENTINELS", self.service)]
            known = {int(p["port"]) for p in peers if p.get("flags") == "sentinel"}
            others = {other.port for other in running if other is not sentinel}
            if not known >= others:
                return f"sentinel {sentinel.port}: knows sentinels {sorted(known)}"
        return None

    def kill(self, port: int) -> None:
        """SIGKILL a data server or a sentinel, as in a crash."""
        self._server(port).kill()

    def kill_primary(self) -> int:
        """SIGKILL the current primary (as the sentinels name it); return its port."""
        port = self.primary_port()
        self.kill(port)
        return port

    def start(self, port: int) -> None:
        """Start a killed data server (or sentinel) again, with its original arguments. A
        former primary comes back as a primary with what its dir held, and the sentinels
        turn it into a replica of the new one about 2 s later: follow with
        :meth:`wait_replicas` (or :meth:`wait_ready`)."""
        self._server(port).start()

    def stop(self) -> None:
        """SIGKILL every process."""
        for server in [*self.sentinels, *self.servers.values()]:
            server.kill()

    def cleanup(self) -> None:
        self.stop()  # SIGKILL: the data goes anyway, no need to wait for a clean shutdown
        for server in [*self.sentinels, *self.servers.values()]:
            server.cleanup()

    def __enter__(self) -> SentinelGroup:
        try:
            return self.launch()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- what it says

    def _server(self, port: int) -> RedisServer:
        if port in self.servers:
            return self.servers[port]
        for sentinel in self.sentinels:
            if sentinel.port == port:
                return sentinel
        raise KeyError(port)

    def running_ports(self) -> list[int]:
        return [port for port, server in self.servers.items() if server.running]

    def client(self, port: int) -> redis.Redis:
        """A plain client of one data server."""
        return redis.Redis(port=port, decode_responses=True)

    def primary_port(self) -> int:
        """The primary's port, as the first running sentinel that answers says."""
        error: Exception | None = None
        for sentinel in self.sentinels:
            if sentinel.running:
                try:
                    return self._primary_said_by(sentinel.port)
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    error = exc
        raise redis.ConnectionError(f"no sentinel answered: {error}")

    def _primary_said_by(self, sentinel_port: int) -> int:
        addr = _ask(sentinel_port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service)
        return int(addr[1])

    def role(self, port: int) -> str:
        """``ROLE`` of a data server: "master" or "slave"."""
        return str(_ask(port, "ROLE")[0])

    # -- waiting

    def wait_failover(self, old_port: int, timeout: float = 30) -> int:
        """Wait until every running sentinel names the same new primary, not ``old_port``,
        and that server answers ``ROLE`` as a master; return its port."""
        found: list[int] = []

        def check() -> str | None:
            said = {self._primary_said_by(s.port) for s in self.sentinels if s.running}
            if len(said) != 1:
                return f"sentinels disagree: {sorted(said)}"
            (port,) = said
            if port == old_port:
                return f"sentinels still name {old_port}"
            if port not in self.servers or not self.servers[port].running:
                return f"sentinels name {port}, which is not running"
            if self.role(port) != "master":
                return f"{port} answers ROLE {self.role(port)}"
            found[:] = [port]
            return None

        _poll(check, timeout, f"failover from {old_port}", self._logs)
        return found[0]

    def wait_replicas(self, n: int, timeout: float = 20) -> float:
        """Wait until the primary reports at least ``n`` replicas connected and in sync
        (``state=online`` in ``INFO replication``); return the seconds it took."""

        def check() -> str | None:
            primary = self.primary_port()
            info = _info(primary, "replication")
            if info.get("role") != "master":
                return f"{primary} is a {info.get('role')}"
            online = [
                value
                for key, value in info.items()
                if key.startswith("slave") and key[5:].isdigit() and "state=online" in value
            ]
            if len(online) < n:
                return f"{primary} has {len(online)} replicas online: {online}"
            return None

        return _poll(check, timeout, f"{n} replicas", self._logs)

    def _logs(self) -> str:
        return "".join(_log_tail(s) for s in [*self.servers.values(), *self.sentinels])
