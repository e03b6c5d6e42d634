"""No secret on a command line (issue 43): the README stores the Stripe key and the webhook's
signing secret as chapter 10 does, read with `read -s` into a file that SSM reads, so neither
shows on the screen, in the shell history or in the process list."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECRET_PREFIXES = ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_")


def _commands(text: str) -> list[str]:
    """Every command the text shows: the lines of its fenced blocks and its inline code."""
    fenced = re.findall(r"^ *```[^\n]*\n(.*?)^ *```", text, re.M | re.S)
    lines = [line.strip() for block in fenced for line in block.splitlines()]
    outside = re.sub(r"^ *```[^\n]*\n.*?^ *```", "", text, flags=re.M | re.S)
    return lines + re.findall(r"`([^`\n]+)`", outside)


def test_the_readme_puts_no_secret_on_a_command_line():
    commands = _commands((ROOT / "README.md").read_text(encoding="utf-8"))
    for command in commands:
        code = command.split("#", 1)[0].strip()  # a comment may name the secret's kind
        if " " in code:  # a command, not a prefix named in the prose
            assert not any(prefix in code for prefix in SECRET_PREFIXES), f"a secret in: {command}"
        if "put-parameter" in code and "SecureString" in code:
            assert "--value file://" in code, f"a secret on the command line: {command}"


def test_the_readme_stores_each_secret_as_chapter_10_does():
    commands = _commands((ROOT / "README.md").read_text(encoding="utf-8"))
    stored = [c for c in commands if "put-parameter" in c and "SecureString" in c]
    assert {re.search(r"--name (\S+)", c).group(1) for c in stored} >= {
        "/idem/stripe/secret-key", "/idem/stripe/webhook-secret"}
    assert sum(c.startswith("read -rs ") for c in commands) >= len(stored)
