"""Answering from the index: two-phase hybrid search, the in-memory symbol table and name-based
references."""
