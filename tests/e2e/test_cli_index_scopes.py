"""``index.scopes`` end to end through the command line (subprocesses, the real embedding model,
Qdrant Edge, a real git repository): a monorepo's workspace file names two packages; only they
are indexed and searched, with every result labelled by its scope; a third scope builds only
its own store, and a removed scope keeps its store on disk but is no longer searched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_harness import isolated_env

PACKAGES = {
    "pkg/billing/invoices.py": (
        "def compute_invoice_total(lines):\n"
        '    """Sum the invoice lines after the discount."""\n'
        "    return sum(line.amount for line in lines)\n"
    ),
    "pkg/billing/taxes.py": "def vat_for_invoice(total):\n    return total * 0.2\n",
    "pkg/shipping/parcels.py": (
        "def schedule_parcel_pickup(parcel, invoice_total):\n"
        '    """Book a courier for the parcel once its invoice is paid."""\n'
        "    return {'parcel': parcel, 'paid': invoice_total}\n"
    ),
    "pkg/reports/monthly.py": "def monthly_invoice_report(rows):\n    return len(rows)\n",
    "tools/legacy_scanner.py": "def scan_legacy_invoice_archive():\n    return 'unrelated'\n",
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=cwd, capture_output=True, check=True)  # fmt: skip


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "agentic_lsp", *args], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _scopes(root: Path, *scopes: str) -> None:
    listed = ", ".join(f'"{s}"' for s in scopes)
    (root / ".agentic-lsp.toml").write_text(f"[index]\nscopes = [{listed}]\n", encoding="utf-8")


def _index(env: dict[str, str], root: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(_cli(env, "index", str(root), "--json").stdout)


def _search(env: dict[str, str], root: Path, query: str) -> list[dict]:  # type: ignore[type-arg]
    done = _cli(env, "search", query, "-w", str(root), "--json", "--no-bridge", "-k", "20")
    return json.loads(done.stdout)["results"]


@pytest.mark.timeout(900)
def test_scopes_index_search_grow_and_shrink(tmp_path: Path) -> None:
    root = tmp_path / "mono"
    for rel, text in PACKAGES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    _scopes(root, "pkg/billing", "pkg/shipping")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    cache = tmp_path / "index-cache"
    env = {**isolated_env(tmp_path), "AGENTIC_LSP_CACHE_DIR": str(cache)}

    first = _index(env, root)
    assert first["files"] == 3 and first["parsed"] == 3, first  # billing (2) + shipping (1)
    found = _search(env, root, "invoice")
    assert {r["path"] for r in found} == {
        "pkg/billing/invoices.py",
        "pkg/billing/taxes.py",
        "pkg/shipping/parcels.py",
    }
    assert {(r["path"].rsplit("/", 1)[0], r["scope"]) for r in found} == {
        ("pkg/billing", "pkg/billing"),
        ("pkg/shipping", "pkg/shipping"),
    }
    unrelated = _search(env, root, "scan_legacy_invoice_archive legacy scanner")
    assert not [r for r in unrelated if r["path"].startswith("tools/")], unrelated
    metas = list(cache.rglob("store/meta.json"))
    assert len(metas) == 2 and all(m.parent.parent.parent.name == "scopes" for m in metas)

    _scopes(root, "pkg/billing", "pkg/shipping", "pkg/reports")
    grown = _index(env, root)
    assert grown["files"] == 4 and grown["parsed"] == 1, grown  # only the new scope's file
    assert grown["unchanged"] + grown["rechecked"] == 3, grown
    reports = [r for r in _search(env, root, "monthly invoice report") if r["scope"]]
    assert any(r["path"] == "pkg/reports/monthly.py" and r["scope"] == "pkg/reports"
               for r in reports), reports  # fmt: skip
    assert len(list(cache.rglob("scopes/*/store"))) == 3

    _scopes(root, "pkg/billing", "pkg/reports")
    shrunk = _index(env, root)
    assert shrunk["files"] == 3 and shrunk["parsed"] == 0, shrunk
    assert len(list(cache.rglob("scopes/*/store"))) == 3  # shipping's store is kept on disk
    paths = {r["path"] for r in _search(env, root, "parcel pickup invoice courier")}
    assert "pkg/shipping/parcels.py" not in paths and "pkg/billing/invoices.py" in paths

    _scopes(root, "pkg/billing", "pkg/shipping", "pkg/reports")
    back = _index(env, root)  # shipping re-added: its store is reused, nothing parsed
    assert back["files"] == 4 and back["parsed"] == 0, back

    doctor = json.loads(_cli(env, "doctor", "-w", str(root), "--json").stdout)
    (store,) = [c for c in doctor["checks"] if c["name"] == "index store"]
    assert store["status"] == "ok", store
    assert "3 scopes" in store["detail"] and "pkg/reports: 1 files" in store["detail"], store
