"""moto's server with requests on one table handled one at a time.

`python -m moto.server` answers requests on many threads, and its DynamoDB backend does not
make a conditional write atomic: two threads can both see "item does not exist" and both put
(the store conformance suite's race cases caught it, intermittently). DynamoDB itself
serialises writes per item. Holding a lock per table around each whole request gives moto the
same guarantee and keeps HTTP/1.1 keep-alive (the server stays threaded).

The lock is per table, not global: moto backs up every table a transaction names with a deep
copy before it runs, so a transaction on a table with a few thousand items holds its lock for
a long while. Under one global lock, the tests on every other table waited behind it, past the
store's bound on one call, and failed with 503s that had nothing to do with them. Requests that
name no table, or create, delete or list tables, run alone.

Usage: moto_server.py HOST PORT
"""

import contextlib
import io
import json
import os
import sys
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple

# Operations that change or list the set of tables: they run with no other request.
ALONE = {"CreateTable", "DeleteTable", "ListTables", "UpdateTable"}


def table_names(value, found=None):
    """Every table a DynamoDB request body names (`TableName` anywhere, `RequestItems` keys)."""
    found = set() if found is None else found
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "TableName" and isinstance(inner, str):
                found.add(inner)
            elif key == "RequestItems" and isinstance(inner, dict):
                found.update(inner.keys())
            table_names(inner, found)
    elif isinstance(value, list):
        for inner in value:
            table_names(inner, found)
    return found


class SharedOrAlone:
    """A lock many requests hold together, or one alone; one waiting to be alone goes first."""

    def __init__(self):
        self.cond = threading.Condition()
        self.sharing = 0
        self.alone = False
        self.waiting_alone = 0

    @contextlib.contextmanager
    def shared(self):
        with self.cond:
            while self.alone or self.waiting_alone:
                self.cond.wait()
            self.sharing += 1
        try:
            yield
        finally:
            with self.cond:
                self.sharing -= 1
                self.cond.notify_all()

    @contextlib.contextmanager
    def by_itself(self):
        with self.cond:
            self.waiting_alone += 1
            while self.alone or self.sharing:
                self.cond.wait()
            self.waiting_alone -= 1
            self.alone = True
        try:
            yield
        finally:
            with self.cond:
                self.alone = False
                self.cond.notify_all()


class Serialised:
    """WSGI middleware: one request at a time per table, response body included."""

    def __init__(self, app):
        self.app = app
        self.everything = SharedOrAlone()
        self.guard = threading.Lock()
        self.tables = {}

    def lock_of(self, table):
        with self.guard:
            return self.tables.setdefault(table, threading.Lock())

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        operation = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        try:
            names = table_names(json.loads(body)) if body else set()
        except ValueError:
            names = set()

        def run():
            # Materialise the body inside the lock: a lazy iterator would run moto code
            # after the lock is released.
            return [b"".join(self.app(environ, start_response))]

        if not names or operation in ALONE:
            with self.everything.by_itself():
                return run()
        locks = [self.lock_of(name) for name in sorted(names)]
        with self.everything.shared(), contextlib.ExitStack() as held:
            for lock in locks:
                held.enter_context(lock)
            return run()


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        host,
        port,
        Serialised(app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
