"""The local web viewer (`autopoiesis serve`): the memory's sessions, knowledge with its
provenance, the history of a fact, search, the compiler's view, two extractions compared
and the health checks, as server-rendered pages over `Memory` (memory/facade.py).

    app.py           the Starlette app, the page helper, the routes' error pages
    guard.py         the token, the Host check, the security headers, the write switch
    pages_memory.py  timeline, session, knowledge, entry provenance, history
    pages_tools.py   search, compiler, compare, health, the live pulse, the write action
    sessions.py      the catalog of transcripts by day (read once, kept while serving)
    facts.py         an entry's provenance and dated changes (git log -S, blame)
    render.py        transcripts and knowledge files as page values, Markdown safely
    scores.py        replay --compare and eval scores, the eval run in the background
    health.py        the doctor's checks and the daemon's status, behind one function
    charts.py        inline SVG charts
    server.py        binding, the printed URL, uvicorn
"""
