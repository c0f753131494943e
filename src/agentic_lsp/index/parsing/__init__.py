"""Tree-sitter parsing: file → language, symbols (with per-language grammar rules and name
resolvers), imports, doc comments, and Markdown/RST/text sections."""
