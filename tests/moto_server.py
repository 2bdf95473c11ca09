"""moto's server with every request handled under one lock.

`python -m moto.server` answers requests on many threads, and its DynamoDB backend does not
make a conditional write atomic: two threads can both see "item does not exist" and both put
(the store conformance suite's race cases caught it, intermittently). DynamoDB itself
serialises writes per item. Holding one lock around each whole request gives moto the same
guarantee, keeps HTTP/1.1 keep-alive (the server stays threaded), and costs little: moto runs
under the GIL anyway.

Usage: moto_server.py HOST PORT
"""

import os
import sys
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


class Serialised:
    """WSGI middleware: one request at a time, response body included."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            # Materialise the body inside the lock: a lazy iterator would run moto code
            # after the lock is released.
            return [b"".join(self.app(environ, start_response))]


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
