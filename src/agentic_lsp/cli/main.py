"""Command-line entry point: ``agentic-lsp serve | mcp | acp | index | search | run |
changesets | doctor | setup | trust | models | demo``.

Heavy modules (torch, qdrant, langgraph) are imported inside the command that needs them, so
``--help`` and ``doctor`` start fast. Every :class:`AgenticError` ends as a message plus the fix on
stderr and exit status 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from agentic_lsp import __version__
from agentic_lsp.errors import AgenticError
from agentic_lsp.logs import configure_logging

log = logging.getLogger(__name__)

Handler = Callable[[argparse.Namespace], int]


def _workspace_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-w",
        "--workspace",
        type=Path,
        default=Path.cwd(),
        help="workspace root (default: current directory)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentic-lsp",
        description="AI code intelligence for editors (LSP) and LLM clients (MCP).",
    )
    parser.add_argument("--version", action="version", version=f"agentic-lsp {__version__}")
    parser.add_argument(
        "--log-level",
        default=None,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        type=str.upper,
        help="log verbosity (default: the log_level setting, INFO)",
    )
    parser.add_argument("--log-file", default=None, help="write logs here instead of stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = sub.add_parser("serve", help="run the LSP server over stdio (editors)")
    _workspace_arg(serve)
    serve.add_argument(
        "--tcp",
        metavar="[HOST:]PORT",
        help="listen on TCP instead, one client (default host 127.0.0.1; 0: a free port)",
    )
    serve.add_argument(
        "--allow-non-loopback",
        "--allow-remote",
        action="store_true",
        help="allow a --tcp host other machines can reach (no authentication: warns)",
    )
    serve.add_argument(
        "--mcp-http", type=int, metavar="PORT", help="also serve MCP over HTTP on 127.0.0.1:PORT"
    )
    serve.set_defaults(handler=_cmd_serve)

    mcp = sub.add_parser("mcp", help="run the MCP server over stdio (Claude Desktop/Code, …)")
    _workspace_arg(mcp)
    mcp.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve MCP over HTTP on 127.0.0.1:PORT instead of stdio (0: a free port)",
    )
    mcp.add_argument("--host", help="address to bind with --http (default: mcp.http_host)")
    mcp.add_argument(
        "--tools",
        choices=("search", "workflows", "all"),
        help="the tools listed to the client: search (find, navigate, read), workflows (runs "
        "and changesets) or all (default: mcp.tools, search)",
    )
    mcp.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="allow --host to be an address other machines can reach (logs a warning)",
    )
    mcp.set_defaults(handler=_cmd_mcp)

    acp = sub.add_parser(
        "acp", help="run as an Agent Client Protocol agent over stdio (Zed, JetBrains, …)"
    )
    acp.add_argument(
        "--no-mcp-endpoint",
        action="store_true",
        help="do not also serve each session's workspace over MCP on localhost",
    )
    acp.set_defaults(handler=_cmd_acp)

    index = sub.add_parser("index", help="index a workspace and print a summary")
    index.add_argument("path", type=Path, nargs="?", default=Path.cwd(), help="workspace root")
    index.add_argument("--no-embed", action="store_true", help="lexical + symbols only")
    index.add_argument(
        "--all-vectors",
        action="store_true",
        help="also embed the test/doc lanes and every function now (a running server does "
        "this in the background; without it they are counted as waiting)",
    )
    index.add_argument("--json", action="store_true", help="print the summary as JSON")
    share = index.add_mutually_exclusive_group()
    share.add_argument(
        "--export",
        type=Path,
        metavar="FILE",
        help="index with every vector, then write the committed files' vectors to FILE "
        "(a team index: built once, e.g. in CI, imported by everyone)",
    )
    share.add_argument(
        "--import",
        dest="import_",
        type=Path,
        metavar="FILE",
        help="add a team index's vectors to this workspace's cache before indexing: "
        "only what differs from its commit is embedded",
    )
    index.set_defaults(handler=_cmd_index)

    search = sub.add_parser("search", help="search an indexed workspace")
    search.add_argument("query", help="what to look for (natural language or identifiers)")
    _workspace_arg(search)
    search.add_argument("--functions", action="store_true", help="two-phase: files → functions")
    search.add_argument("-k", "--limit", type=int, default=10, help="results to show")
    search.add_argument(
        "-C",
        "--context",
        type=int,
        default=0,
        metavar="N",
        help="N lines around each result's line (a function's: its body after the signature)",
    )
    search.add_argument("-A", "--after-context", dest="after", type=int, metavar="N")
    search.add_argument("-B", "--before-context", dest="before", type=int, metavar="N")
    search.add_argument(
        "--json", action="store_true", help="print results as JSON (with snippets, as MCP)"
    )
    search.add_argument(
        "--wait-dense",
        action="store_true",
        help="without a running server: load the embedding model (seconds) and use every "
        "signal, instead of answering lexically at once",
    )
    search.add_argument(
        "--no-bridge",
        action="store_true",
        help="answer in this process even when a running server owns the workspace",
    )
    search.set_defaults(handler=_cmd_search)

    run = sub.add_parser("run", help="run a workflow on a task and review the diff")
    run.add_argument("task", nargs="?", help="what to do, in plain words")
    _workspace_arg(run)
    run.add_argument("--workflow", help="workflow name (default: the orchestrator picks)")
    run.add_argument("--yes", action="store_true", help="accept the resulting changeset")
    run.add_argument("--show-graph", action="store_true", help="print the plan as mermaid")
    run.add_argument(
        "--accept", metavar="CHANGESET", help="accept a pending changeset from an earlier run"
    )
    run.set_defaults(handler=_cmd_run)

    doctor = sub.add_parser("doctor", help="check Ollama, models, store and grammars")
    _workspace_arg(doctor)
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.add_argument(
        "--load-models",
        action="store_true",
        help="also load the embedding model and embed one text (seconds; default: files only)",
    )
    doctor.set_defaults(handler=_cmd_doctor)

    from agentic_lsp.cli.changesets_cmd import add_parser as changesets_parser

    changesets_parser(sub, _cmd_changesets)
    _setup_parser(sub)

    trust = sub.add_parser(
        "trust", help="let a workspace's own settings file choose hosts, models, paths, …"
    )
    trust.add_argument("path", nargs="?", default=str(Path.cwd()), help="workspace (default: .)")
    trust.add_argument("--revoke", action="store_true", help="stop trusting the workspace")
    trust.set_defaults(handler=_cmd_trust)

    models = sub.add_parser("models", help="install and list local GGUF models (offline LLM)")
    models_sub = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    models_sub.add_parser("list", help="the local models, their size and whether installed")
    install = models_sub.add_parser("install", help="download, verify and cache a local model")
    install.add_argument("name", help="model name (see `agentic-lsp models list`)")
    install.add_argument(
        "--no-runtime",
        action="store_true",
        help="do not install llama-cpp-python (the in-process runtime) when it is missing",
    )
    path = models_sub.add_parser("path", help="print an installed model's GGUF path")
    path.add_argument("name", help="model name")
    models.set_defaults(handler=_cmd_models)

    demo = sub.add_parser("demo", help="index a real sample codebase and search it, offline")
    demo.add_argument("--path", type=Path, help="codebase to use (default: a bundled library)")
    demo.add_argument(
        "--scripted",
        action="store_true",
        help="run the workflow on the scripted test double even when a local model is installed",
    )
    demo.set_defaults(handler=_cmd_demo)
    return parser


def _setup_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from agentic_lsp.cli.setup_clients import CLIENTS

    setup = sub.add_parser(
        "setup",
        help="configure an editor or LLM client to start agentic-lsp",
        description="Writes (or prints) a client's configuration: shows the diff, backs the "
        "file up, writes only after you confirm (or --yes), never touches other settings.",
    )
    setup.add_argument("client", choices=CLIENTS, help="the client to configure")
    setup.add_argument("--dry-run", action="store_true", help="show the diff, write nothing")
    setup.add_argument("--yes", "-y", action="store_true", help="write without asking")
    setup.add_argument(
        "--print", action="store_true", help="only print the entries to paste by hand"
    )
    setup.add_argument(
        "--path", type=Path, help="the client's configuration file, instead of its usual place"
    )
    setup.add_argument(
        "-w",
        "--workspace",
        type=Path,
        help="pin the MCP server to this project (default: the folder the client starts it "
        "in, or the roots it declares; claude-desktop: the current folder)",
    )
    setup.add_argument(
        "--scope",
        choices=["user", "project"],
        default="user",
        help="claude-code: ~/.claude.json (user, default) or ./.mcp.json (project)",
    )
    setup.add_argument(
        "--no-acp",
        dest="acp",
        action="store_false",
        help="zed: only the MCP context server, not agentic-lsp as an external (ACP) agent",
    )
    setup.add_argument(
        "--mcp", action="store_true", help="vscode: also add the MCP server to VS Code's mcp.json"
    )
    setup.set_defaults(handler=_cmd_setup)


def _cmd_setup(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.setup_cmd import setup

    return setup(args)


def _cmd_serve(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.subcommands import serve

    return serve(args)


def _cmd_mcp(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.subcommands import mcp_stdio

    return mcp_stdio(args)


def _cmd_acp(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.subcommands import acp_stdio

    return acp_stdio(args)


def _cmd_index(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.subcommands import index

    return index(args)


def _cmd_search(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.search_cmd import search

    return search(args)


def _cmd_run(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.subcommands import run

    return run(args)


def _cmd_doctor(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.doctor import run_doctor

    return run_doctor(args.workspace, as_json=args.json, load_models=args.load_models)


def _cmd_changesets(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.changesets_cmd import changesets
    from agentic_lsp.cli.subcommands import _settings, _workspace, err

    root = _workspace(args.workspace)
    return changesets(args, root, _settings(root, args), err)


def _cmd_trust(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.trust_cmd import trust

    return trust(args)


def _cmd_models(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.models_cmd import models

    return models(args)


def _cmd_demo(args: argparse.Namespace) -> int:
    from agentic_lsp.cli.demo import run_demo

    return run_demo(args.path, scripted=args.scripted)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Servers log their life at INFO; one-shot commands keep the terminal for their output.
    quiet_default = "INFO" if args.command in ("serve", "mcp", "acp") else "WARNING"
    configure_logging(args.log_level or quiet_default, args.log_file)
    handler: Handler = args.handler
    try:
        return handler(args)
    except AgenticError as exc:
        print(f"agentic-lsp: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("agentic-lsp: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `agentic-lsp search … | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's exit-time flush must not fail again
        return 141  # 128 + SIGPIPE, as a shell reports a command a pipe cut short


if __name__ == "__main__":
    raise SystemExit(main())
