"""Secrets never enter the index: whole secret files by name, secret values inside files.

Fake credentials are generated per test run with the real shape of each kind (random base64,
random alphanumerics), so the rules are tested against what a leak looks like, not against a
fixed string the rule was written for.
"""

from __future__ import annotations

import base64
import importlib
import json
import secrets
import string
from pathlib import Path

import pytest

from agentic_lsp.index.discovery.entropy import looks_random, shannon_entropy
from agentic_lsp.index.discovery.secrets import REDACTED, is_secret_path, redact_secrets

ALNUM = string.ascii_letters + string.digits


def rand(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def b64(nbytes: int) -> str:
    return base64.b64encode(secrets.token_bytes(nbytes)).decode()


def b64url(nbytes: int) -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(nbytes)).decode().rstrip("=")


def aws_secret() -> str:
    # 40 characters of standard base64 (30 random bytes), the shape of an AWS secret access key
    return b64(30)


def jwt() -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = json.dumps({"sub": rand(ALNUM, 12), "iat": 1700000000}).encode()
    payload = base64.urlsafe_b64encode(body).decode().rstrip("=")
    return f"{header}.{payload}.{b64url(32)}"


def pem_private_key(label: str = "RSA PRIVATE KEY", lines: int = 12) -> str:
    body = "\n".join(b64(48) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n{b64(20)}\n-----END {label}-----"


def assert_redacted(text: str, secret: str, expected: int = 1) -> str:
    out, count = redact_secrets(text)
    assert secret not in out, out
    assert REDACTED in out
    assert count == expected, out
    assert out.count("\n") == text.count("\n")
    assert redact_secrets(out) == (out, 0), "redaction must be idempotent"
    return out


# --------------------------------------------------------------------------- secret files


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "config/.env.local",
        ".env.production",
        "deploy/prod.env",
        "certs/server.pem",
        "tls/server.key",
        "keys/client.p12",
        "keys/client.pfx",
        "android/release.jks",
        "app.keystore",
        "home/.ssh/id_rsa",
        "id_ed25519",
        "id_ecdsa_sk",
        ".npmrc",
        ".pypirc",
        ".netrc",
        ".git-credentials",
        "credentials.json",
        "credentials-prod.json",
        "gcp/my-service-account-123.json",
        ".aws/credentials",
        "home/.docker/config.json",
        "vault.kdbx",
        "helm/secrets.yaml",
        "secrets.yml",
        ".htpasswd",
        "infra/terraform.tfvars",
        "infra/terraform.tfstate",
        "infra/terraform.tfstate.backup",
        "CREDENTIALS.JSON",
    ],
)
def test_secret_files_are_recognised(path: str) -> None:
    assert is_secret_path(path)


@pytest.mark.parametrize(
    "path",
    [
        ".env.example",
        ".env.sample",
        ".env.template",
        "config/.env.local.example",
        "home/.ssh/id_rsa.pub",
        "id_ed25519.pub",
        "src/environment.py",
        "docs/keys.md",
        "src/keyboard.ts",
        "secrets.py",
        "src/agentic_lsp/index/discovery/secrets.py",
        "config.json",
        "docker-compose.yml",
        "package.json",
        "terraform/main.tf",
        "certs/README.md",
        "tests/test_credentials.py",
        "secrets.yaml.example",
    ],
)
def test_ordinary_files_are_not_secret(path: str) -> None:
    assert not is_secret_path(path)


# --------------------------------------------------------------------------- no false negatives


def test_pem_private_key_block_keeps_markers_and_line_count() -> None:
    key = pem_private_key()
    text = f"# deploy key\nKEY = '''\n{key}\n'''\nprint('ok')\n"
    out = assert_redacted(text, key.splitlines()[3])
    assert "-----BEGIN RSA PRIVATE KEY-----" in out
    assert "-----END RSA PRIVATE KEY-----" in out
    assert out.splitlines()[-1] == "print('ok')"
    assert not any(line in out for line in key.splitlines()[1:-1])


@pytest.mark.parametrize("label", ["PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
def test_other_private_key_labels(label: str) -> None:
    key = pem_private_key(label, lines=4)
    out = assert_redacted(key + "\n", key.splitlines()[1])
    assert out.startswith(f"-----BEGIN {label}-----\n{REDACTED}\n")


def test_private_key_inside_service_account_json() -> None:
    body = "\\n".join(b64(48) for _ in range(6))
    key = f"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n"
    text = json.dumps({"type": "service_account", "private_key": key}, indent=2).replace(
        "\\\\n", "\\n"
    )
    out, count = redact_secrets(text)
    assert body.split("\\n")[0] not in out
    assert count >= 1
    assert '"type": "service_account"' in out


def test_aws_access_key_id_and_secret_key() -> None:
    key_id = "AKIA" + rand(string.ascii_uppercase + string.digits, 16)
    secret = aws_secret()
    ini = f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\n"
    out = assert_redacted(ini, key_id, expected=2)
    assert secret not in out
    assert "aws_secret_access_key = " + REDACTED in out
    temp_id = "ASIA" + rand(string.ascii_uppercase + string.digits, 16)
    assert_redacted(f"creds = {{'AccessKeyId': '{temp_id}'}}\n", temp_id)


@pytest.mark.parametrize(
    "make",
    [
        lambda: "ghp_" + rand(ALNUM, 36),
        lambda: "gho_" + rand(ALNUM, 36),
        lambda: "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59),
        lambda: (
            "xoxb-"
            + rand(string.digits, 12)
            + "-"
            + rand(string.digits, 13)
            + "-"
            + rand(ALNUM, 24)
        ),
        lambda: "xoxp-" + rand(string.digits, 12) + "-" + rand(ALNUM, 32),
        lambda: "sk_live_" + rand(ALNUM, 24),
        lambda: "rk_live_" + rand(ALNUM, 24),
        lambda: "AIza" + rand(ALNUM + "_-", 35),
        lambda: "glpat-" + rand(ALNUM, 20),
        lambda: "npm_" + rand(ALNUM, 36),
        lambda: "hf_" + rand(ALNUM, 34),
        jwt,
    ],
)
def test_well_known_token_formats(make) -> None:  # type: ignore[no-untyped-def]
    token = make()
    for text in (
        f"client = Client({token!r})\n",
        f"curl -H 'X-Auth: {token}' https://api.example.com\n",
        f"// token for staging\nconst t = `{token}`;\n",
    ):
        assert_redacted(text, token)


@pytest.mark.parametrize(
    ("template", "kept"),
    [
        ('password = "{v}"', 'password = "'),
        ('DB_PASSWORD = "{v}"', "DB_PASSWORD = "),
        ("self.secret_key = '{v}'", "self.secret_key = '"),
        ('api_key: str = "{v}"', "api_key: str = "),
        ('connect(user="app", password="{v}")', 'user="app", password="'),
        ('const apiKey = "{v}";', "const apiKey = "),
        ('client_secret := "{v}"', "client_secret := "),
        ("'password' => '{v}',", "'password' => '"),
        ('config.access_token = "{v}"', "config.access_token = "),
        ('{{"client_secret": "{v}"}}', '"client_secret": "'),
        ("password: {v}", "password: "),
        ("  db_password: '{v}'", "  db_password: '"),
        ("export GITHUB_TOKEN={v}", "export GITHUB_TOKEN="),
        ("API_KEY={v}", "API_KEY="),
        ("- POSTGRES_PASSWORD={v}", "- POSTGRES_PASSWORD="),
        ("spring.datasource.password={v}", "spring.datasource.password="),
        ('private static final String SECRET = "{v}";', 'String SECRET = "'),
    ],
)
def test_secret_assignments_keep_the_name(template: str, kept: str) -> None:
    value = rand(string.ascii_lowercase, 6) + rand(string.digits, 3) + "!" + rand(ALNUM, 4)
    text = "line one\n" + template.format(v=value) + "\nline three\n"
    out = assert_redacted(text, value)
    assert kept in out
    assert out.startswith("line one\n") and out.endswith("\nline three\n")


def test_credentials_in_urls() -> None:
    password = rand(ALNUM, 13) + "7"
    text = f'DATABASE_URL = "postgres://admin:{password}@db.internal:5432/app"\n'
    out = assert_redacted(text, password)
    assert f"postgres://admin:{REDACTED}@db.internal:5432/app" in out
    git = f"https://oauth2:{rand(ALNUM, 19)}5@gitlab.example.com/group/repo.git"
    assert "oauth2:" + REDACTED + "@gitlab.example.com" in assert_redacted(git, git[16:36])


def test_bearer_token_in_header() -> None:
    token = rand(ALNUM, 20) + "." + rand(ALNUM, 12)
    out = assert_redacted(f'headers = {{"Authorization": "Bearer {token}"}}\n', token)
    assert f'"Bearer {REDACTED}"' in out


@pytest.mark.parametrize("make", [lambda: b64(33), lambda: b64url(40), lambda: rand(ALNUM, 40)])
def test_generic_high_entropy_strings(make) -> None:  # type: ignore[no-untyped-def]
    # A random token can, rarely, read like words; retry a few draws to keep the test exact.
    token = next(t for t in (make() for _ in range(20)) if looks_random(t))
    assert_redacted(f'WEBHOOK = "{token}"\nother = 1\n', token)


def test_generic_hex_secret() -> None:
    token = secrets.token_hex(32)
    assert_redacted(f"flask_app.config.update(SESSION_SALT='{token}')\n", token)


def test_counts_every_secret_and_keeps_lines() -> None:
    values = [rand(ALNUM, 12) + "9" for _ in range(3)]
    text = "\n".join(f"password{i} = '{v}'" for i, v in enumerate(values))
    text = text.replace("password0", "password").replace("password1", "db_password")
    text = text.replace("password2", "admin_password")
    out, count = redact_secrets(text + "\n")
    assert count == 3
    assert not any(v in out for v in values)
    assert len(out.splitlines()) == 3


def test_crlf_files_are_redacted_too() -> None:
    value = rand(ALNUM, 16) + "7"
    out = assert_redacted(f"user=app\r\npassword={value}\r\nport=5432\r\n", value)
    assert out.split("\r\n")[1] == f"password={REDACTED}"


# --------------------------------------------------------------------------- no false positives


@pytest.mark.parametrize(
    "module",
    [
        "json.decoder",
        "pathlib",
        "argparse",
        "typing",
        "tokenize",
        "http.client",
        "ssl",
        "urllib.parse",
        "logging",
        "subprocess",
    ],
)
def test_real_library_code_is_left_alone(module: str) -> None:
    source = Path(importlib.import_module(module).__file__ or "").read_text(encoding="utf-8")
    out, count = redact_secrets(source)
    assert count == 0
    assert out == source


def test_this_projects_own_discovery_code_is_left_alone() -> None:
    import agentic_lsp.index.discovery.exclusions as exclusions
    import agentic_lsp.index.discovery.walk as discovery

    for module in (discovery, exclusions):
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        assert redact_secrets(source) == (source, 0)


@pytest.mark.parametrize(
    "line",
    [
        'request_id = "550e8400-e29b-41d4-a716-446655440000"',
        "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        "    - uses: actions/checkout@b4ffde65f46336ab88eb53be808477a3936bae11",
        "requests==2.31.0 --hash=sha256:"
        "942c5a758f98d790eaed1a29cb6eefc7ffb0d1cf7af05c3d2791656dbd6ad1e1",
        '"integrity": "sha512-Nx1gNrJ3bGJ3AgS1dv3GZ1VjeEK8D3mWhQEo3FgL5gq0xTjvSS3lC2tnN4kO'
        'OW9cBOyW1q0QOYKPFdGfYAHHhQ=="',
        "See https://github.com/python/cpython/blob/main/Lib/pathlib.py for details.",
        'url = "https://example.com/api/v1/users?page=2"',
        'path = "/usr/local/lib/python3.11/site-packages/agentic_lsp/index/discovery/walk.py"',
        "token = tokenizer.next_token()",
        "tokens = tokenize(source)",
        'token_type = "bearer"',
        "max_tokens = 4096",
        'password_field = "password"',
        'secret_name = "db-credentials"',
        "    password: string;",
        "    token: str",
        "api_key: Optional[str] = None",
        'api_key = os.environ["OPENAI_API_KEY"]',
        'password = "<your-password>"',
        "password: ${DB_PASSWORD}",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        'password = ""',
        'SECRET_KEY = "changeme"',
        "token = None",
        "self.password = password",
        'raise ValueError("invalid token: expected an identifier")',
        "class VibeVoiceAcousticTokenizerCausalConv1d(nn.Module):",
        "#include <ATen/native/transformers/cuda/mem_eff_attention/kernel_forward.h>",
        "def test_discovery_honours_nested_gitignore_with_negation(tmp_path):",
        "supercalifragilisticexpialidociousness_is_a_very_long_english_word = 1",
        "background: url(data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
        "AAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==);",
        'mask_token = "[MASK]"',
        'USER_PASSWD = "%s:%s" % (USER, PASSWD)',
        "password = getpass.getpass()",
        "    password: Optional[str] = None",
        'bos_token = "<s>"',
    ],
)
def test_ordinary_code_is_not_redacted(line: str) -> None:
    assert redact_secrets(line + "\n") == (line + "\n", 0)


def test_empty_text() -> None:
    assert redact_secrets("") == ("", 0)


def test_entropy_measure() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert shannon_entropy(b64(300)) > 5.5


def test_a_base64_secret_that_starts_with_a_slash_is_no_path() -> None:
    # one AWS secret key in 64 starts with "/"; it once passed as a path, unredacted
    secret = "/sXSAi4+ZlWSEtE7You75wqaohaOtLSeTWrSp043"
    out, count = redact_secrets(f"[default]\naws_secret_access_key = {secret}\n")
    assert secret not in out and count == 1
    out, _ = redact_secrets('secret_key = "/sXSAi4+ZlWSEtE7You75wqaohaOtLSeTWrSp043"\n')
    assert "sXSAi4" not in out
    for path in ("/usr/local/share/keys", "/etc/ssl/private/server.key", "~/.ssh/id_rsa"):
        assert redact_secrets(f"private_key = {path}\n") == (f"private_key = {path}\n", 0)
