"""The ``amqgen`` command. Exit codes: 0 ok, 1 drift (``render --check``), 2 bad input or usage.

Every error the user can cause is one line on stderr; no traceback. A bug in amqgen itself
is reported as one "internal error" line with exit 3 (``AMQGEN_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from . import __version__
from .changes import to_json, to_text
from .corpus import dumps
from .errors import AmqgenError, UsageError
from .family import Family, Model, family_of
from .project import RenderJob, SpecChoice
from .render import (
    check_tree,
    depfile_text,
    discover,
    manifest_name,
    pack_files,
    remove_stale,
    render,
    resolve,
    stale_files,
    with_manifest,
    write_file,
    write_tree,
)
from .specs import available, overlays

F = TypeVar("F", bound=Callable[..., Any])


def reporting(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AmqgenError as e:
            for line in e.lines():  # one line per problem (strict warnings, overlay conflicts)
                click.echo(line, err=True)
            sys.exit(e.exit_code)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as e:  # a bug in amqgen, not the user's input
            if os.environ.get("AMQGEN_DEBUG"):
                raise
            click.echo(f"amqgen: internal error: {type(e).__name__}: {e} (AMQGEN_DEBUG=1 shows more)", err=True)
            sys.exit(3)

    return wrapper  # type: ignore[return-value]


def spec_option(fn: F) -> F:
    """``--spec`` and ``--overlay`` (repeatable) for a command that reads a spec. The command gets them
    as one ``spec_arg: SpecChoice`` (the project file, amqgen.toml, fills in what the command line
    leaves out) and loads it with ``spec_arg.load_any(strict)`` (either family) or ``spec_arg.load(strict)``
    (0-x only)."""

    @click.option("--spec", "spec_path", metavar="PATH|NAME", default=None,
                  help="Spec file, or a name from `amqgen specs` (default: the project's, else the bundled 0-9).")
    @click.option("--overlay", "overlay_args", metavar="PATH|NAME", multiple=True,
                  help="An overlay file (or a bundled overlay's name) to merge into the spec; repeatable, "
                       "applied in order.")
    @wraps(fn)
    def wrapper(*args: Any, spec_path: str | None, overlay_args: tuple[str, ...], **kwargs: Any) -> Any:
        project = click.get_current_context().find_root().params.get("project_file")
        kwargs["spec_arg"] = SpecChoice(spec_path, overlay_args, project)
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


strict_option = click.option("--strict", is_flag=True, help="Treat spec-defect warnings as errors (exit 2).")


def _warn_count(spec: Model) -> None:
    # A build step wants one line, not the whole list; `amqgen validate` prints them all.
    if spec.warnings:
        n = len(spec.warnings)
        click.echo(f"amqgen: {spec.title}: {n} spec warning{'s' if n > 1 else ''} (`amqgen validate` lists them)", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="amqgen")
@click.option("--project", "project_file", metavar="FILE", default=None, type=click.Path(path_type=Path),
              help="The project file to use (default: ./amqgen.toml when it exists).")
def main(project_file: Path | None) -> None:
    """amqgen: AMQP 0-8 / 0-9 / 0-9-1 XML spec (+ overlays) -> one typed model -> generated bindings."""
    del project_file  # read by each command that loads a spec (spec_option)


@main.command()
@spec_option
@strict_option
@reporting
def validate(spec_arg: SpecChoice, strict: bool) -> None:
    """Load a spec, print a summary and its warnings."""
    family, spec = spec_arg.load_any(strict)
    click.echo(family.summary(spec))
    for w in spec.warnings:
        click.echo(w.format(), err=True)


@main.command()
@spec_option
@strict_option
@click.option("--json", "as_json", is_flag=True, help="The whole lowered model as versioned JSON.")
@click.option("--json-schema", "as_schema", is_flag=True, help="The JSON Schema of `inspect --json`.")
@reporting
def inspect(spec_arg: SpecChoice, strict: bool, as_json: bool, as_schema: bool) -> None:
    """Show the lowered model: classes, methods and their wire layout (1.0: its types)."""
    if as_schema:
        click.echo(json.dumps(_family(spec_arg).json_schema(), indent=2))
        return
    family, spec = spec_arg.load_any(strict)
    if as_json:
        sys.stdout.write(family.inspect_json(spec))
        return
    _warn_count(spec)
    for line in family.inspect_text(spec):
        click.echo(line)


def _family(spec_arg: SpecChoice) -> Family:
    """The family of the spec a command would load (for what needs no spec loaded: a JSON Schema)."""
    return family_of(spec_arg.files()[0])


def _parse_options(pairs: tuple[str, ...], package: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{p!r} is not KEY=VALUE", param_hint="--option")
        out[key] = value
    if package is not None:
        out["package"] = package
    return out


@main.command(name="render")
@click.option("--lang", "lang", default=None, metavar="PACK",
              help="Target pack: python, c, java, or one of --templates (default: the project's [[render]] tables).")
@click.option("--out", "out", default=None, type=click.Path(path_type=Path), help="Output directory.")
@spec_option
@strict_option
@click.option("--check", is_flag=True, help="Write nothing; print a diff and exit 1 if DIR differs.")
@click.option("--templates", "templates", multiple=True, type=click.Path(path_type=Path),
              help="A pack, or a folder of packs, adding to or overriding the built-in ones.")
@click.option("--option", "-D", "option_pairs", multiple=True, metavar="KEY=VALUE", help="A pack option.")
@click.option("--package", default=None, help="Shortcut for --option package=NAME.")
@click.option("--list-outputs", is_flag=True, help="Print the paths render would write, one per line; write nothing.")
@click.option("--depfile", default=None, type=click.Path(path_type=Path),
              help="Also write a Make-style depfile: every output depends on the spec and the pack's files.")
@reporting
def render_cmd(lang: str | None, out: Path | None, spec_arg: SpecChoice, strict: bool, check: bool,
               templates: tuple[Path, ...], option_pairs: tuple[str, ...], package: str | None,
               list_outputs: bool, depfile: Path | None) -> None:
    """Render a template pack for a spec into DIR (only changed files are rewritten; files an earlier
    render wrote that this one does not produce are removed). With no --lang and --out, render every
    [[render]] table of the project file (amqgen.toml)."""
    options = _parse_options(option_pairs, package)
    inputs: list[Path] = []
    if lang is not None and out is not None:
        jobs = [RenderJob(lang, out, options, templates, depfile)]
    elif lang is not None or out is not None:
        raise UsageError("--lang and --out go together (give both, or neither to render the project's [[render]] tables)")
    else:
        project = spec_arg.project()
        if project is None or not project.renders:
            raise UsageError("--lang and --out are required (or run in a project whose amqgen.toml has [[render]] "
                             "tables)")
        if options or templates or depfile:
            raise UsageError("--option, --package, --templates and --depfile go with --lang and --out; a project sets "
                             f"them in its [[render]] tables ({project.path})")
        jobs = list(project.renders)
        inputs.append(project.path)
    spec_file, overlay_files, _ = spec_arg.files()
    inputs[:0] = [spec_file, *overlay_files]
    _, spec = spec_arg.load_any(strict)
    drift = [_render_job(job, spec, inputs, check, list_outputs) for job in jobs]
    if any(drift):
        sys.exit(1)


def _render_job(job: RenderJob, spec: Model, inputs: list[Path], check: bool,
                list_outputs: bool) -> bool:
    """One pack into one directory; True when --check found drift."""
    packs = discover(job.templates)
    found = resolve(packs, job.lang, spec.family)  # --lang python with a 1.0 spec: the python10 pack
    if found is None:
        raise click.BadParameter(f"no pack {job.lang!r} (available: {', '.join(sorted(packs))})", param_hint="--lang")
    pack, out = found, job.out
    files = with_manifest(pack, spec, render(pack, spec, job.options))
    if list_outputs:
        for rel in files:
            click.echo(str(out / rel))
        return False
    if job.depfile is not None and not check:
        # the manifest is the stamp: the one target, refreshed by every render (write_tree below)
        deps = [*(str(p) for p in inputs), *(str(p) for p in pack_files(pack))]
        write_file(job.depfile, depfile_text([str(out / manifest_name(pack))], deps).encode("utf-8"))
    _warn_count(spec)
    stale = stale_files(out, pack, files) if out.is_dir() else []
    if check:
        diff = check_tree(out, files)
        missing = [rel for rel in files if not (out / rel).is_file()]
        if diff or stale:
            sys.stdout.write(diff)
            for rel in stale:
                click.echo(f"stale: {out / rel} (generated earlier, no longer produced)")
            problems = [f"{n} {what}" for n, what in ((len(missing), "missing"), (len(stale), "stale"),
                                                       (_count_changed(out, files, missing), "changed")) if n]
            click.echo(f"amqgen: {out} is out of date with {spec.title} ({', '.join(problems)}; "
                       "run render without --check)", err=True)
            return True
        click.echo(f"{out}: {len(files)} files up to date")
        return False
    report = write_tree(out, files)
    os.utime(out / manifest_name(pack))  # the stamp says when render last ran, even when nothing changed
    removed = remove_stale(out, stale)
    for rel in removed:
        click.echo(f"removed stale {out / rel}")
    click.echo(f"{out}: {len(report.written)} written, {len(report.unchanged)} unchanged"
               + (f", {len(removed)} removed" if removed else ""))
    return False


def _count_changed(out: Path, files: dict[str, bytes], missing: list[str]) -> int:
    return sum(1 for rel, data in files.items() if rel not in missing and (out / rel).read_bytes() != data)


@main.command(name="specs")
@reporting
def specs_cmd() -> None:
    """List the spec names --spec accepts and where each comes from."""
    default_taken: set[str] = set()
    for e in available():
        status = "present" if e.present else "missing"
        if not e.supported:
            status += ", unsupported family"
        short = e.short if (e.present and e.short not in default_taken) else ""
        if short:
            default_taken.add(e.short)
        click.echo(f"{e.name:<24} {('= ' + short) if short else '':<16} {e.source:<20} {status:<30} {e.path}")
    for name, path in overlays():
        status = "present" if path.is_file() else "missing"
        click.echo(f"{'overlay:' + name:<24} {'= ' + name:<16} {'bundled overlay':<20} {status:<30} {path}")


@main.command(name="packs")
@click.option("--templates", "templates", multiple=True, type=click.Path(path_type=Path))
@reporting
def packs_cmd(templates: tuple[Path, ...]) -> None:
    """List the template packs render --lang accepts."""
    for name, p in sorted(discover(templates).items()):
        click.echo(f"{name:<12} {p.language:<7} {len(p.outputs):>3} outputs  {p.root}  {p.description}")


@main.command(name="vectors")
@spec_option
@strict_option
@click.option("--dialect", default="rabbitmq", metavar="rabbitmq|qpid", help="Field-table dialect (default rabbitmq).")
@click.option("--out", "out", default=None, type=click.Path(path_type=Path), help="Output file ('-': stdout).")
@click.option("--json-schema", "as_schema", is_flag=True, help="The JSON Schema of the corpus document.")
@reporting
def vectors_cmd(spec_arg: SpecChoice, strict: bool, dialect: str, out: Path | None, as_schema: bool) -> None:
    """Write the conformance corpus of a spec: method, properties, frame and table cases with their exact
    octets, and malformed octets with the kind of error a decoder must raise (docs/vectors.md)."""
    family = _family(spec_arg)
    if as_schema:
        click.echo(json.dumps(family.corpus_schema(), indent=2))
        return
    if out is None:
        raise UsageError("--out FILE is required ('-' writes to stdout)")
    if family.dialects and dialect not in family.dialects:
        raise UsageError(f"--dialect must be one of {', '.join(family.dialects)}, not {dialect!r}")
    family, spec = spec_arg.load_any(strict)
    doc = family.corpus(spec, dialect)
    text = dumps(doc)
    if str(out) == "-":
        sys.stdout.write(text)
        return
    report = write_file(out, text.encode("utf-8"))
    _warn_count(spec)
    counts = ", ".join(f"{len(doc[k])} {k}" for k in family.corpus_sections)
    click.echo(f"{out}: {'written' if report else 'unchanged'} ({counts} cases)")


DOCS_FORMATS = ("html", "markdown")


@main.command(name="docs")
@click.option("--format", "fmt", default="html", metavar="html|markdown", help="Output format (default html).")
@click.option("--out", "out", default=None, type=click.Path(path_type=Path), help="Output directory.")
@spec_option
@strict_option
@reporting
def docs_cmd(fmt: str, out: Path | None, spec_arg: SpecChoice, strict: bool) -> None:
    """Render the reference documentation of a spec (one HTML page or one Markdown file) into DIR."""
    if fmt not in DOCS_FORMATS:
        raise UsageError(f"--format must be one of {', '.join(DOCS_FORMATS)}, not {fmt!r}")
    if out is None:
        raise UsageError("--out DIR is required")
    family, spec = spec_arg.load_any(strict)
    files = render(discover()[family.docs_packs[fmt]], spec)
    report = write_tree(out, files)
    _warn_count(spec)  # after writing: a failure is reported as its one error line
    click.echo(f"{out}: {len(report.written)} written, {len(report.unchanged)} unchanged ({', '.join(files)})")


@main.command(name="diff")
@click.argument("old_arg", metavar="OLD")
@click.argument("new_arg", metavar="NEW")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON for tools instead of text.")
@click.option("--overlay", "new_overlays", metavar="PATH|NAME", multiple=True,
              help="An overlay merged into NEW (repeatable, in order): `diff S S --overlay O` is what O changes.")
@click.option("--old-overlay", "old_overlays", metavar="PATH|NAME", multiple=True,
              help="An overlay merged into OLD (repeatable, in order).")
@reporting
def diff_cmd(old_arg: str, new_arg: str, as_json: bool, new_overlays: tuple[str, ...],
             old_overlays: tuple[str, ...]) -> None:
    """What changed from spec OLD to spec NEW (paths or names). Exit 0: nothing breaks wire
    compatibility; 1: something does; 2: bad input."""
    old_choice, new_choice = (SpecChoice(old_arg, old_overlays, use_project=False),
                          SpecChoice(new_arg, new_overlays, use_project=False))
    family = _family(new_choice)
    if _family(old_choice) is not family:
        raise UsageError("OLD and NEW are of different families (AMQP 1.0 and 0-x): nothing to compare")
    d = family.diff(old_choice.load_any()[1], new_choice.load_any()[1])
    sys.stdout.write(to_json(d) if as_json else to_text(d))
    sys.exit(1 if d.breaking else 0)


class _TrafficGroup(click.Group):
    """`amqgen traffic CAPTURE...` decodes; `amqgen traffic report DIR` is the one subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["decode", *args]
        return super().parse_args(ctx, args)


def _traffic_specs(spec_arg: Any, strict: bool) -> tuple[Any, Any, list[str]]:
    """The 0-x spec and the AMQP 1.0 model a run decodes with, and notes for the user. ``--spec`` (or the
    project's spec) names one family's spec, a vendor variant or overlay for 0-x; the other family gets its
    default. Without the 1.0 file set installed, 1.0 connections are found and counted but not decoded."""
    from .errors import AmqgenError
    from .family import amqp0, amqp10
    from .specs import resolve
    from .traffic import DEFAULT_0X, DEFAULT_0X_OVERLAYS, DEFAULT_10

    notes: list[str] = []
    project_strict = spec_arg.files()[2]
    strict = strict or project_strict
    named = spec_arg.spec is not None or (spec_arg.project() is not None and spec_arg.project().spec is not None)
    family, model = spec_arg.load_any(strict) if named else (None, None)
    spec10 = model if family is amqp10() else None
    if family is amqp0():
        spec0 = model
    else:
        # the default 0-x spec; overlays given without --spec are the user's, in place of the default's own
        given = spec_arg.overlays if not named else ()
        spec0 = SpecChoice(DEFAULT_0X, given or DEFAULT_0X_OVERLAYS, use_project=False).load(strict)
    if spec10 is None:
        try:
            spec10 = amqp10().load(resolve(DEFAULT_10), (), strict)
        except AmqgenError as e:
            notes.append(f"amqgen traffic: AMQP 1.0 connections will be counted, not decoded ({e})")
    return spec0, spec10, notes


@main.group(name="traffic", cls=_TrafficGroup)
def traffic_cmd() -> None:
    """Decode AMQP captures into Parquet on Spark (`amqgen traffic CAPTURE... --out DIR`), and
    render a report of the result (`amqgen traffic report DIR --out report.html`)."""


@traffic_cmd.command(name="decode")
@click.argument("captures", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Output directory.")
@spec_option
@strict_option
@click.option("--master", default=None, metavar="URL", help="Spark master (default local[*]: embedded, every core).")
@click.option("--port", "ports", multiple=True, type=click.IntRange(1, 65535), metavar="N",
              help="A TCP port AMQP is on (repeatable; default 5672). Other ports: found by the protocol header.")
@click.option("--policy", default="rabbitmq", metavar="rabbitmq|portable|spec", help="Assert check policy.")
@click.option("--bodies", is_flag=True, help="Keep message bodies in the messages dataset.")
@click.option("--split-size", "split_mb", default=16, type=click.IntRange(1, 4096), metavar="MB",
              help="Largest part of a capture one task reads (default 16).")
@click.option("--conf", "conf_pairs", multiple=True, metavar="KEY=VALUE", help="A Spark configuration setting.")
@click.option("--verbose", is_flag=True, help="Show Spark's own console lines (start-up warnings, log4j).")
@reporting
def traffic_decode(captures: tuple[Path, ...], out: Path, spec_arg: SpecChoice, strict: bool, master: str | None,
                   ports: tuple[int, ...], policy: str, bodies: bool, split_mb: int, conf_pairs: tuple[str, ...],
                   verbose: bool) -> None:
    """Decode AMQP captures (pcap, pcapng, gzip; files or directories) into Parquet datasets under DIR:
    frames, messages, connections, violations, and summary.json."""
    from .errors import UsageError
    from .traffic import POLICIES, traffic_run, traffic_start

    if policy not in POLICIES:
        raise UsageError(f"--policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    conf = _parse_options(conf_pairs, None)
    starting = traffic_start(out, master, conf, verbose)  # Spark's JVM starts while the specs are read
    spec, spec10, notes = _traffic_specs(spec_arg, strict)
    for line in notes:
        click.echo(line, err=True)
    _warn_count(spec)
    problems = traffic_run(list(captures), out, spec, master=master, ports=ports, policy=policy, bodies=bodies,
                           split_size=split_mb << 20, conf=conf, verbose=verbose, starting=starting, spec10=spec10)
    if problems:
        click.echo(f"amqgen traffic: {problems} input(s) skipped or damaged (listed above); {out} holds the rest",
                   err=True)
        sys.exit(2)


@traffic_cmd.command(name="report")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="The HTML file to write.")
@click.option("--docs", "docs_url", default="reference/index.html", metavar="URL",
              help="Where the spec's reference page (`amqgen docs`) is, for links to rules.")
@reporting
def traffic_report(directory: Path, out: Path, docs_url: str) -> None:
    """One self-contained HTML page with charts of a traffic output directory."""
    from .traffic.report import report

    write_file(out, report(directory, docs_url).encode("utf-8"))
    click.echo(f"{out}: written")


if __name__ == "__main__":  # pragma: no cover
    main()
