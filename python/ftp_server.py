"""An FTP server for trawl's storage tests: pyftpdlib on 127.0.0.1, one user with every
permission on the directory given, passive and active transfers. Prints one JSON line
(the port) and runs until its standard input closes.

    python ftp_server.py [--port N] ROOT USER PASSWORD
"""

import json
import logging
import sys
import threading

from pyftpdlib.authorizers import DummyAuthorizer
from pyftpdlib.handlers import FTPHandler
from pyftpdlib.servers import FTPServer


def main():
    args = sys.argv[1:]
    port = 0
    if args[:1] == ["--port"]:
        port = int(args[1])
        args = args[2:]
    root, user, password = args
    logging.basicConfig(level=logging.WARNING)
    authorizer = DummyAuthorizer()
    authorizer.add_user(user, password, root, perm="elradfmwMT")
    handler = FTPHandler
    handler.authorizer = authorizer
    server = FTPServer(("127.0.0.1", port), handler)
    print(json.dumps({"port": server.address[1]}), flush=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    sys.stdin.read()
    server.close_all()


if __name__ == "__main__":
    main()
