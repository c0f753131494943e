"""Workspace discovery on real trees: ignore files, default excludes, binaries, symlinks, secrets.

Every tree is built in ``tmp_path``; ``.git/info/exclude`` is tested in a real repository made
with pygit2. ``classify_path`` (live sync) must agree with ``discover`` on every file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pygit2
import pytest

from agentic_lsp.config import IndexSettings
from agentic_lsp.index.discovery.secrets import REDACTED
from agentic_lsp.index.discovery.walk import (
    IgnoreRules,
    classify_path,
    discover,
    read_indexable_text,
)
from agentic_lsp.index.models import DiscoveredFile, DiscoveryResult, SkipReason

R = SkipReason


def write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def found(result: DiscoveryResult) -> set[str]:
    return {f.rel_path for f in result.files}


def settings(**kwargs: object) -> IndexSettings:
    return IndexSettings.model_validate(kwargs)


def all_file_paths(root: Path) -> list[str]:
    """Every file under ``root`` (not following folder links), including skipped ones."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        names = filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in names:
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if not os.path.isdir(os.path.join(root, rel)):
                out.append(rel)
    return sorted(out)


def assert_classify_agrees(root: Path, config: IndexSettings, result: DiscoveryResult) -> None:
    rules = IgnoreRules.load(root, config)
    by_path = {f.rel_path: f for f in result.files}
    paths = set(all_file_paths(root)) | set(by_path)
    for rel in sorted(paths):
        single = classify_path(root, rel, config, rules)
        if rel in by_path:
            assert single == by_path[rel], rel
        else:
            assert isinstance(single, SkipReason), rel


# --------------------------------------------------------------------------- ignore files


def test_nested_gitignore_negation_and_dir_only_patterns(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n!keep.log\ndata/\n/rooted.txt\nbuild_out/\n")
    write(tmp_path, "sub/.gitignore", "!*.log\nlocal.txt\n")
    for rel in [
        "app.py",
        "debug.log",
        "keep.log",
        "sub/trace.log",
        "sub/local.txt",
        "sub/deeper/local.txt",
        "other/local.txt",
        "data/x.py",
        "pkg/data/y.py",
        "notdata/data",
        "rooted.txt",
        "sub/rooted.txt",
        "build_out/gen.py",
    ]:
        write(tmp_path, rel)
    result = discover(tmp_path, settings())
    assert found(result) == {
        "app.py",
        "keep.log",
        "sub/trace.log",
        "other/local.txt",
        "notdata/data",
        "sub/rooted.txt",
    }
    # debug.log, sub/local.txt, sub/deeper/local.txt, rooted.txt + folders data, pkg/data, build_out
    assert result.skipped[R.IGNORED] == 7
    assert_classify_agrees(tmp_path, settings(), result)


def test_nothing_inside_an_ignored_folder_can_be_re_included(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "gen/\n!gen/keep.py\n")
    write(tmp_path, "gen/keep.py")
    write(tmp_path, "main.py")
    result = discover(tmp_path, settings())
    assert found(result) == {"main.py"}
    rules = IgnoreRules.load(tmp_path, settings())
    assert rules.is_ignored("gen/keep.py", is_dir=False)
    assert classify_path(tmp_path, "gen/keep.py", settings()) is R.IGNORED


def test_agentic_lspignore_adds_and_re_includes(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.tmp\n")
    write(tmp_path, ".agentic-lspignore", "fixtures/big/\n*.snap\n")
    write(tmp_path, "docs/.agentic-lspignore", "!notes.tmp\ndraft.md\n")
    for rel in [
        "a.py",
        "x.tmp",
        "docs/notes.tmp",
        "docs/draft.md",
        "docs/final.md",
        "fixtures/big/blob.json",
        "fixtures/small.json",
        "ui/App.snap",
        "other/draft.md",
    ]:
        write(tmp_path, rel)
    result = discover(tmp_path, settings())
    assert found(result) == {
        "a.py",
        "docs/notes.tmp",
        "docs/final.md",
        "fixtures/small.json",
        "other/draft.md",
    }
    assert_classify_agrees(tmp_path, settings(), result)


def test_configured_excludes(tmp_path: Path) -> None:
    for rel in ["src/a.py", "src/schema.gen.py", "docs/private/plan.md", "docs/public.md"]:
        write(tmp_path, rel)
    config = settings(exclude=["*.gen.py", "docs/private/"])
    result = discover(tmp_path, config)
    assert found(result) == {"src/a.py", "docs/public.md"}
    assert result.skipped[R.IGNORED] == 2
    assert_classify_agrees(tmp_path, config, result)


def test_git_info_exclude_in_a_real_repository(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path))
    info = Path(repo.path) / "info"
    info.mkdir(exist_ok=True)
    (info / "exclude").write_text("local_only.py\nscratch/\n")
    for rel in ["main.py", "local_only.py", "scratch/try.py", "pkg/local_only.py"]:
        write(tmp_path, rel)
    result = discover(tmp_path, settings())
    assert found(result) == {"main.py"}
    assert R.DEFAULT_EXCLUDE in result.skipped  # the .git folder itself
    assert repo.path_is_ignored("local_only.py")
    assert_classify_agrees(tmp_path, settings(), result)


def test_ignore_rules_reload_after_a_gitignore_changes(tmp_path: Path) -> None:
    write(tmp_path, "pkg/.gitignore", "*.out\n")
    write(tmp_path, "pkg/run.out")
    write(tmp_path, "pkg/deep/run.out")
    rules = IgnoreRules.load(tmp_path, settings())
    assert rules.is_ignored("pkg/deep/run.out", is_dir=False)
    write(tmp_path, "pkg/.gitignore", "# nothing ignored now\n")
    assert rules.is_ignored("pkg/deep/run.out", is_dir=False)  # cached until told
    assert IgnoreRules.is_ignore_file("pkg/.gitignore")
    rules.invalidate("pkg/.gitignore")
    assert not rules.is_ignored("pkg/deep/run.out", is_dir=False)
    assert not rules.is_ignored("pkg/run.out", is_dir=False)
    write(tmp_path, ".agentic-lspignore", "pkg/deep/\n")
    rules.invalidate(".agentic-lspignore")
    assert rules.is_ignored("pkg/deep/run.out", is_dir=False)


# --------------------------------------------------------------------------- default excludes


def test_default_excluded_folders_are_counted_once(tmp_path: Path) -> None:
    for i in range(30):
        write(tmp_path, f"node_modules/lib{i}/index.js", "module.exports = 1\n")
    for rel in [
        "src/app.py",
        "src/__pycache__/app.cpython-311.pyc",
        ".venv/pyvenv.cfg",
        ".venv/lib/site.py",
        "myenv/pyvenv.cfg",
        "myenv/lib/x.py",
        "env/settings.py",  # a folder called env without pyvenv.cfg is source
        "dist/bundle.js",
        "build/__init__.py",  # a Python package named build is source
        "target/CACHEDIR.TAG",
        "target/debug/main.d",
        "java/src/main/java/org/x/build/Tool.java",
        "pkg.egg-info/PKG-INFO",
        ".mypy_cache/3.11/x.json",
        "vendor/modules.txt",
        "vendor/github.com/x/y.go",
        "third_party/vendor/lib.c",
        "out/report.txt",
    ]:
        write(tmp_path, rel)
    result = discover(tmp_path, settings())
    assert found(result) == {
        "src/app.py",
        "env/settings.py",
        "build/__init__.py",
        "java/src/main/java/org/x/build/Tool.java",
        "third_party/vendor/lib.c",
    }
    excluded = set(result.skipped_examples[R.DEFAULT_EXCLUDE])
    assert "node_modules" in excluded
    # node_modules, __pycache__, .venv, myenv, dist, target, egg-info, .mypy_cache, vendor, out
    assert result.skipped[R.DEFAULT_EXCLUDE] == 10
    assert_classify_agrees(tmp_path, settings(), result)


@pytest.mark.parametrize(
    "name",
    [
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "Cargo.lock",
        "uv.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
    ],
)
def test_lock_files(tmp_path: Path, name: str) -> None:
    write(tmp_path, f"app/{name}", '{"lockfileVersion": 3}\n')
    write(tmp_path, "app/main.py")
    result = discover(tmp_path, settings())
    assert found(result) == {"app/main.py"}
    assert result.skipped == {R.DEFAULT_EXCLUDE: 1}
    assert classify_path(tmp_path, f"app/{name}", settings()) is R.DEFAULT_EXCLUDE


def test_hidden_files_and_the_ones_kept(tmp_path: Path) -> None:
    for rel in [
        "main.py",
        ".hidden.py",
        ".config/tool.toml",
        ".github/workflows/ci.yml",
        ".gitlab-ci.yml",
        ".pre-commit-config.yaml",
        ".env.example",
        ".git/config",
    ]:
        write(tmp_path, rel)
    default = discover(tmp_path, settings())
    assert found(default) == {
        "main.py",
        ".github/workflows/ci.yml",
        ".gitlab-ci.yml",
        ".pre-commit-config.yaml",
        ".env.example",
    }
    with_hidden = discover(tmp_path, settings(include_hidden=True))
    assert found(with_hidden) == found(default) | {".hidden.py", ".config/tool.toml"}
    for config, result in ((settings(), default), (settings(include_hidden=True), with_hidden)):
        assert_classify_agrees(tmp_path, config, result)


# --------------------------------------------------------------------------- content checks


def test_minified_by_name_and_by_content(tmp_path: Path) -> None:
    long_line = "var a=" + ",".join(f"b{i}=function(){{return {i}}}" for i in range(400)) + ";\n"
    prose = (
        "This paragraph is written on one long line, as editors with soft wrap do. " * 8
    ) + "\n"
    write(tmp_path, "static/app.min.js", "x")
    write(tmp_path, "static/site.min.css", "x")
    write(tmp_path, "static/app.js.map", "{}")
    write(tmp_path, "static/bundle.js", long_line * 3)
    write(tmp_path, "static/app.js", "function a() {\n  return 1;\n}\n" * 100)
    write(tmp_path, "docs/long-lines.md", prose * 20)
    result = discover(tmp_path, settings())
    assert found(result) == {"static/app.js", "docs/long-lines.md"}
    assert result.skipped == {R.MINIFIED: 4}
    assert_classify_agrees(tmp_path, settings(), result)


def test_binary_by_nul_byte_and_by_extension_without_reading(tmp_path: Path) -> None:
    write(tmp_path, "data/blob", b"header\x00\x01\x02" + b"x" * 100)
    write(tmp_path, "data/late_nul.txt", b"a" * 9000 + b"\x00")  # NUL after the first 8 KiB
    write(tmp_path, "img/logo.png", b"\x89PNG\r\n\x1a\n")
    os.mkfifo(tmp_path / "img/pipe.png")  # opening a FIFO would block: proves no read
    write(tmp_path, "lib/native.so", b"\x7fELF")
    write(tmp_path, "src/mod.py", "print('hi')\n")
    result = discover(tmp_path, settings())
    assert found(result) == {"src/mod.py", "data/late_nul.txt"}
    assert result.skipped == {R.BINARY: 4}
    assert read_indexable_text(tmp_path, "data/late_nul.txt", settings()) == (
        "a" * 9000 + "\x00",
        0,
    )
    assert_classify_agrees(tmp_path, settings(), result)


def test_known_unchanged_files_are_not_read_again_and_every_other_check_still_runs(
    tmp_path: Path,
) -> None:
    write(tmp_path, "bin/run", "#!/usr/bin/env python3\nprint('hi')\n")
    write(tmp_path, "data/notes.txt", "plain words\n")
    write(tmp_path, "data/touched.txt", "more words\n")
    write(tmp_path, "src/mod.py", "x = 1\n")
    write(tmp_path, "data/big.txt", "words\n" * 300)
    first = discover(tmp_path, settings())
    known = {f.rel_path: f for f in first.files}
    assert known["bin/run"].language == "python"  # from the shebang, which a known file keeps

    def swap_keeping_stat(rel: str, content: bytes) -> None:
        before = os.stat(tmp_path / rel)
        (tmp_path / rel).write_bytes(content)
        os.utime(tmp_path / rel, ns=(before.st_atime_ns, before.st_mtime_ns))

    # Same size and mtime: taken as the same content (as the indexer takes it), so not read.
    swap_keeping_stat("data/notes.txt", b"plain\x00words\n")
    assert discover(tmp_path, settings()).skipped == {R.BINARY: 1}  # read: binary now
    assert found(discover(tmp_path, settings(), known=known)) == set(known)
    # A changed mtime is read again; name, ignore and size checks run for known files too.
    (tmp_path / "data/touched.txt").write_bytes(b"more\x00words\n")
    os.utime(tmp_path / "data/touched.txt", ns=(1, known["data/touched.txt"].mtime_ns + 10**9))
    write(tmp_path, ".gitignore", "src/\n")
    again = discover(tmp_path, settings(max_file_bytes=1000), known=known)
    assert found(again) == {"bin/run", "data/notes.txt"}
    assert again.skipped == {R.BINARY: 1, R.IGNORED: 1, R.TOO_LARGE: 1, R.DEFAULT_EXCLUDE: 1}
    assert {f.rel_path: f.language for f in again.files}["bin/run"] == "python"


def test_too_large_by_stat_with_a_configurable_cap(tmp_path: Path) -> None:
    write(tmp_path, "exact.py", "x = 1\n" * 333 + "#\n")  # 2000 bytes
    write(tmp_path, "over.py", "x = 1\n" * 333 + "##\n")  # 2001 bytes
    with open(tmp_path / "huge.sql", "wb") as fh:  # sparse 3 GB file: reading it would hang
        fh.truncate(3 * 1024**3)
    config = settings(max_file_bytes=2000)
    result = discover(tmp_path, config)
    assert found(result) == {"exact.py"}
    assert result.skipped == {R.TOO_LARGE: 2}
    assert read_indexable_text(tmp_path, "over.py", config) is R.TOO_LARGE
    assert found(discover(tmp_path, settings(max_file_bytes=5000))) == {"exact.py", "over.py"}
    assert_classify_agrees(tmp_path, config, result)


def test_secret_files_are_skipped_with_their_reason(tmp_path: Path) -> None:
    for rel in [
        ".env",
        "config/.env.production",
        "deploy/id_rsa",
        "deploy/id_rsa.pub",
        "certs/server.pem",
        "gcp/credentials.json",
        "infra/terraform.tfstate",
        "app.py",
    ]:
        write(tmp_path, rel, "AWS_SECRET_ACCESS_KEY=abc\n")
    for config in (settings(), settings(include_hidden=True)):
        result = discover(tmp_path, config)
        assert found(result) == {"app.py", "deploy/id_rsa.pub"}
        assert result.skipped[R.SECRET] == 6
        assert classify_path(tmp_path, ".env", config) is R.SECRET
    assert read_indexable_text(tmp_path, ".env", settings()) is R.SECRET


def test_read_indexable_text_redacts_and_detects_binary(tmp_path: Path) -> None:
    token = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
    write(tmp_path, "conf.py", f"USER = 'app'\nGITHUB_TOKEN = '{token}'\nDEBUG = True\n")
    text, count = read_indexable_text(tmp_path, "conf.py", settings())  # type: ignore[misc]
    assert count == 1
    assert text == f"USER = 'app'\nGITHUB_TOKEN = '{REDACTED}'\nDEBUG = True\n"
    plain = read_indexable_text(tmp_path, "conf.py", settings(redact_secrets=False))
    assert plain == ((tmp_path / "conf.py").read_text(), 0)
    write(tmp_path, "latin1.txt", ("caf\xe9 na\xefve " * 50).encode("latin-1"))
    assert read_indexable_text(tmp_path, "latin1.txt", settings()) is R.BINARY
    write(tmp_path, "one_bad_byte.txt", b"ok " * 500 + b"\xff")
    assert read_indexable_text(tmp_path, "one_bad_byte.txt", settings()) == (
        "ok " * 500 + "\ufffd",
        0,
    )
    assert read_indexable_text(tmp_path, "missing.py", settings()) is R.UNREADABLE


# --------------------------------------------------------------------------- symlinks


def test_symlinks_inside_outside_broken_and_looping(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "elsewhere"
    write(outside, "leak.py", "SECRET = 1\n")
    write(root, "src/real.py")
    write(root, "src/pkg/mod.py")
    write(root, ".gitignore", "generated/\n")
    write(root, "generated/api.py")
    (root / "link_to_real.py").symlink_to(root / "src/real.py")
    (root / "link_out.py").symlink_to(outside / "leak.py")
    (root / "dangling.py").symlink_to(root / "nope.py")
    (root / "src_again").symlink_to(root / "src", target_is_directory=True)
    (root / "gen_view").symlink_to(root / "generated", target_is_directory=True)
    (root / "out_dir").symlink_to(outside, target_is_directory=True)
    (root / "src/pkg/loop").symlink_to(root / "src", target_is_directory=True)
    (root / "src/pkg/self").symlink_to(root / "src/pkg", target_is_directory=True)
    started = time.perf_counter()
    result = discover(root, settings())
    assert time.perf_counter() - started < 2
    assert found(result) == {
        "src/real.py",
        "src/pkg/mod.py",
        "link_to_real.py",
        "gen_view/api.py",
    }
    assert result.skipped[R.SYMLINK_OUTSIDE] == 2  # link_out.py, out_dir
    assert result.skipped[R.UNREADABLE] == 1  # dangling.py
    # generated/ (gitignored) + src_again, loop, self (their targets are indexed already)
    assert result.skipped[R.IGNORED] == 4
    assert_classify_agrees(root, settings(), result)
    assert read_indexable_text(root, "link_out.py", settings()) is R.SYMLINK_OUTSIDE


def test_symlinked_root_is_walked(tmp_path: Path) -> None:
    write(tmp_path, "real/a.py")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert found(discover(tmp_path / "alias", settings())) == {"a.py"}


# --------------------------------------------------------------------------- errors, cancel


def test_special_and_unreadable_files_never_crash(tmp_path: Path) -> None:
    write(tmp_path, "ok.py")
    os.mkfifo(tmp_path / "events.fifo")
    locked = write(tmp_path, "locked.py")
    locked_dir = tmp_path / "private"
    write(locked_dir, "inner.py")
    locked.chmod(0)
    locked_dir.chmod(0)
    try:
        result = discover(tmp_path, settings())
        if os.geteuid() == 0:  # root reads anything: permission checks cannot trigger
            assert found(result) == {"ok.py", "locked.py", "private/inner.py"}
            assert result.skipped == {R.UNREADABLE: 1}
        else:
            assert found(result) == {"ok.py"}
            assert result.skipped == {R.UNREADABLE: 3}
        assert classify_path(tmp_path, "events.fifo", settings()) is R.UNREADABLE
        assert read_indexable_text(tmp_path, "events.fifo", settings()) is R.UNREADABLE
        assert classify_path(tmp_path, "does/not/exist.py", settings()) is R.UNREADABLE
        assert classify_path(tmp_path, "../escape.py", settings()) is R.UNREADABLE
    finally:
        locked.chmod(0o644)
        locked_dir.chmod(0o755)


def test_cancellation_stops_the_walk(tmp_path: Path) -> None:
    for d in range(20):
        for f in range(5):
            write(tmp_path, f"d{d}/f{f}.py")
    calls = 0

    def cancel() -> bool:
        nonlocal calls
        calls += 1
        return calls > 3

    result = discover(tmp_path, settings(), cancel=cancel)
    assert result.cancelled
    assert 0 < len(result.files) < 100
    complete = discover(tmp_path, settings(), cancel=lambda: False)
    assert not complete.cancelled and len(complete.files) == 100


# --------------------------------------------------------------------------- the whole picture


def test_skip_counts_examples_and_file_metadata(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n")
    write(tmp_path, "a.log")
    write(tmp_path, "b.log")
    write(tmp_path, "node_modules/x/y.js")
    write(tmp_path, "photo.jpg", b"\xff\xd8")
    write(tmp_path, ".env", "A=1\n")
    write(tmp_path, "big.txt", "x" * 3000)
    write(tmp_path, "app.min.js", "x")
    write(tmp_path, "src/main.go", "package main\n")
    write(tmp_path, "scripts/deploy", "#!/usr/bin/env bash\necho hi\n")
    write(tmp_path, "README", "hello\n")
    write(tmp_path, "data.xyz", "plain\n")
    result = discover(tmp_path, settings(max_file_bytes=2000))
    assert result.skipped == {
        R.IGNORED: 2,
        R.DEFAULT_EXCLUDE: 2,  # node_modules, .gitignore (hidden)
        R.BINARY: 1,
        R.SECRET: 1,
        R.TOO_LARGE: 1,
        R.MINIFIED: 1,
    }
    assert sorted(result.skipped_examples[R.IGNORED]) == ["a.log", "b.log"]
    languages = {f.rel_path: f.language for f in result.files}
    assert languages == {
        "src/main.go": "go",
        "scripts/deploy": "bash",
        "README": "text",
        "data.xyz": None,
    }
    main = next(f for f in result.files if f.rel_path == "src/main.go")
    stat = (tmp_path / "src/main.go").stat()
    assert main == DiscoveredFile("src/main.go", stat.st_size, stat.st_mtime_ns, "go")
    assert [f.rel_path for f in result.files] == sorted(languages)


def test_a_mixed_project_classify_agrees_with_discover(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.pyc\n/coverage/\nlogs/\n!logs/keep/\n")
    write(tmp_path, "web/.gitignore", "dist/\n!dist/keep.js\n")
    write(tmp_path, ".agentic-lspignore", "docs/drafts/\n")
    files = {
        "pyproject.toml": "[project]\nname='x'\n",
        "src/pkg/__init__.py": "",
        "src/pkg/core.py": "def f():\n    return 1\n",
        "src/pkg/core.pyc": b"\x00\x01",
        "coverage/index.html": "<html/>",
        "web/src/app.ts": "export const a = 1;\n",
        "web/dist/app.js": "x",
        "web/dist/keep.js": "x",
        "web/package-lock.json": "{}",
        "docs/guide.md": "# Guide\n",
        "docs/drafts/wip.md": "# WIP\n",
        "logs/run.txt": "log\n",
        "tests/test_core.py": "def test():\n    pass\n",
        "assets/font.woff2": b"wOF2",
        ".env.local": "X=1\n",
    }
    for rel, content in files.items():
        write(tmp_path, rel, content)
    (tmp_path / "src/pkg/alias.py").symlink_to(tmp_path / "src/pkg/core.py")
    config = settings()
    result = discover(tmp_path, config)
    assert found(result) == {
        "pyproject.toml",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/alias.py",
        "web/src/app.ts",
        "docs/guide.md",
        "tests/test_core.py",
    }
    assert_classify_agrees(tmp_path, config, result)
