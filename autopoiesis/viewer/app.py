"""The viewer's ASGI application: a Starlette app over one `Memory`, its pages rendered on
the server with Jinja2 (autoescape on), a little plain JavaScript for the live notice, and
the guards of `guard.py` around every request.

    app = create_app(Memory("~/memory"), token="...", port=8765)

Everything it shows it reads when a page is asked for (the session catalog, the files,
git, the search index, which catches up on read), so new sessions and commits show on
the next load without a restart.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from autopoiesis.errors import AutopoiesisError, InvalidArgumentError, UnsafePathError
from autopoiesis.viewer.guard import EVERY_ADDRESS, HostCheck, TokenGuard, allowed_hosts

if TYPE_CHECKING:
    from jinja2 import Environment

    from autopoiesis.compiler import CompiledContext, ContextCompiler
    from autopoiesis.git.repo import MemoryGit
    from autopoiesis.index import SearchIndex
    from autopoiesis.memory import Memory
    from autopoiesis.topics.pipeline import TopicActivation, WatcherPipeline
    from autopoiesis.viewer.health import HealthMonitor
    from autopoiesis.viewer.scores import EvalJobs
    from autopoiesis.viewer.sessions import SessionCatalog

HERE = Path(__file__).resolve().parent
NAV = (
    ("timeline", "Timeline"),
    ("knowledge", "Knowledge"),
    ("search", "Search"),
    ("compile", "Compiler"),
    ("compare", "Compare"),
    ("health", "Health"),
)


@dataclass
class Viewer:
    """What every page reads: the memory and the server's settings and caches."""

    memory: Memory
    token: str
    write: bool = False
    questions: dict[str, Path] = field(default_factory=dict)
    _catalog: SessionCatalog | None = None
    _git: MemoryGit | None = None
    _jobs: EvalJobs | None = None
    _comparisons: dict[tuple[str, str], Any] = field(default_factory=dict)
    # the search index, the compiler and the watchers: kept open, lent to one page at a time
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _index: SearchIndex | None = None
    _compiler: ContextCompiler | None = None
    _watchers: WatcherPipeline | None = None

    @property
    def catalog(self) -> SessionCatalog:
        if self._catalog is None:
            from autopoiesis.viewer.sessions import SessionCatalog

            self._catalog = SessionCatalog(self.memory.repo)
        return self._catalog

    @property
    def git(self) -> MemoryGit:
        if self._git is None:
            from autopoiesis.git.repo import MemoryGit

            self._git = MemoryGit(self.memory.repo)
        return self._git

    @property
    def jobs(self) -> EvalJobs:
        if self._jobs is None:
            from autopoiesis.viewer.scores import EvalJobs

            self._jobs = EvalJobs(self.memory, self.questions)
        return self._jobs

    @contextlib.contextmanager
    def searching(self) -> Iterator[SearchIndex | None]:
        """The memory's search index, open for the life of the server and lent to one page
        at a time: its change watcher and its term postings make a search cost what it
        costs a long-lived process, not a `git status` and a cold start. None while no
        index is built or it cannot be opened (the search then says why and answers with
        git grep). Opened again when memory.db was started over."""
        with self._lock:
            if self._index is not None and not self._index.is_current():
                self._close_index()
            if self._index is None:
                try:
                    self._index = self.memory.open_index(many_searches=True)
                except Exception:  # search_outcome opens it itself and says what is wrong
                    self._index = None
            yield self._index

    def compile(
        self, message: str, **options: Any
    ) -> tuple[CompiledContext, list[TopicActivation]]:
        """Memory.compile (OPTIONS are its keywords) with the server's compiler, which
        searches with the index of `searching`, and its watcher pipeline, both kept open."""
        with self.searching() as index:
            if self._compiler is None and index is not None:
                self._compiler = self.memory.compiler(index)
            if self._watchers is None:
                self._watchers = self.memory.watchers()
            return self.memory.compile(
                message, compiler=self._compiler, pipeline=self._watchers, **options
            )

    def close(self) -> None:
        """Close the search index and the compiler (the server stops)."""
        with self._lock:
            self._close_index()

    def _close_index(self) -> None:
        if self._compiler is not None:
            self._compiler.close()
        if self._index is not None:
            self._index.close()
        self._index = self._compiler = None

    @functools.cached_property
    def health(self) -> HealthMonitor:
        from autopoiesis.viewer.health import HealthMonitor

        return HealthMonitor(self.memory)

    def compared(self, sha_a: str, sha_b: str, compute: Callable[[], Any]) -> Any:
        """COMPUTE()'s comparison of the commits SHA_A and SHA_B, kept: a commit's
        knowledge never changes, so two refs at the same commits compare the same."""
        key = (sha_a, sha_b)
        if key not in self._comparisons:
            if len(self._comparisons) >= 16:
                self._comparisons.pop(next(iter(self._comparisons)))
            self._comparisons[key] = compute()
        return self._comparisons[key]

    @functools.cached_property
    def git_dir(self) -> Path:
        from autopoiesis.git.runner import git_dir

        return git_dir(self.memory.root)

    def pulse(self) -> str:
        """What changes when a session or a commit arrives (the live notice compares it
        with the page's): the transcripts and the stat of HEAD, its branch and its reflog,
        so it costs no git process."""
        import hashlib

        rows = self.catalog.rows()
        parts = [str(len(rows)), rows[0].path if rows else ""]
        head = self.git_dir / "HEAD"
        try:
            ref = head.read_text(encoding="utf-8").strip()
        except OSError:
            ref = ""
        watched = [head, self.git_dir / "logs" / "HEAD", self.git_dir / "packed-refs"]
        if ref.startswith("ref: refs/"):
            watched.append(self.git_dir / ref[5:])
        for path in watched:
            try:
                st = path.stat()
                parts.append(f"{st.st_size}.{st.st_mtime_ns}")
            except OSError:
                parts.append("-")
        return hashlib.blake2s("\x00".join(parts).encode(), digest_size=8).hexdigest()


@functools.lru_cache(maxsize=1)
def templates() -> Environment:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # the package's own files: no stat of each one at each include
    )
    from autopoiesis.viewer.facts import short_name

    env.filters["short"] = short_name
    env.filters["sha"] = lambda s: (s or "")[:10]
    env.filters["when"] = lambda s: (s or "")[:16].replace("T", " ")
    return env


def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
    """The page NAME (templates/NAME.html) with VALUES; the nav and the live pulse added."""
    viewer: Viewer = request.app.state.viewer
    html = (
        templates()
        .get_template(f"{name}.html")
        .render(
            nav=NAV,
            here=request.url.path.strip("/").split("/", 1)[0] or "timeline",
            request=request,
            pulse=values.pop("pulse", None) or viewer.pulse(),
            write=viewer.write,
            token=viewer.token,
            repo=str(viewer.memory.root),
            **values,
        )
    )
    return HTMLResponse(html, status)


Handler = Callable[[Request], Any]


def _error_page(request: Request, exc: AutopoiesisError) -> Response:
    from autopoiesis.viewer.files import NotFound

    if isinstance(exc, NotFound):
        return page(request, "error", 404, title="Not found", message=str(exc))
    if isinstance(exc, (UnsafePathError, InvalidArgumentError)):
        return page(request, "error", 400, title="Refused", message=str(exc))
    return page(request, "error", 500, title="The memory said no", message=str(exc))


def handled(fn: Handler) -> Handler:
    """FN with the memory's errors shown as a page: a bad path 400, a missing one 404."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awrapper(request: Request) -> Response:
            try:
                return await fn(request)
            except AutopoiesisError as exc:
                return _error_page(request, exc)

        return awrapper

    @functools.wraps(fn)
    def wrapper(request: Request) -> Response:
        try:
            return fn(request)
        except AutopoiesisError as exc:
            return _error_page(request, exc)

    return wrapper


def create_app(
    memory: Memory,
    *,
    token: str,
    port: int = 0,
    write: bool = False,
    host: str = "127.0.0.1",
    hosts: tuple[str, ...] = (),
    questions: dict[str, Path] | None = None,
) -> Starlette:
    """The viewer of MEMORY. TOKEN: the secret every request shows; PORT names its cookie;
    WRITE allows the write actions; HOST and HOSTS: the names the Host header may carry
    (with the loopback ones); QUESTIONS: question sets for the Compare page, by name."""
    from autopoiesis.viewer import pages_memory, pages_tools

    viewer = Viewer(memory, token, write, dict(questions or {}))
    routes = [
        *(Route(path, handled(fn), methods=methods) for path, fn, methods in pages_memory.ROUTES),
        *(Route(path, handled(fn), methods=methods) for path, fn, methods in pages_tools.ROUTES),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(
        routes=routes,
        lifespan=_closing(viewer),
        middleware=[
            Middleware(
                HostCheck,
                allowed_hosts=allowed_hosts(host, hosts),
                every_address=host in EVERY_ADDRESS,
            ),
            Middleware(TokenGuard, token=token, port=port, write=write),
        ],
    )
    app.state.viewer = viewer
    return app


def _closing(viewer: Viewer) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: the viewer's search index closed when the server stops."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            viewer.close()

    return lifespan


def missing_dependencies() -> str | None:
    """What to install when the viewer's libraries are missing, else None."""
    missing = []
    for module, package in (("jinja2", "jinja2"), ("markdown_it", "markdown-it-py")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if not missing:
        return None
    return (
        f"the viewer needs {', '.join(missing)}: install the extra with "
        "`pip install 'autopoiesis[viewer]'` (in a clone: `pip install -e '.[viewer]'`)."
    )


__all__ = ["NAV", "Viewer", "create_app", "handled", "missing_dependencies", "page"]
