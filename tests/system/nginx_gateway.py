# -*- coding: utf-8 -*-
"""A real reverse proxy for the gateway layer's tests: nginx from the OS packages (scripts/setup-test-deps.sh
installs it), started by the test itself as one foreground process (no master/worker split, so it never changes
user) with its own prefix, configuration, pid file and logs under the test's tmp dir, bound to 127.0.0.1 on a free
port. The system nginx service is never used."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log info;
events {{ worker_connections 64; }}
http {{
    log_format gateway '$remote_addr [$time_iso8601] "$request" $status upstream=$upstream_status '
                       'request_time=$request_time upstream_time=$upstream_response_time';
    access_log {prefix}/logs/access.log gateway;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://{upstream};
            proxy_http_version 1.1;
            proxy_connect_timeout 5s;
            proxy_read_timeout {read_timeout};
            proxy_send_timeout 30s;
        }}
    }}
}}
"""


def nginx_binary():
    for path in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if path and os.access(path, os.X_OK):
            return path
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NginxGateway:
    """nginx -p <dir> -c <dir>/nginx.conf in front of ``upstream`` (host:port); ``read_timeout`` is nginx's
    proxy_read_timeout (e.g. "60s", or "1ms" for a gateway that times out before any answer)."""

    def __init__(self, directory, upstream, read_timeout="60s"):
        self.prefix = str(directory)
        self.port = _free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.access_log = os.path.join(self.prefix, "logs", "access.log")
        self.error_log = os.path.join(self.prefix, "logs", "error.log")
        for sub in ("logs", "tmp"):
            os.makedirs(os.path.join(self.prefix, sub), exist_ok=True)
        self.conf = os.path.join(self.prefix, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(CONF.format(prefix=self.prefix, port=self.port, upstream=upstream, read_timeout=read_timeout))
        binary = nginx_binary()
        if not binary:
            raise RuntimeError("nginx is not installed: run scripts/setup-test-deps.sh (Debian package nginx)")
        self._out = open(os.path.join(self.prefix, "stdout.log"), "wb")
        self.proc = subprocess.Popen([binary, "-p", self.prefix, "-c", self.conf], stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx -p %s ended at start (rc %s): see %s"
                                   % (self.prefix, self.proc.returncode, self.error_log))
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("nginx -p %s did not listen on 127.0.0.1:%d within 15 s" % (self.prefix, self.port))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful shutdown
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._out.close()
