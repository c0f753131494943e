"""LLM providers (ollama default, llamacpp optional, scripted for tests and the offline demo)."""
