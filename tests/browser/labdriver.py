"""A throwaway JupyterLab server and the checks the browser test runs against each notebook.

The server is isolated from the user's Jupyter state: its config, data, runtime, settings and
workspaces directories are temporary, autosave is off and a pre-save hook refuses every save,
so the committed notebooks cannot be written by the test, however it ends.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JUPYTER = REPO / ".venv" / "bin" / "jupyter"
CHROMIUM = Path(os.environ.get("IDEM_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
START_TIMEOUT = 90.0

# JupyterLab user settings written into the temporary settings directory.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none", "kernelShutdown": True},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/extensionmanager-extension/plugin": {"enabled": False},
}

SERVER_CONFIG = '''\
# Written by tests/browser: a JupyterLab that cannot save into the repository.
from tornado.web import HTTPError


def refuse_save(model, path, contents_manager, **kwargs):
    with open({refused!r}, "a") as log:
        log.write(path + "\\n")
    raise HTTPError(403, f"the browser test never saves notebooks ({{path}})")


c.ServerApp.ip = "127.0.0.1"
c.ServerApp.port = {port}
c.ServerApp.port_retries = 0
c.ServerApp.open_browser = False
c.ServerApp.allow_root = {allow_root}
c.ServerApp.root_dir = {root!r}
c.IdentityProvider.token = {token!r}
c.FileContentsManager.pre_save_hook = refuse_save
c.FileCheckpoints.checkpoint_dir = {checkpoints!r}
c.LabApp.user_settings_dir = {settings!r}
c.LabApp.workspaces_dir = {workspaces!r}
c.LabApp.expose_app_in_browser = True
c.LabApp.news_url = None
'''


class LabUnavailable(RuntimeError):
    """JupyterLab could not be started here (the message says why)."""


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def descendants(pid: int) -> list[int]:
    """Process ids below `pid` (Linux /proc); kernels run in their own session, so killpg misses them."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@dataclass
class LabServer:
    """`jupyter lab` on a free loopback port, with a token and temporary state directories."""

    workdir: Path
    root: Path = REPO
    port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "jupyterlab.log"

    @property
    def refused_path(self) -> Path:
        return self.workdir / "refused_saves.txt"

    def refused_saves(self) -> list[str]:
        """Paths JupyterLab tried to save (and the server refused), in order."""
        try:
            return self.refused_path.read_text().splitlines()
        except OSError:
            return []

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def log_offset(self) -> int:
        """Where the server log ends now; `log_problems(offset)` reads what came after."""
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_problems(self, offset: int) -> list[str]:
        """Server-side errors logged since `offset` (the reader never sees them; the lead should)."""
        with self.log_path.open("rb") as log:
            log.seek(offset)
            lines = log.read().decode(errors="replace").splitlines()
        return [line for line in lines if line.startswith("[E ")]

    def _prepare(self) -> dict[str, str]:
        dirs = {name: self.workdir / name for name in
                ("config", "data", "runtime", "settings", "workspaces", "checkpoints", "ipython")}
        for path in dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        for plugin, values in LAB_SETTINGS.items():
            target = dirs["settings"] / f"{plugin}.jupyterlab-settings"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values, indent=2))
        (dirs["config"] / "jupyter_server_config.py").write_text(SERVER_CONFIG.format(
            refused=str(self.refused_path), port=self.port, allow_root=os.geteuid() == 0, root=str(self.root), token=self.token,
            checkpoints=str(dirs["checkpoints"]), settings=str(dirs["settings"]),
            workspaces=str(dirs["workspaces"])))
        env = dict(os.environ)
        env.update(JUPYTER_CONFIG_DIR=str(dirs["config"]), JUPYTER_DATA_DIR=str(dirs["data"]),
                   JUPYTER_RUNTIME_DIR=str(dirs["runtime"]), IPYTHONDIR=str(dirs["ipython"]),
                   JUPYTER_PLATFORM_DIRS="0", PYTHONUNBUFFERED="1")
        env.pop("JUPYTER_PATH", None)
        env.pop("JUPYTER_CONFIG_PATH", None)
        return env

    def start(self) -> None:
        """Start the server and wait until its API answers; LabUnavailable says why it did not."""
        if not JUPYTER.exists():
            raise LabUnavailable(f"{JUPYTER} does not exist (run `make install` first)")
        env = self._prepare()
        log = self.log_path.open("wb")
        self.process = subprocess.Popen([str(JUPYTER), "lab", "--no-browser"], cwd=self.root,
                                        env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LabUnavailable(f"`jupyter lab` exited with code {self.process.returncode}; "
                                     f"log {self.log_path}:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status", timeout=2)
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.3)
        raise LabUnavailable(f"`jupyter lab` did not answer on {self.url} within {START_TIMEOUT:.0f} s; "
                             f"log {self.log_path}:\n{self.log_tail()}")

    def api(self, method: str, path: str, timeout: float = 10) -> object:
        """Call the server's REST API with the token; the decoded JSON answer (None if empty)."""
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """End every session (and its kernel); a notebook's kernel must not outlive its check."""
        try:
            for session in self.api("GET", "/api/sessions") or []:  # type: ignore[union-attr]
                self.api("DELETE", f"/api/sessions/{session['id']}")
        except (OSError, urllib.error.URLError):
            pass

    def stop(self) -> None:
        """Stop the server, its process group and every kernel it started, gently then firmly."""
        if self.process is None or self.process.poll() is not None:
            return
        stragglers = descendants(self.process.pid)
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        kills = [(os.killpg, self.process.pid)] + [(os.kill, pid) for pid in stragglers]
        for kill, pid in kills:
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.process.wait(timeout=10)


def chromium_missing() -> str | None:
    """Why Chromium cannot be used here, or None when it can."""
    if not CHROMIUM.exists():
        return (f"Chromium is not installed at {CHROMIUM} (install Debian's package: "
                "apt-get install -y chromium; or set IDEM_CHROMIUM to its path)")
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is not executable"
    return None
