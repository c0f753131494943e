"""The workspace's known secret values: learnt from what the policy redacts, scrubbed anywhere."""

from __future__ import annotations

from pathlib import Path

from agentic_lsp.config import IndexSettings
from agentic_lsp.index.discovery.known_secrets import KnownSecrets, replaced_values
from agentic_lsp.index.discovery.secrets import redact_secrets

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
