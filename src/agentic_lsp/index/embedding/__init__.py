"""Dense vectors: the bundled embedding model, its content-hash cache, and the vectors the
indexer attaches after a sync or on demand."""
