"""Fixtures for the browser test: one JupyterLab server, one Chromium, one page, per session.

Both are stopped by their finalizers however the tests end. Missing Chromium or a JupyterLab
that cannot start skips the browser tests with the reason; it never passes them silently.
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from labdriver import CHROMIUM, CHROMIUM_ARGS, REPO, LabServer, LabUnavailable, chromium_missing  # noqa: E402
from labpage import FINDINGS, VIEWPORT, close_all  # noqa: E402

SCREENSHOTS = Path(os.environ.get("IDEM_SCREENSHOTS", REPO / "build" / "screenshots"))
@pytest.fixture(scope="session")
def screenshots() -> Path:
    """build/screenshots/ (git-ignored), emptied of the previous run's pictures."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()
    return SCREENSHOTS


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium, headless, through Playwright (never a downloaded browser)."""
    why = chromium_missing()
    if why:
        pytest.skip(why)
    from playwright.sync_api import Error, sync_playwright

    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    except Error as error:
        playwright.stop()
        pytest.skip(f"Chromium at {CHROMIUM} did not start: {str(error).splitlines()[0]}")
    try:
        yield chromium
    finally:
        chromium.close()
        playwright.stop()


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, browser: object) -> Iterator[LabServer]:
    """`jupyter lab` over the repository, its state in a temporary directory; stopped at the end."""
    server = LabServer(workdir=tmp_path_factory.mktemp("jupyterlab"))
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a killed pytest still stops the server
    try:
        server.start()
    except LabUnavailable as error:
        server.stop()
        signal.signal(signal.SIGTERM, previous)
        pytest.skip(f"JupyterLab cannot start: {error}")
    try:
        yield server
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: pytest then runs the finalizers that stop JupyterLab and Chromium."""
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def lab_app(browser: object, lab: LabServer) -> Iterator[object]:
    """One JupyterLab page for the session, loaded once; chapters open and close inside it."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[attr-defined]
    page = context.new_page()
    page.console_messages_seen = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda error: page.console_messages_seen.append(f"page error: {error}"))
    page.on("console", lambda msg: msg.type == "error" and page.console_messages_seen.append(f"console: {msg.text}"))
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=90_000)
    page.evaluate("() => window.jupyterapp.restored.then(() => { window.jupyterapp.shell.collapseLeft(); return true; })")
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def lab_page(lab_app: object, lab: LabServer, request: pytest.FixtureRequest) -> Iterator[object]:
    """The session's page; afterwards every notebook is closed unsaved and every kernel shut down."""
    lab_app.console_messages_seen.clear()  # type: ignore[attr-defined]
    yield lab_app
    close_all(lab_app)  # type: ignore[arg-type]
    lab.shutdown_kernels()
    seen = lab_app.console_messages_seen  # type: ignore[attr-defined]
    if seen:
        request.node.add_report_section("call", "browser console", "\n".join(seen[-30:]))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    findings = config.stash.get(FINDINGS, [])
    if not findings:
        return
    terminalreporter.section("browser check")
    for found in findings:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(found.counts.items()))
        phases = ", ".join(f"{k} {v}" for k, v in found.phases.items())
        terminalreporter.write_line(f"{found.notebook}: {found.seconds:.1f} s ({phases}); {counts}; "
                                    f"{len(found.problems)} problem(s)")
        for line in sorted(set(" ".join(e.split()[4:]) for e in found.server_errors)):
            terminalreporter.write_line(f"    server log: {line[:160]}")
    shots = sorted({s for found in findings for s in found.screenshots})
    terminalreporter.write_line(f"screenshots ({len(shots)}) in {SCREENSHOTS}:")
    for shot in shots:
        terminalreporter.write_line(f"  {shot.name}")
