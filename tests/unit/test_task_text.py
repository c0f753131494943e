"""Task understanding: paths, traceback frames, identifiers, errors, weights and summary."""

from __future__ import annotations

from agentic_lsp.index.retrieval.task_text import Frame, looks_like_code, understand

PY_TRACE = """Crash when the default comes from `envvar`

Calling `get_default()` on MultiCommand loses the value, see src/click/core.py:412.

Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/click/core.py", line 1021, in invoke
    return ctx.invoke(self.callback)
  File "click/decorators.py", line 33, in new_func
KeyError: 'name'
"""


def test_python_traceback_frames_in_order_with_lines_and_functions() -> None:
    task = understand(PY_TRACE)
    assert task.frames == [
        Frame("/usr/lib/python3.12/site-packages/click/core.py", 1021, "invoke"),
        Frame("click/decorators.py", 33, "new_func"),
    ]
    assert task.errors == ["KeyError: 'name'"]


def test_paths_keep_their_directories_and_drop_line_suffixes() -> None:
    task = understand("See src/click/core.py:412 and also ./parser.py, not https://x.io/a/b.py")
    assert task.paths == ["src/click/core.py", "parser.py"]


def test_go_rust_and_javascript_locations() -> None:
    go = understand(
        "panic: nil map\n\ngoroutine 1 [running]:\n\t/home/u/cobra/command.go:123 +0x1d"
    )
    assert go.paths == ["/home/u/cobra/command.go"]
    rust = understand("thread 'main' panicked at crates/core/flags/hiargs.rs:88:5:")
    assert rust.frames == [Frame("crates/core/flags/hiargs.rs", 88, None)]
    js = understand("TypeError: x is undefined\n    at Object.parse (lib/utils.js:12:5)")
    assert js.frames == [Frame("lib/utils.js", 12, "Object.parse")]
    assert js.errors == ["TypeError: x is undefined"]


def test_identifiers_from_backticks_calls_and_code_shape() -> None:
    task = understand(
        "`Option.envvar` is ignored; resolve_ctx() and parseHttpRequest too, not Word"
    )
    assert {"Option", "envvar", "resolve_ctx", "parseHttpRequest"} <= set(task.identifiers)
    assert "Word" not in task.identifiers
    assert "Option.envvar" in task.dotted
    assert {"envvar", "resolve_ctx"} <= set(task.named())


def test_code_shape() -> None:
    assert looks_like_code("get_default") and looks_like_code("MultiCommand")
    assert looks_like_code("_private") and looks_like_code("camelCase")
    assert not looks_like_code("Hello") and not looks_like_code("URL") and not looks_like_code("ok")


def test_weights_drop_stopwords_and_favour_identifiers_and_title() -> None:
    task = understand(
        "Timeout ignored by send_request\n\nWhen I call the client the timeout is ignored"
    )
    w = task.weights
    assert "the" not in w and "when" not in w
    assert w["send_request"] > w["client"]
    assert w["timeout"] > w["client"]  # in the title, and twice


def test_summary_of_a_long_task_leads_with_title_and_first_paragraph() -> None:
    long_task = (
        "Router drops query string\n\n"
        + "When a request is redirected the query string disappears from the url.\n\n"
        + "```\n"
        + "log line\n" * 300
        + "```\nMore text about `mergeParams`."
    )
    task = understand(long_task)
    assert len(task.summary) <= 1000
    assert task.summary.startswith("Router drops query string\nWhen a request is redirected")
    assert "mergeParams" in task.summary
    short = "Short task"
    assert understand(short).summary == short


def test_modules_a_code_sample_imports_are_kept_apart() -> None:
    task = understand(
        "Wrap fails\n\n```python\nfrom rich.console import Console\nimport rich.pretty\n```\n"
        "rich.text.Text loses words"
    )
    assert task.imported == ["rich.console", "rich.pretty"]
    assert task.dotted == ["rich.text.Text"]


def test_template_checkboxes_do_not_ask_for_docs() -> None:
    task = understand("Bug\n\n- [x] I've checked the docs and the FAQ\n\nIt crashes")
    assert "docs" not in task.prose and "docs" not in task.weights
