"""Real services for the lanes that need a server: throwaway redis-server, PostgreSQL and MariaDB.

``ServiceManager`` starts each server on 127.0.0.1, on a free port, in a fresh private temporary
folder (0700), with a random password made for this run (redis ``requirepass`` from a config
file in that folder; PostgreSQL ``scram-sha-256``, set through a password file there; MariaDB's
``bench`` account, made by an init file there): the URL carries it, ``mask_url`` hides it
wherever a URL is printed or stored, and no command line shows it. It waits until the server
answers, records its version and which binary ran (arib.ground.binaries: the system's, else the
one shipped in the locked environment), and stops it on exit -- also when the run fails or is
stopped by SIGINT, SIGTERM or SIGHUP -- leaving no process and no folder behind (and when the
run is killed with SIGKILL, its watcher or the next run's start does: arib.ground.owners).
``REDIS_URL`` / ``POSTGRES_URL`` / ``MYSQL_URL`` in the environment select an existing server
instead; it is validated and probed, never started or stopped. A missing server binary or Python
driver is reported as ``NotMeasured`` with its reason and fix; no fake ever stands in for a
server.

Parts, one job each (everything is imported from here):

- ``info``: ``ServiceInfo``, ``NotMeasured``, the service names and the Python drivers;
- ``urls``: validating ``REDIS_URL`` / ``POSTGRES_URL`` / ``MYSQL_URL`` and ``mask_url``;
- ``redis_probe``: PING and INFO through redis-py;
- ``redis_keys``: on a user's Redis, the run's key prefix, the keys' expiry and their removal;
- ``pgclient``: ``postgres_query``, a fresh database per lane run and its drop;
- ``mysqlclient``: ``mysql_query`` and ``mysql_database_url`` (pymysql, else the CLI client);
- ``launcher``: a server process in its private folder: spawn, readiness, stop;
- ``redis_server``, ``postgres_server`` and ``mariadb_server``: how each server is started or
  probed;
- ``manager``: ``ServiceManager``, the servers of one run and their cleanup on every signal.
"""

from __future__ import annotations

from arib.ground.services.info import (
    DRIVERS,
    ENV_VARS,
    HOST,
    SERVICES,
    NotMeasured,
    ServiceInfo,
    missing_python_driver,
)
from arib.ground.services.launcher import free_port, new_password
from arib.ground.services.manager import ServiceManager
from arib.ground.services.mysqlclient import mysql_database_url, mysql_query
from arib.ground.services.pgclient import (
    drop_postgres_database,
    fresh_postgres_url,
    postgres_query,
)
from arib.ground.services.postgres_server import PG_HBA, PG_SETTINGS, PG_SUPERUSER
from arib.ground.services.redis_probe import redis_probe
from arib.ground.services.urls import (
    EXPECTED_FORMS,
    mask_url,
    parse_mysql_url,
    parse_postgres_url,
    parse_redis_url,
)

__all__ = [
    "DRIVERS",
    "ENV_VARS",
    "EXPECTED_FORMS",
    "HOST",
    "PG_HBA",
    "PG_SETTINGS",
    "PG_SUPERUSER",
    "SERVICES",
    "NotMeasured",
    "ServiceInfo",
    "ServiceManager",
    "drop_postgres_database",
    "free_port",
    "fresh_postgres_url",
    "mask_url",
    "missing_python_driver",
    "mysql_database_url",
    "mysql_query",
    "new_password",
    "parse_mysql_url",
    "parse_postgres_url",
    "parse_redis_url",
    "postgres_query",
    "redis_probe",
]
