"""Multi-agent workflows: YAML definitions, planning, a LangGraph state machine, run events."""
