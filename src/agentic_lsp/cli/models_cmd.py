"""``agentic-lsp models list | install NAME [--no-runtime] | path NAME``: local GGUF models."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from agentic_lsp.llm import local_models as lm

err = Console(stderr=True, highlight=False)


def _list() -> int:
    print(f"models folder: {lm.models_dir()}")
    width = max(len(n) for n in lm.CATALOG)
    for model in lm.CATALOG.values():
        path = lm.installed_path(model)
        state = "installed" if path else "not installed"
        where = str(path) if path else f"agentic-lsp models install {model.name}"
        size = f"{model.size / 1e6:,.0f} MB"
        print(f"{model.name:<{width}}  {size:>9}  {state:<13}  {where}")
    runtime = "importable" if lm.llama_cpp_importable() else "missing (models install adds it)"
    print(f"llama-cpp-python: {runtime}")
    return 0


def _install(args: argparse.Namespace) -> int:
    model = lm.get_model(args.name)
    started = time.monotonic()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(f"{model.name} part 1/{model.parts}", total=model.size)

        def progress(done: int, total: int, part: int, parts: int) -> None:
            bar.update(task, completed=done, description=f"{model.name} part {part}/{parts}")

        result = lm.install_model(model.name, progress=progress)
    seconds = time.monotonic() - started
    if result.reused:
        print(f"{model.name}: already installed and verified at {result.path}")
    else:
        print(
            f"{model.name}: installed {model.size:,} bytes (sha256 verified) at {result.path} "
            f"in {seconds:.0f} s"
        )
    if args.no_runtime:
        print("llama-cpp-python: skipped (--no-runtime)")
    else:
        if not lm.llama_cpp_importable():
            err.print("installing llama-cpp-python (the in-process runtime)…", markup=False)
        print(f"llama-cpp-python: {lm.ensure_runtime()}")
    print(f'use it: set llm.provider = "llamacpp" and llm.model = "{model.name}"')
    return 0


def _path(args: argparse.Namespace) -> int:
    model = lm.get_model(args.name)
    path = lm.installed_path(model)
    if path is None:
        raise lm.ModelInstallError(
            f"{model.name} is not installed", f"run `agentic-lsp models install {model.name}`"
        )
    print(path)
    return 0


def models(args: argparse.Namespace) -> int:
    if args.models_command == "install":
        return _install(args)
    if args.models_command == "path":
        return _path(args)
    return _list()
