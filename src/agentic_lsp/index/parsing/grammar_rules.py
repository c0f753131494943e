"""Per-language tables that tell the symbol walker which tree-sitter nodes matter.

The walker (:mod:`agentic_lsp.index.parsing.symbol_walker`) visits only *definitions* and
*containers*; every
other subtree (expressions, most statements) is skipped without being touched, which is what keeps
symbol extraction far cheaper than parsing itself. Adding a language is adding a table here, plus
a name resolver in ``parsing.py`` when its definitions name themselves in an unusual way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

CLASS_LIKE: frozenset[str] = frozenset(
    {"class", "struct", "interface", "trait", "impl", "enum", "record"}
)


@dataclass(frozen=True)
class Def:
    """How one node type becomes a symbol.

    ``name`` is the field holding the name, or ``"@resolver"`` for a resolver in ``parsing.py``.
    ``body`` is the field whose named children may hold nested definitions (``None``: do not
    descend). A ``"function"`` found inside a scope whose
    kind is in ``method_in`` is reported as a ``"method"``.
    """

    kind: str
    name: str = "name"
    body: str | None = "body"
    method_in: frozenset[str] = CLASS_LIKE


@dataclass(frozen=True)
class LanguageRules:
    definitions: Mapping[str, Def]
    containers: frozenset[str]
    comments: frozenset[str] = frozenset({"comment"})
    # Nodes whose leading comment and start line belong to the single definition they wrap.
    wrappers: frozenset[str] = frozenset()
    # Node type -> import extractor key (see ``parsing._IMPORT_EXTRACTORS``).
    imports: Mapping[str, str] = field(default_factory=dict)
    # Nodes that may sit between a doc comment and its definition (attributes, annotations).
    between_doc_and_def: frozenset[str] = frozenset()
    python_docstrings: bool = False
    # Ruby puts a class's first comment before its body node, not inside it.
    comment_before_body: bool = False


_FUNC = Def("function")
_JS_DEFS: dict[str, Def] = {
    "function_declaration": _FUNC,
    "generator_function_declaration": _FUNC,
    "class_declaration": Def("class"),
    "class": Def("class"),
    "method_definition": Def("method"),
    "variable_declarator": Def("function", name="@js_declarator", body=None),
    "field_definition": Def("method", name="@js_field", body=None),
    "assignment_expression": Def("function", name="@js_assignment", body=None),
}
_TS_DEFS: dict[str, Def] = {
    **_JS_DEFS,
    "public_field_definition": Def("method", name="@js_field", body=None),
    "abstract_class_declaration": Def("class"),
    "interface_declaration": Def("interface"),
    "enum_declaration": Def("enum", body=None),
    "type_alias_declaration": Def("type", body=None),
    "internal_module": Def("namespace", name="@text_name"),
    "module": Def("namespace", name="@text_name"),
    "method_signature": Def("method", body=None),
    "abstract_method_signature": Def("method", body=None),
    "function_signature": Def("function", body=None),
}
_JS_CONTAINERS = frozenset(
    {
        "program",
        "export_statement",
        "class_body",
        "statement_block",
        "lexical_declaration",
        "variable_declaration",
        "expression_statement",
        "interface_body",
        "object_type",
        "ambient_declaration",
    }
)


def _js_rules(definitions: dict[str, Def]) -> LanguageRules:
    return LanguageRules(
        definitions=definitions,
        containers=_JS_CONTAINERS,
        wrappers=frozenset(
            {
                "export_statement",
                "lexical_declaration",
                "variable_declaration",
                "expression_statement",
            }
        ),
        imports={
            "import_statement": "js_import",
            "export_statement": "js_import",
            "call_expression": "js_require",
        },
        between_doc_and_def=frozenset({"decorator"}),
    )


_C_DEFS: dict[str, Def] = {
    "function_definition": Def("function", name="@c_function", body=None),
    "declaration": Def("function", name="@c_prototype", body=None),
    "struct_specifier": Def("struct", name="@c_tagged", body=None),
    "union_specifier": Def("struct", name="@c_tagged", body=None),
    "enum_specifier": Def("enum", name="@c_tagged", body=None),
    "type_definition": Def("type", name="@c_typedef", body=None),
    "preproc_function_def": Def("macro", body=None),
}
_C_CONTAINERS = frozenset(
    {
        "translation_unit",
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "linkage_specification",
        "declaration_list",
    }
)
_CPP_DEFS: dict[str, Def] = {
    **_C_DEFS,
    "struct_specifier": Def("struct", name="@c_tagged"),
    "union_specifier": Def("struct", name="@c_tagged"),
    "class_specifier": Def("class", name="@c_tagged"),
    "field_declaration": Def("method", name="@c_prototype", body=None),
    "namespace_definition": Def("namespace", name="@text_name"),
    "concept_definition": Def("type", body=None),
    "alias_declaration": Def("type", body=None),
}

RULES: dict[str, LanguageRules] = {
    "python": LanguageRules(
        definitions={
            "function_definition": _FUNC,
            "class_definition": Def("class"),
        },
        containers=frozenset(
            {
                "module",
                "block",
                "decorated_definition",
                "if_statement",
                "else_clause",
                "elif_clause",
                "try_statement",
                "except_clause",
                "finally_clause",
                "with_statement",
            }
        ),
        wrappers=frozenset({"decorated_definition"}),
        imports={
            "import_statement": "py_import",
            "import_from_statement": "py_from",
            "future_import_statement": "py_future",
        },
        python_docstrings=True,
    ),
    "javascript": _js_rules(_JS_DEFS),
    "typescript": _js_rules(_TS_DEFS),
    "tsx": _js_rules(_TS_DEFS),
    "go": LanguageRules(
        definitions={
            "function_declaration": _FUNC,
            "method_declaration": Def("method", name="@go_method", body=None),
            "type_spec": Def("type", name="@go_type", body="type"),
            "type_alias": Def("type", body=None),
            "method_elem": Def("method", body=None),
        },
        containers=frozenset({"source_file", "type_declaration"}),
        wrappers=frozenset({"type_declaration"}),
        imports={"import_spec": "go_import", "import_declaration": "go_import"},
    ),
    "rust": LanguageRules(
        definitions={
            "function_item": _FUNC,
            "function_signature_item": Def("function", body=None),
            "struct_item": Def("struct", body=None),
            "union_item": Def("struct", body=None),
            "enum_item": Def("enum", body=None),
            "trait_item": Def("trait"),
            "impl_item": Def("impl", name="@rust_impl"),
            "mod_item": Def("module"),
            "macro_definition": Def("macro", body=None),
            "type_item": Def("type", body=None),
        },
        containers=frozenset({"source_file", "declaration_list"}),
        comments=frozenset({"line_comment", "block_comment"}),
        imports={"use_declaration": "rust_use", "extern_crate_declaration": "rust_crate"},
        between_doc_and_def=frozenset({"attribute_item"}),
    ),
    "java": LanguageRules(
        definitions={
            "class_declaration": Def("class"),
            "interface_declaration": Def("interface"),
            "enum_declaration": Def("enum"),
            "record_declaration": Def("class"),
            "annotation_type_declaration": Def("interface"),
            "method_declaration": Def("method", body=None),
            "constructor_declaration": Def("method", body=None),
            "compact_constructor_declaration": Def("method", body=None),
        },
        containers=frozenset(
            {"program", "class_body", "interface_body", "enum_body", "enum_body_declarations"}
        ),
        comments=frozenset({"line_comment", "block_comment"}),
        imports={"import_declaration": "keyword_path"},
    ),
    "c": LanguageRules(
        definitions=_C_DEFS,
        containers=_C_CONTAINERS,
        imports={"preproc_include": "c_include"},
    ),
    "cpp": LanguageRules(
        definitions=_CPP_DEFS,
        containers=_C_CONTAINERS | {"template_declaration", "field_declaration_list"},
        wrappers=frozenset({"template_declaration"}),
        imports={"preproc_include": "c_include"},
    ),
    "csharp": LanguageRules(
        definitions={
            "namespace_declaration": Def("namespace", name="@text_name"),
            "file_scoped_namespace_declaration": Def("namespace", name="@text_name", body=None),
            "class_declaration": Def("class"),
            "interface_declaration": Def("interface"),
            "struct_declaration": Def("struct"),
            "record_declaration": Def("class"),
            "record_struct_declaration": Def("struct"),
            "enum_declaration": Def("enum", body=None),
            "method_declaration": Def("method", body=None),
            "constructor_declaration": Def("method", body=None),
            "destructor_declaration": Def("method", body=None),
            "property_declaration": Def("property", body=None),
            "delegate_declaration": Def("type", body=None),
        },
        containers=frozenset({"compilation_unit", "declaration_list"}),
        imports={"using_directive": "keyword_path"},
        between_doc_and_def=frozenset({"attribute_list"}),
    ),
    "ruby": LanguageRules(
        definitions={
            "class": Def("class", name="@text_name"),
            "module": Def("module", name="@text_name"),
            "method": Def("function", method_in=CLASS_LIKE | {"module"}),
            "singleton_method": Def("method"),
        },
        containers=frozenset({"program", "body_statement", "singleton_class"}),
        imports={"call": "ruby_require"},
        comment_before_body=True,
    ),
    "php": LanguageRules(
        definitions={
            "namespace_definition": Def("namespace", name="@text_name"),
            "class_declaration": Def("class"),
            "interface_declaration": Def("interface"),
            "trait_declaration": Def("trait"),
            "enum_declaration": Def("enum"),
            "method_declaration": Def("method", body=None),
            "function_definition": Def("function", body=None),
        },
        containers=frozenset(
            {
                "program",
                "declaration_list",
                "enum_declaration_list",
                "compound_statement",
                "if_statement",
                "colon_block",
                "else_clause",
            }
        ),
        imports={"namespace_use_declaration": "php_use", "expression_statement": "php_require"},
        between_doc_and_def=frozenset({"attribute_list"}),
    ),
}
