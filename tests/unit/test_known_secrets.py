"""The workspace's known secret values: learnt from what the policy redacts and from the values
assigned in dotenv-style secret files (which stay unread otherwise), scrubbed anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_lsp.config import IndexSettings
from agentic_lsp.errors import WorkspaceError
from agentic_lsp.index.discovery.dotenv_values import (
    assignments,
    is_dotenv_file,
    learnable,
    read_dotenv_file,
)
from agentic_lsp.index.discovery.known_secrets import KnownSecrets, replaced_values
from agentic_lsp.index.discovery.secrets import redact_secrets
from agentic_lsp.index.discovery.walk import discover
from agentic_lsp.navigation.readable import ReadableFiles

VALUE = "Zq8vLw3NpR7tYs"


def test_the_values_redacted_in_a_file_are_scrubbed_wherever_they_reappear() -> None:
    known = KnownSecrets()
    known.learn(f'DB_PASSWORD = "{VALUE}"\nNAME = "app"\n')
    assert len(known) == 1
    assert known.scrub(f"E   assert '{VALUE}' == 'x'") == "E   assert '[REDACTED]' == 'x'"
    data = {"out": [f"+ {VALUE}", (VALUE, 3)], VALUE: None}
    assert known.scrub_value(data) == {
        "out": ["+ [REDACTED]", ("[REDACTED]", 3)],
        "[REDACTED]": None,
    }
    assert known.scrub("app") == "app"
    # a value standing on its own, not a part of a longer name
    assert known.scrub(f"x{VALUE} {VALUE}_y ({VALUE})") == f"x{VALUE} {VALUE}_y ([REDACTED])"


def test_short_values_and_key_bodies() -> None:
    found: list[tuple[str, str]] = []
    redact_secrets('token = "abc1"\nkey = "-----BEGIN RSA PRIVATE KEY-----\n', found)
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x\nQ2w3e4r5t6\n"
    pem += "-----END RSA PRIVATE KEY-----"
    redact_secrets(pem, found)
    assert replaced_values(found) == {"MIIEowIBAAKCAQEA1x", "Q2w3e4r5t6"}


def test_refresh_reads_new_and_changed_files_only(tmp_path: Path) -> None:
    (tmp_path / "settings.py").write_text(f'DB_PASSWORD = "{VALUE}"\n')
    known = KnownSecrets()
    settings = IndexSettings()
    assert known.refresh(tmp_path, settings) == 1
    assert known.scrub(VALUE) == "[REDACTED]"
    assert known.refresh(tmp_path, settings) == 0
    (tmp_path / "other.py").write_text('api_key = "Hj5Kl9Mn2Bv8Cx"\n')
    assert known.refresh(tmp_path, settings) == 1
    assert known.scrub("Hj5Kl9Mn2Bv8Cx") == "[REDACTED]"
    off = KnownSecrets()
    assert off.refresh(tmp_path, IndexSettings(redact_secrets=False)) == 0 and len(off) == 0


ENV_VALUE = "CanaryEnv123xyz"
DOTENV = f"""\
# settings for local runs
export DB_PASSWORD={ENV_VALUE}
API_TOKEN="Tk9-quoted-value"  # a comment after a quoted value
SIGNING_KEY = 'swordfish'
UPSTREAM_ID=Ab12Cd34Ef56 # not secret-named, but shaped like a credential
DATABASE_URL=postgres://app:Pg7pass99@db.internal:5432/app
NODE_ENV=production
DB_HOST=db.internal:5432
DEBUG=true
PORT=8000
RETRIES=1234567
TIMEOUT=
SHORT_TOKEN=ab1
OTHER_SECRET=${{DB_PASSWORD}}
APP_NAME="My Demo App 2"
"""


def test_values_assigned_in_dotenv_files_are_learnt_but_the_files_stay_unread(
    tmp_path: Path,
) -> None:
    (tmp_path / ".env").write_text(DOTENV)
    (tmp_path / "app.py").write_text("import os\nNAME = 'demo'\n")
    settings = IndexSettings()
    assert discover(tmp_path, settings).secret_paths == [".env"]  # never an indexed file
    known = KnownSecrets()
    assert known.refresh(tmp_path, settings) == 2
    learnt = {"CanaryEnv123xyz", "Tk9-quoted-value", "swordfish", "Ab12Cd34Ef56", "Pg7pass99"}
    for value in learnt:
        assert known.scrub(f"E   assert '{value}' == 'x'") == "E   assert '[REDACTED]' == 'x'"
    assert len(known) == len(learnt)  # production, db.internal:5432, true, 8000, 1234567, …: no
    assert known.refresh(tmp_path, settings) == 0  # unchanged since
    (tmp_path / ".env.local").write_text("STRIPE_KEY=sk_Zz9Yy8Xx7Ww6\n")
    assert known.refresh(tmp_path, settings) == 1
    assert known.scrub("sk_Zz9Yy8Xx7Ww6") == "[REDACTED]"
    with pytest.raises(WorkspaceError, match="holds secrets"):
        ReadableFiles(tmp_path, settings).read(".env")


def test_a_dotenv_file_outside_the_workspace_or_too_large_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "elsewhere.env").write_text(f"DB_PASSWORD={ENV_VALUE}\n")
    (root / ".env").symlink_to(tmp_path / "elsewhere.env")
    (root / "big.env").write_text(f"DB_PASSWORD=Big{ENV_VALUE}\n" + "# padding\n" * 200)
    (root / ".env.example").write_text("DB_PASSWORD=Example9Value\n")  # a template: indexed
    settings = IndexSettings(max_file_bytes=1_000)
    assert sorted(discover(root, settings).secret_paths) == [".env", "big.env"]
    known = KnownSecrets()
    known.refresh(root, settings)
    assert known.scrub(ENV_VALUE) == ENV_VALUE
    assert known.scrub(f"Big{ENV_VALUE}") == f"Big{ENV_VALUE}"
    assert read_dotenv_file(root, ".env", settings) is None
    assert read_dotenv_file(root, "big.env", IndexSettings()) is not None  # only the size


def test_dotenv_parsing_and_what_is_not_a_secret() -> None:
    assert assignments('export A=1\nB = \'x y\' # c\nC="q\\""\n# D=no\nE=v # c\nF=a#b\n') == [
        ("A", "1"),
        ("B", "x y"),
        ("C", "q\\"),
        ("E", "v"),
        ("F", "a#b"),
    ]
    assert is_dotenv_file(".env") and is_dotenv_file("deploy/prod.env")
    assert is_dotenv_file("config/.env.production")
    assert not is_dotenv_file(".env.example") and not is_dotenv_file("id_rsa")
    for value in ("localhost", "changeme", "${OTHER}", "<your key>", "12345", "true"):
        assert not learnable("DB_PASSWORD", value, 6), value
    for value in ("127.0.0.1", "1.2.3.4.5", "us-east", "/var/lib/app", "https://x.org/a"):
        assert not learnable("SETTING", value, 6), value
    assert learnable("DB_PASSWORD", "swordfish", 6) and learnable("SETTING", "x9Y8z7W6", 6)
