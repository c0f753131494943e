"""The vector store: its interface (``vector_store``), the Qdrant Edge (embedded) and Qdrant
server backends, and opening/recovering a store (``opening``)."""
