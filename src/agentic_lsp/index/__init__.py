"""The workspace index: discovery, parsing, documents, embeddings, store, sync and search."""
