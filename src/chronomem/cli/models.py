"""``chronomem models``: what is configured, assemble/verify the local weights, a health check."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from ..errors import ChronomemError, ModelUnavailableError
from ..providers import gguf
from .render import data_console, plain

app = typer.Typer(
    help="Models: show the configuration, assemble/verify the local model, run a health check.",
    invoke_without_command=True,
    no_args_is_help=False,
)
console = data_console()  # specs, paths and a model's reply are no markup: escaped or printed as Text


@contextmanager
def _progress(label: str) -> Iterator[gguf.ProgressFn]:
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as prog:
        task = prog.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        yield update


def _packaged(which: str) -> list[gguf.PackagedModel]:
    if which == "all":
        return list(gguf.PACKAGED_MODELS.values())
    try:
        return [gguf.PACKAGED_MODELS[which.lower()]]
    except KeyError:
        raise typer.BadParameter(f"expected one of {', '.join(gguf.PACKAGED_MODELS)} or all", param_hint="--model") from None


def _status(model: gguf.PackagedModel) -> str:
    if gguf.is_assembled(model):
        return "[green]assembled, verified[/]"
    try:
        gguf.find_parts(model)
    except ModelUnavailableError:
        return "[yellow]parts not installed[/]"
    return "parts installed, not assembled"


def _settings_table(title: str, described: dict[str, Any]) -> Table:
    t = Table(title=title, title_justify="left", show_header=True, header_style="bold")
    t.add_column("setting")
    t.add_column("value")
    t.add_column("from")
    for k, v in described.items():
        t.add_row(k, plain("" if v["value"] is None else v["value"]), plain(v["source"]))
    return t


@app.callback()
def main(ctx: typer.Context) -> None:
    """Without a sub-command: show the configuration."""
    if ctx.invoked_subcommand is None:
        show(llm=None, embedder=None)


@app.command()
def show(
    llm: str | None = typer.Option(None, "--llm", help="LLM spec to resolve instead of the configured one"),
    embedder: str | None = typer.Option(None, "--embedder", help="embedder spec"),
) -> None:
    """Show the effective model settings, where each came from, and the local model files."""
    from ..config import config_path as config_file
    from ..providers.settings import resolve_embedder_settings, resolve_llm_settings

    s = resolve_llm_settings(llm)
    e = resolve_embedder_settings(embedder)
    console.print(f"LLM: [bold]{escape(s.spec)}[/]    embedder: [bold]{escape(e.spec)}[/]")
    console.print(f"config file: {config_file()}{'' if config_file().exists() else ' (absent)'}", markup=False)
    console.print(_settings_table("LLM", s.describe()))
    console.print(_settings_table("Embedder", e.describe()))
    t = Table(title=plain(f"Local models in {gguf.cache_dir()}", "table.title"), title_justify="left",
              header_style="bold")
    t.add_column("key")
    t.add_column("model")
    t.add_column("status")
    for m in gguf.PACKAGED_MODELS.values():
        t.add_row(m.key, m.description, _status(m))
    console.print(t)
    from ..providers.local_llama import cpu_build

    build = cpu_build()
    hint = {"AVX-512": " (built for this CPU by scripts/native-llama.sh)",
            "AVX2": " (PyPI's portable wheel; on an AVX-512 CPU `make install NATIVE=1` builds a faster one)"}.get(build, "")
    console.print(f"llama.cpp kernels: {build}{hint}")
    console.print("precedence: arguments > environment > config file > defaults (see chronomem.providers.settings)")


@app.command()
def assemble(
    model: str = typer.Option("1.5b", "--model", "-m", help="1.5b, 0.5b or all"),
    force: bool = typer.Option(False, "--force", help="re-assemble even if a verified file exists"),
) -> None:
    """Join the installed model parts into the cache and verify the sha256."""
    for m in _packaged(model):
        if not force and gguf.is_assembled(m):
            console.print(f"{m.key}: already assembled at {gguf.model_path(m)}", markup=False)
            continue
        with _progress(f"assembling {m.key}") as cb:
            path = gguf.assemble(m, progress=cb, force=force)
        console.print(f"{m.key}: [green]ok[/] {escape(str(path))} (sha256 {m.sha256[:12]}…)")


@app.command()
def verify(model: str = typer.Option("1.5b", "--model", "-m", help="1.5b, 0.5b or all")) -> None:
    """Re-hash the assembled file(s) against the published sha256."""
    bad = False
    for m in _packaged(model):
        path = gguf.model_path(m)
        if not path.is_file():
            console.print(f"{m.key}: [yellow]not assembled[/] (run: chronomem models assemble -m {m.key})")
            bad = True
            continue
        with _progress(f"hashing {m.key}") as cb:
            ok = gguf.verify(m, progress=cb)
        console.print(f"{m.key}: {'[green]sha256 ok[/]' if ok else '[red]sha256 MISMATCH[/]'} {escape(str(path))}")
        bad |= not ok
    if bad:
        raise typer.Exit(1)


@app.command()
def check(
    llm: str | None = typer.Option(None, "--llm", help="LLM spec (default: configured)"),
    embedder: str | None = typer.Option(None, "--embedder", help="embedder spec (default: configured)"),
    skip_embedder: bool = typer.Option(False, "--no-embedder", help="only check the LLM"),
) -> None:
    """One tiny chat and one tiny embedding, with timings (a model configured as 'none' is skipped)."""
    from ..providers.settings import NONE, resolve_embedder_settings, resolve_llm_settings

    failed = False
    if resolve_llm_settings(llm).provider == NONE:
        console.print("LLM: none configured (spec 'none'), not checked")
    else:
        failed |= not _check_llm(llm)
    if skip_embedder:
        pass
    elif resolve_embedder_settings(embedder).provider == NONE:
        console.print("embedder: none configured (spec 'none'), not checked")
    else:
        failed |= not _check_embedder(embedder)
    if failed:
        raise typer.Exit(1)


def _check_llm(spec: str | None) -> bool:
    from ..providers import make_llm

    t0 = time.perf_counter()
    try:
        model = make_llm(spec, cache=False)
        if hasattr(model.inner, "load"):
            load_s = model.inner.load()
            console.print(f"LLM {model.name}: loaded in {load_s:.1f}s", markup=False)
        r = model.chat(
            [{"role": "user", "content": "Reply with the single word: ready"}], max_tokens=8, purpose="check"
        )
    except ChronomemError as e:
        console.print(f"LLM: [red]failed[/] {escape(str(e))}")
        return False
    console.print(
        f"LLM {escape(model.name)}: [green]ok[/] {escape(repr(r.text.strip()))} — {r.usage.prompt_tokens} prompt + "
        f"{r.usage.completion_tokens} completion tokens in {r.usage.latency_s:.2f}s "
        f"(total {time.perf_counter() - t0:.1f}s)"
    )
    return True


def _check_embedder(spec: str | None) -> bool:
    from ..providers import make_embedder

    t0 = time.perf_counter()
    try:
        emb = make_embedder(spec, cache=False)
        vecs = emb.embed(["chronomem health check"])
        t1 = time.perf_counter()
        emb.embed(["a second sentence", "and a third one"])
    except ChronomemError as e:
        console.print(f"embedder: [red]failed[/] {escape(str(e))}")
        return False
    console.print(
        f"embedder {escape(emb.name)}: [green]ok[/] dim {len(vecs[0])}, first call {t1 - t0:.2f}s "
        f"(includes loading), next batch {time.perf_counter() - t1:.3f}s"
    )
    return True
