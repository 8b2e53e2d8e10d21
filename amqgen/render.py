"""Template packs: discovery, rendering into memory, formatting, and writing or checking.

A pack is a folder with ``pack.toml`` and Jinja templates. The manifest names the pack's
language (for the naming layer), its formatter, option defaults, and its outputs: which
template, fanned out per spec, class, content class or method, to which path pattern.
Everything is rendered and formatted in memory first, so a failure leaves nothing behind.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from . import __version__, fmtcache
from .corpus import dumps
from .errors import Location, RenderError
from .family import Model, family_of_model
from .naming import Naming
from .notice import GENERATED_MARK, notice
from .specs import data_dir

if TYPE_CHECKING:
    import jinja2

FANOUTS = ("spec", "class", "content-class", "method")
FORMATTERS = ("none", "black", "clang-format")
MANIFEST = "pack.toml"


@dataclass(frozen=True)
class Output:
    template: str
    path: str  # pattern: {package}, {class}, {Class}, {method}, {Method} and any option
    per: str
    formatter: str | None  # None: the pack's
    when: str | None = None  # an option that must be on ("1", "true", "yes") for this output


@dataclass(frozen=True)
class Pack:
    name: str
    root: Path
    language: str
    description: str
    formatter: str
    options: dict[str, str]
    outputs: tuple[Output, ...]
    search_path: tuple[Path, ...]  # this pack first, then what it extends
    hook: Path | None
    clang_format_style: str = "{BasedOnStyle: LLVM, ColumnLimit: 100}"
    black_line_length: int = 100
    autoescape: bool = False  # HTML packs: every {{ value }} is HTML-escaped unless marked safe
    families: tuple[str, ...] = ("0-8", "0-9", "0-9-1")  # the spec families the pack renders
    #: the --lang name this pack also answers to for its families (python10: "python" for AMQP 1.0)
    target: str | None = None


#: every family a pack may declare (pack.toml ``families``)
FAMILIES = ("0-8", "0-9", "0-9-1", "1-0")


def _manifest_error(path: Path, message: str) -> RenderError:
    return RenderError(message, Location(str(path)))


def read_pack(root: Path, known: Mapping[str, Pack] | None = None) -> Pack:
    mpath = root / MANIFEST
    try:
        data = tomllib.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _manifest_error(mpath, "no pack manifest") from None
    except tomllib.TOMLDecodeError as e:
        line = re.search(r"line (\d+)", str(e))
        raise RenderError(f"bad pack manifest: {e}", Location(str(mpath), int(line.group(1)) if line else None)) from None
    name = str(data.get("name") or root.name)
    base: Pack | None = None
    if data.get("extends"):
        base = (known or {}).get(str(data["extends"]))
        if base is None:
            raise _manifest_error(mpath, f"pack {name!r} extends unknown pack {data['extends']!r}")
    language = str(data.get("language") or (base.language if base else ""))
    if not language:
        raise _manifest_error(mpath, "pack manifest needs a language (python, c or java)")
    formatter = str(data.get("formatter") or (base.formatter if base else "none"))
    if formatter not in FORMATTERS:
        raise _manifest_error(mpath, f"unknown formatter {formatter!r} (known: {', '.join(FORMATTERS)})")
    outputs: dict[str, Output] = {o.path: o for o in base.outputs} if base else {}
    for i, raw in enumerate(data.get("outputs", [])):
        try:
            o = Output(str(raw["template"]), str(raw["path"]), str(raw.get("per", "spec")), raw.get("formatter"),
                       str(raw["when"]) if raw.get("when") else None)
        except (KeyError, TypeError):
            raise _manifest_error(mpath, f"outputs[{i}] needs template and path") from None
        if o.per not in FANOUTS:
            raise _manifest_error(mpath, f"outputs[{i}]: per must be one of {', '.join(FANOUTS)}, not {o.per!r}")
        if o.formatter is not None and o.formatter not in FORMATTERS:
            raise _manifest_error(mpath, f"outputs[{i}]: unknown formatter {o.formatter!r}")
        outputs[o.path] = o
    if not outputs:
        raise _manifest_error(mpath, "pack has no outputs")
    hook = root / str(data["hook"]) if data.get("hook") else (base.hook if base else None)
    if hook is not None and not hook.is_file():
        raise _manifest_error(mpath, f"hook file {hook} does not exist")
    options = dict(base.options) if base else {}
    options.update({str(k): str(v) for k, v in (data.get("options") or {}).items()})
    families = tuple(str(f) for f in data.get("families", base.families if base else Pack.families))
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        raise _manifest_error(mpath, f"families {list(families)}: each must be one of {', '.join(FAMILIES)}")
    return Pack(
        name=name,
        root=root,
        language=language,
        description=str(data.get("description", base.description if base else "")),
        formatter=formatter,
        options=options,
        outputs=tuple(outputs.values()),
        search_path=(root, *(base.search_path if base else ())),
        hook=hook,
        clang_format_style=str(data.get("clang_format_style", base.clang_format_style if base else Pack.clang_format_style)),
        black_line_length=int(data.get("black_line_length", base.black_line_length if base else 100)),
        autoescape=bool(data.get("autoescape", base.autoescape if base else False)),
        families=families,
        target=str(data["target"]) if data.get("target") else (base.target if base else None),
    )


def discover(extra: Iterable[Path] = ()) -> dict[str, Pack]:
    """Built-in packs, then each ``--templates DIR`` (a pack itself, or a folder of packs);
    a later pack with the same name replaces an earlier one."""
    packs: dict[str, Pack] = {}

    def add_dir(d: Path, *, single_ok: bool) -> None:
        if single_ok and (d / MANIFEST).is_file():
            p = read_pack(d, packs)
            packs[p.name] = p
            return
        for sub in sorted(d.iterdir()):
            if (sub / MANIFEST).is_file():
                p = read_pack(sub, packs)
                packs[p.name] = p

    add_dir(data_dir("templates"), single_ok=False)
    for d in extra:
        if not d.is_dir():
            raise RenderError("templates directory does not exist", Location(str(d)))
        add_dir(d, single_ok=True)
    return packs


# -- rendering ---------------------------------------------------------------------------

def resolve(packs: Mapping[str, Pack], lang: str, family: str) -> Pack | None:
    """The pack ``--lang LANG`` means for a spec of ``family``: the pack named LANG when it renders that family,
    else the one pack that declares ``target = LANG`` for it, else the pack named LANG (whose render then refuses
    the family in one line); None when no pack has that name or target."""
    named = packs.get(lang)
    if named is not None and family in named.families:
        return named
    for p in sorted(packs.values(), key=lambda p: p.name):
        if p.target == lang and family in p.families:
            return p
    return named


def _load_hook(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"amqgen_pack_hook_{abs(hash(str(path)))}", path)
    if spec is None or spec.loader is None:
        raise RenderError("cannot load pack hook", Location(str(path)))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _c_string(s: str) -> str:
    out = []
    for b in s.encode("utf-8"):
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= b < 127 and ch != "?":  # '?' escaped: no trigraphs
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _java_string(s: str) -> str:
    """A Java string literal. Control characters get octal escapes, never \\u escapes: javac turns
    \\u000a into a real line break before it reads the literal."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.extend(f"\\u{u:04x}" for u in _utf16(ch))
    return '"' + "".join(out) + '"'


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def _environment(pack: Pack, naming: Naming, hook: Any) -> jinja2.Environment:
    import jinja2  # here, not at the top: the commands that render nothing start without it

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(p) for p in pack.search_path]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=pack.autoescape,
    )
    env.filters.update(
        {
            "type": naming.type,
            "member": naming.member,
            "function": naming.function,
            "constant": naming.constant,
            "snake": naming.snake,
            "pyrepr": repr,
            "cstring": _c_string,
            "jstring": _java_string,
        }
    )
    if hook is not None:
        env.filters.update(getattr(hook, "FILTERS", {}))
    return env


def _format(text: str, formatter: str, pack: Pack, where: str) -> str:
    """The formatted text, from the cache (fmtcache) when this formatter, version and style saw it before."""
    if formatter == "none":
        return text
    k = fmtcache.key(formatter, _formatter_version(formatter), _formatter_style(formatter, pack, where), text)
    cached = fmtcache.get(k)
    if cached is not None:
        return cached
    formatted = _run_formatter(text, formatter, pack, where)
    fmtcache.put(k, formatted)
    return formatted


def _formatter_style(formatter: str, pack: Pack, where: str) -> str:
    if formatter == "black":
        return f"line-length={pack.black_line_length}"
    # clang-format picks the language by the file's extension (--assume-filename)
    return f"{pack.clang_format_style} {PurePosixPath(where).suffix}"


_VERSIONS: dict[str, str] = {}


def _formatter_version(formatter: str) -> str:
    """The formatter's version: part of the cache key, so an upgrade formats anew."""
    if formatter not in _VERSIONS:
        if formatter == "black":
            from importlib.metadata import version

            _VERSIONS[formatter] = version("black")
        else:
            exe = shutil.which("clang-format")
            if exe is None:
                return ""  # _run_formatter says it is missing
            proc = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
            # the path too: two installs of one version may still differ in their defaults
            _VERSIONS[formatter] = f"{exe} {proc.stdout.strip()}"
    return _VERSIONS[formatter]


def _run_formatter(text: str, formatter: str, pack: Pack, where: str) -> str:
    if formatter == "black":
        import black
        from black.parsing import InvalidInput

        try:
            return black.format_str(text, mode=black.Mode(line_length=pack.black_line_length))
        except InvalidInput as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise RenderError(f"template produced invalid Python, black says: {first}", Location(where)) from None
    if formatter == "clang-format":
        exe = shutil.which("clang-format")
        if exe is None:
            raise RenderError("formatter clang-format is not installed (Debian package clang-format)", Location(where))
        proc = subprocess.run(
            [exe, f"--style={pack.clang_format_style}", f"--assume-filename={where}"],
            input=text.encode(), capture_output=True, check=False,
        )
        if proc.returncode != 0:
            raise RenderError(f"clang-format failed: {proc.stderr.decode(errors='replace').strip()}", Location(where))
        return proc.stdout.decode()
    return text


def _safe_relpath(rel: str, where: str) -> str:
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise RenderError(f"output path {rel!r} leaves the output directory", Location(where))
    return str(p)


def render(pack: Pack, spec: Model, options: Mapping[str, str] | None = None) -> dict[str, bytes]:
    """Render every output of ``pack`` for ``spec`` into memory: {relative path: bytes}."""
    if spec.family not in pack.families:
        raise RenderError(f"pack {pack.name!r} renders AMQP {', '.join(pack.families)}; {spec.title} is AMQP "
                          f"{spec.family}")
    opts = dict(pack.options)
    for k, v in (options or {}).items():
        if k not in opts:
            known = ", ".join(sorted(opts)) or "none"
            raise RenderError(f"pack {pack.name!r} has no option {k!r} (its options: {known})")
        opts[k] = v
    import jinja2

    naming = Naming(pack.language, prefix=opts.get("prefix", "amqp"))
    family = family_of_model(spec)
    family.check_names(naming, spec)
    hook = _load_hook(pack.hook) if pack.hook else None
    env = _environment(pack, naming, hook)
    corpus_text: dict[str, str] = {}  # built once per dialect and render: several templates read it

    def corpus(dialect: str) -> str:
        if dialect not in corpus_text:
            corpus_text[dialect] = dumps(family.corpus(spec, dialect))
        return corpus_text[dialect]

    base_ctx: dict[str, Any] = {
        "spec": spec,
        "naming": naming,
        "options": opts,
        "notice": notice(spec),
        "amqgen_version": __version__,
        **family.render_context(spec, corpus),
    }
    if hook is not None and hasattr(hook, "context"):
        base_ctx.update(hook.context(spec, naming, opts))
    # A hook may add output path placeholders derived from the options (Java: the package's folder).
    path_names: dict[str, str] = dict(hook.path_names(opts)) if hook is not None and hasattr(hook, "path_names") else {}
    files: dict[str, bytes] = {}
    for out in pack.outputs:
        if out.per not in family.fanouts:
            raise RenderError(f"pack {pack.name!r}: an {family.title} output is rendered once per spec, not per "
                              f"{out.per}", Location(str(pack.root / MANIFEST)))
        if out.when is not None and opts.get(out.when, "").lower() not in ("1", "true", "yes", "on"):
            continue
        try:
            template = env.get_template(out.template)
        except jinja2.TemplateNotFound:
            raise RenderError(f"template {out.template!r} not found", Location(str(pack.root / MANIFEST))) from None
        except jinja2.TemplateSyntaxError as e:
            raise RenderError(f"template syntax error: {e.message}", Location(e.filename or out.template, e.lineno)) from None
        for cls, method in family.targets(out.per, spec):
            names = {**opts, **path_names}
            if cls is not None:
                names.update({"class": naming.snake(cls.name), "Class": naming.type(cls.name)})
            if method is not None:
                names.update({"method": naming.snake(method.name), "Method": naming.type(method.class_name, method.name)})
            try:
                rel = _safe_relpath(out.path.format_map(names), str(pack.root / MANIFEST))
            except KeyError as e:
                raise RenderError(f"output path {out.path!r} uses unknown placeholder {e}", Location(str(pack.root / MANIFEST))) from None
            if rel in files:
                raise RenderError(f"two outputs write {rel!r}", Location(str(pack.root / MANIFEST)))
            try:
                text = template.render(base_ctx, cls=cls, method=method)
            except jinja2.UndefinedError as e:
                raise RenderError(f"template {out.template}: {e.message}", Location(out.template, _template_line(e))) from None
            except jinja2.TemplateError as e:
                raise RenderError(f"template {out.template}: {e}", Location(out.template)) from None
            files[rel] = _format(text, out.formatter or pack.formatter, pack, rel).encode("utf-8")
    return dict(sorted(files.items()))


def _template_line(e: BaseException) -> int | None:
    tb = e.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith((".j2", ".jinja", ".tmpl")):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


# -- writing and checking ----------------------------------------------------------------

@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp makes the file 0600: give it the mode the file had, or a new file's mode under the umask, so a
    # replaced output stays readable by whoever read it (a web server publishing the docs, a build's other user)
    mode = path.stat().st_mode & 0o7777 if path.is_file() else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_file(path: Path, data: bytes) -> bool:
    """Write one file atomically if its bytes changed; True when written."""
    try:
        if path.is_file() and path.read_bytes() == data:
            return False
        if path.exists() and not path.is_file():
            raise RenderError("output exists and is not a regular file", Location(str(path)))
        _atomic_write(path, data)
    except OSError as e:
        raise RenderError(f"cannot write output: {e.strerror}", Location(e.filename or str(path))) from None
    return True


def write_tree(out: Path, files: Mapping[str, bytes]) -> WriteReport:
    """Write what changed. A new output directory appears whole (built aside, then renamed);
    in an existing one each changed file is replaced atomically and the rest left untouched."""
    report = WriteReport()
    try:
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.amqgen-"))
            try:
                tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it 0700; the output is an ordinary directory
                for rel, data in files.items():
                    (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                    (tmp / rel).write_bytes(data)
                os.rename(tmp, out)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            report.written.extend(files)
            return report
        if not out.is_dir():
            raise RenderError("output path exists and is not a directory", Location(str(out)))
        for rel, data in files.items():
            target = out / rel
            if target.is_file() and target.read_bytes() == data:
                report.unchanged.append(rel)
                continue
            if target.exists() and not target.is_file():
                raise RenderError("output file exists and is not a regular file", Location(str(target)))
            _atomic_write(target, data)
            report.written.append(rel)
    except OSError as e:
        raise RenderError(f"cannot write output: {e.strerror}", Location(e.filename or str(out))) from None
    return report


def check_tree(out: Path, files: Mapping[str, bytes]) -> str:
    """A unified diff of what is on disk against what would be rendered ('' when equal)."""
    chunks: list[str] = []
    for rel, data in files.items():
        target = out / rel
        old = target.read_bytes() if target.is_file() else None
        if old == data:
            continue
        old_lines = old.decode("utf-8", "replace").splitlines(keepends=True) if old is not None else []
        new_lines = data.decode("utf-8", "replace").splitlines(keepends=True)
        diff = difflib.unified_diff(
            old_lines, new_lines,
            fromfile=f"{target} (on disk)" if old is not None else "/dev/null",
            tofile=f"{target} (rendered)",
        )
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
        chunks.append(text or f"--- {target} (on disk)\n+++ {target} (rendered)\n(differs only in bytes that are not lines)\n")
    return "".join(chunks)



# -- build-step support: the outputs manifest, stale files, depfiles -----------------------------------
#: Every generated file carries this in its notice; stale-file removal never touches a file without it.


def manifest_name(pack: Pack) -> str:
    """The file in the output directory listing what the last render of ``pack`` wrote there."""
    return f".amqgen-{pack.name}"


def manifest_text(pack: Pack, spec: Model, files: Mapping[str, bytes]) -> bytes:
    why = (f"# the files render --lang {pack.name} wrote here; a file listed here that a later render does not "
           "produce is removed by it")
    lines = [f"# {notice(spec)}", why, *sorted(files)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def with_manifest(pack: Pack, spec: Model, files: Mapping[str, bytes]) -> dict[str, bytes]:
    return {**files, manifest_name(pack): manifest_text(pack, spec, files)}


def stale_files(out: Path, pack: Pack, files: Mapping[str, bytes]) -> list[str]:
    """Files the previous render of ``pack`` into ``out`` wrote (its manifest says so) that this
    render does not produce, and that still carry amqgen's generated-file notice."""
    manifest = out / manifest_name(pack)
    if not manifest.is_file():
        return []
    stale = []
    for line in manifest.read_text(encoding="utf-8", errors="replace").splitlines():
        rel = line.strip()
        if not rel or rel.startswith("#") or rel in files:
            continue
        try:
            rel = _safe_relpath(rel, str(manifest))
        except RenderError:
            continue  # a manifest edited to point outside the directory is ignored, never followed
        target = out / rel
        if target.is_file() and not target.is_symlink() and _is_generated(target):
            stale.append(rel)
    return sorted(stale)


def _is_generated(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return GENERATED_MARK in f.read(4096)
    except OSError:
        return False


def remove_stale(out: Path, stale: Iterable[str]) -> list[str]:
    """Delete the stale files, then the directories they leave empty (never ``out`` itself)."""
    removed = []
    for rel in stale:
        target = out / rel
        try:
            target.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise RenderError(f"cannot remove stale output: {e.strerror}", Location(str(target))) from None
        removed.append(rel)
        parent = target.parent
        while parent != out and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    return removed


def pack_files(pack: Pack) -> list[Path]:
    """Every file a render of ``pack`` reads: its templates, manifests and hooks, its bases' too."""
    out: set[Path] = set()
    for root in pack.search_path:
        out.update(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    if pack.hook is not None:
        out.add(pack.hook)
    return sorted(out)


def _make_escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")


def depfile_text(targets: Iterable[str], deps: Iterable[str]) -> str:
    """A Make-style depfile (also read by Ninja and CMake's DEPFILE): every output depends on every input."""
    lines = [" \\\n  ".join(_make_escape(t) for t in targets) + ": \\"]
    dep_list = [_make_escape(d) for d in deps]
    lines += [f"  {d} \\" for d in dep_list[:-1]] + ([f"  {dep_list[-1]}"] if dep_list else [])
    return "\n".join(lines) + "\n"
