"""Pure parts of benchmarks/build_workflow_tasks.py: task ids, diff splitting, text scrubbing."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import build_workflow_tasks as bwt

DIFF = """\
diff --git a/CHANGES.rst b/CHANGES.rst
index 1111111..2222222 100644
--- a/CHANGES.rst
+++ b/CHANGES.rst
@@ -5,6 +5,8 @@ Unreleased
 -   Fix formatting when ``Command.options_metavar`` is empty. :issue:`1551`
+-   ``to_info_dict`` will not fail if a ``ParamType`` doesn't define a
+    ``name``. :issue:`2168`
diff --git a/src/click/types.py b/src/click/types.py
index 3333333..4444444 100644
--- a/src/click/types.py
+++ b/src/click/types.py
@@ -100,7 +100,7 @@ class ParamType:
-        param_type = type(self).__name__.partition("ParamType")[0]
+        param_type = type(self).__name__.partition("ParamType")[0] or None
         return {"param_type": param_type}
diff --git a/tests/test_info_dict.py b/tests/test_info_dict.py
index 5555555..6666666 100644
--- a/tests/test_info_dict.py
+++ b/tests/test_info_dict.py
@@ -1,3 +1,8 @@
+def test_paramtype_no_name():
+    class TestType(click.ParamType):
+        pass
+
+    assert TestType().to_info_dict()["name"] == "TestType"
diff --git a/tests/new_helper.py b/tests/new_helper.py
new file mode 100644
index 0000000..7777777
--- /dev/null
+++ b/tests/new_helper.py
@@ -0,0 +1 @@
+X = 1
"""


def test_task_id_uses_owner_name_and_seven_hex_digits():
    sha = "e0033315515e4c46f2b1a6e4e0ff3b6a2e3b4c5d"
    assert bwt.task_id("pallets/click", sha) == "pallets__click-e003331"
    assert (
        bwt.task_id("more-itertools/more-itertools", sha)
        == "more-itertools__more-itertools-e003331"
    )


def test_path_classification():
    assert bwt.is_test_path("tests/test_info_dict.py")
    assert bwt.is_test_path("tests/sansio/test_multipart.py")
    assert bwt.is_test_path("src/pkg/conftest.py")
    assert bwt.is_test_path("more_itertools/tests/helper.py")
    assert not bwt.is_test_path("src/click/testing.py")  # a module named "testing", not a test
    assert bwt.is_source_path("src/click/testing.py")
    assert bwt.is_source_path("sqlparse/engine/grouping.py")
    assert not bwt.is_source_path("docs/conf.py")
    assert not bwt.is_source_path("setup.py")
    assert not bwt.is_source_path("CHANGES.rst")


def test_split_diff_keeps_each_file_chunk_verbatim():
    chunks = bwt.split_diff(DIFF)
    assert list(chunks) == [
        "CHANGES.rst",
        "src/click/types.py",
        "tests/test_info_dict.py",
        "tests/new_helper.py",  # a new file is named by its +++ path, not /dev/null
    ]
    assert "".join(chunks.values()) == DIFF
    assert chunks["src/click/types.py"].startswith("diff --git a/src/click/types.py")


def test_classify_diff_separates_source_tests_and_other():
    parts = bwt.classify_diff(DIFF)
    assert sorted(parts.source) == ["src/click/types.py"]
    assert sorted(parts.tests) == ["tests/new_helper.py", "tests/test_info_dict.py"]
    assert sorted(parts.other) == ["CHANGES.rst"]
    assert "or None" in parts.gold_patch and "test_paramtype_no_name" not in parts.gold_patch
    assert parts.test_patch.startswith("diff --git a/tests/new_helper.py")  # sorted by path
    assert "test_paramtype_no_name" in parts.test_patch and "or None" not in parts.test_patch
    assert bwt.changed_lines(parts.source["src/click/types.py"]) == 2


def test_changelog_entry_joins_continuations_and_drops_references():
    text = bwt.changelog_entry(bwt.classify_diff(DIFF).other["CHANGES.rst"])
    assert text == "``to_info_dict`` will not fail if a ``ParamType`` doesn't define a ``name``."


def test_changelog_entry_drops_headers_thanks_and_rst_links():
    chunk = (
        "+3.21.1 (unreleased)\n"
        "+*******************\n"
        "+\n"
        "+Bug fixes:\n"
        "+\n"
        "+- Fix error message when field is declared as a class and not an instance\n"
        "+  (:issue:`2245`). Thanks :user:`travnick` for reporting.\n"
        "+``attr.resolve_types()`` now resolves subclasses.\n"
        "+`#842 <https://github.com/python-attrs/attrs/issues/842>`_\n"
    )
    assert bwt.changelog_entry(chunk).splitlines() == [
        "Fix error message when field is declared as a class and not an instance.",
        "``attr.resolve_types()`` now resolves subclasses.",
    ]


def test_scrub_message_drops_trailers_references_and_process_bullets():
    message = (
        "Fix crash when __pre_init__, kw_only, and defaults come together (#1319)\n"
        "\n"
        "* Fix crash when __pre_init__, kw_only, and defaults come together\n"
        "\n"
        "Fixes #1284\n"
        "\n"
        "* Add news fragment\n"
        "\n"
        "* Improve test\n"
        "\n"
        "---------\n"
        "\n"
        "Co-authored-by: Hynek Schlawack <hs@ox.cx>\n"
        "Signed-off-by: Someone <s@example.org>\n"
    )
    assert bwt.scrub_message(message) == (
        "Fix crash when __pre_init__, kw_only, and defaults come together"
    )


def test_scrub_message_keeps_error_blocks_but_drops_diffs_and_chosen_text():
    message = (
        "Fix intcomma() failing with a string as input\n"
        "\n"
        'Calling `humanize.intcomma("1", 0)` would fail with the error message\n'
        "```\n"
        "ValueError: Unknown format code 'f' for object of type 'str'\n"
        "```\n"
        "```diff\n"
        "-    return format(value)\n"
        "+    return format(float(value))\n"
        "```\n"
        "Fix this by first converting the string to a `float` or `int`.\n"
        "\n"
        "The fix for this was to remove the optimization\n"
        "and load the parameter anyway.\n"
        "\n"
        "See https://github.com/python-humanize/humanize/issues/12\n"
    )
    text = bwt.scrub_message(
        message, drop_lines=["Fix this by first"], drop_paras=["The fix for this was"]
    )
    assert "ValueError: Unknown format code" in text
    assert "float(value)" not in text
    assert "Fix this by first" not in text
    assert "optimization" not in text and "load the parameter" not in text
    assert "github.com" not in text and "See" not in text.splitlines()[-1]


def test_is_fix_message():
    assert bwt.is_fix_message("Fix double-bracketing of choices in synopsis")
    assert bwt.is_fix_message("progressbar: fix regression with hidden bars")
    assert bwt.is_fix_message("Fixes #1448: Revert Undefined.__contains__")
    assert not bwt.is_fix_message("Add support for Python 3.13")
    assert not bwt.is_fix_message("prefix the cache directory")
