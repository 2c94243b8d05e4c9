"""The phrase rules of the offline extractors: what a plain sentence says, without a model.

Each rule is a family of phrasings, not one sentence: a plan said without "decided"
("we'll put PgBouncer in front of Postgres", "the plan is to ...", "let's go with ..."),
a change ("... instead", "moved to", "no longer", "switched", "is now"), a person's role
("X is joining the team as our SRE", "X, our new designer, ..."), a date about a person
("Lena's birthday is on March 14", "Tom starts on Monday"), a date of an event and its
moves ("the cutover is planned for June 3", "we moved the cutover to June 17"), a
preference ("I prefer short answers", "please keep replies brief"), a lesson said
without the word ("note to self: never ... again", "next time ...", "we should have
..."), a procedure told as a sequence ("To X, first A, then B, finally C").

Who said it matters (issue 11): see `SourceTranscript.sentences` — only what the user (or
a named participant) says, or confirms, decides anything; an agent's "Understood, bullet
points from now on." is an acknowledgement, not a decision.

Pure functions over strings; the extractors decide where the knowledge goes.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from autopoiesis.core.text import STOPWORDS

# ── who says what ───────────────────────────────────────────────────────────────────
# An acknowledgement: the speaker takes note of what was said, it decides nothing.
ACK = re.compile(
    r"^(?:understood|got it|noted|will do|sure(?: thing)?|ok(?:ay)?|alright|all right|of "
    r"course|absolutely|"
    r"certainly|roger(?: that)?|makes sense|sounds good|perfect|great|thanks|thank you|no "
    r"problem|you got it|"
    r"i see|right|yes|yep|good (?:point|call|idea)|done|acknowledged|i understand|i'?ll "
    r"remember(?: that)?|"
    r"i'?ll keep (?:that|it) in mind|i'?ve noted(?: that)?|i will|i'?ll do that)\b[\s,.!:;—-]*",
    re.IGNORECASE,
)
# A user turn that accepts what the agent proposed just before.
CONFIRM = re.compile(
    r"^(?:yes|yeah|yep|yup|agreed|correct|exactly|sounds good|that works|do it|go ahead|go for it|"
    r"let'?s do (?:it|that|this)|please do|lgtm|ship it|makes sense|approved|perfect|good idea|"
    r"(?:ok(?:ay)?|sure)[,!.]?\s+(?:let'?s|do it|go ahead|go with|use|that works|sounds good))\b",
    re.IGNORECASE,
)
# What an agent proposes (counts once the user confirms it).
PROPOSAL = re.compile(
    r"\b(?:i (?:suggest|recommend|propose)|my (?:suggestion|recommendation) is|we (?:could|should)|"
    r"how about|what about|let'?s|i'?d (?:suggest|recommend|go with))\b",
    re.IGNORECASE,
)

# The agent telling what it is about to do ("Now, I'll verify that ...", "Now that the
# file is fixed, let me run the tests"): its next step, neither something it observed nor
# an outcome.
NARRATION = re.compile(
    r"\b(?:let me|let'?s|i'?ll|i will|i need to|we need to|i'?m going to|i am going to)\b"
    # the agent on what it has read so far ("Now I have a complete understanding of the
    # changes"): no outcome, and no fact of the project
    r"|\b(?:i|we)(?:'ve| have)(?: now)? (?:got )?a (?:complete|clear|good|full|better|"
    r"thorough|solid|comprehensive) (?:understanding|picture|overview|view|idea)\b",
    re.IGNORECASE,
)

# ── decisions and plans ─────────────────────────────────────────────────────────────
_COMMIT_VERBS = (
    r"use|put|adopt|switch|move|migrate|go with|stick "
    r"with|keep|drop|replace|deploy|run|host|store|add|build|ship|"
    r"release|roll out|introduce|standardi[sz]e|set "
    r"up|split|merge|rewrite|implement|cache|pin|upgrade|downgrade|"
    r"remove|deprecate|enable|disable|require|stop using|start "
    r"using|ditch|retire|freeze|launch|publish|"
    r"self-host|outsource|postpone|cancel|hire|buy|rename|move off|standardise on"
)
# what follows a plan's verb when it is chat, not a plan: "let's keep going", "we'll keep it up"
_NO_OBJECT = r"(?!\s+(?:\w+in(?:g\b|')|(?:it|up|at|each|us|them|you|that|this|in touch|on)\b))"
DECISION_CUE = re.compile(
    r"\b(?:we|i|they|the team)\s+(?:have\s+|'ve\s+)?(?:decided|agreed)\b"
    r"|\b(?:we|they|the team)\s+(?:have\s+|'ve\s+)?(?:chose|settled on|are going with|will go "
    r"with|went with|picked)\b"
    r"|\bdecision(?:\s+is|:)|\bgoing forward,|\bfrom now on\b"
    r"|\b(?:we(?:'ll| will| shall|'re going to| are going to|'re gonna| are gonna| plan to|'re "
    r"planning to| are planning to)|let'?s)"
    rf"\s+(?:\w+ly\s+)?(?:not\s+)?(?:{_COMMIT_VERBS})\b{_NO_OBJECT}"
    rf"|\bwe\s+(?:won'?t|will not|don'?t|do not)\s+(?:{_COMMIT_VERBS})\b{_NO_OBJECT}"
    r"|\bthe plan is (?:to|that)\b|\bwe(?:'re| are) (?:going "
    r"with|switching|moving|migrating|standardi[sz]ing)\b"
    r"|\b(?:we|i)\s+(?:no longer|(?:have\s+)?stopped|(?:are|'re) "
    r"not)\s+(?:use|using|run|running|need|needing)\b"
    r"|\b(?:switch(?:ed)?|migrat(?:e|ed)|mov(?:e|ed)) from \S.{0,40}? to\b"
    r"|\binstead of\b.{0,60}\b(?:we|let'?s)\b|\b(?:we|let'?s)\b.{0,60}\binstead\b",
    re.IGNORECASE,
)
DECISION_PREFIX = re.compile(
    r"^(?:ok(?:ay)?[,.]?\s+|so[,]?\s+|alright[,.]?\s+|right[,.]?\s+)?"
    r"(?:(?:we|i|they|the team)\s+(?:have\s+)?(?:decided|agreed)\s*(?:that|on|to|:)?\s*"
    r"|(?:the\s+)?decision(?:\s+is)?\s*:?\s*|the plan is (?:to|that)\s+|going forward,\s*"
    r"|i (?:suggest|recommend|propose)(?: that)?(?: we)?\s+|how about\s+|my "
    r"(?:suggestion|recommendation) is(?: to| that)?\s+)",
    re.IGNORECASE,
)
# An order to the agent: a sentence that opens with what to do ("Make a rule to record what
# we learned ...", "Before we begin, please write out a plan for what we will use"). A
# decision's words later in it ("we will use", "instead") are the task's, not a choice made.
ORDER = re.compile(
    r"^(?:(?:ok(?:ay)?|also|now|so|and|then|first|next|great|good|before we (?:begin|start))"
    r"[,.!]?\s+)*(?:please\s+)?(?:make|write|handle|create|add|fix|update|check|run|implement|"
    r"remove|delete|generate|review|read|look|find|show|give|tell|list|open|document|note|"
    r"record|mention|describe|explain|summari[sz]e|analy[sz]e|investigate|refactor|proceed|"
    r"continue|start|try|ensure|verify|apply|commit|push)\b",
    re.IGNORECASE,
)
# A sentence that asks for something, wherever the asking starts ("it seems I gave you the
# wrong page, here is the corrected one, please update the function", "could you check the
# logs"): a request, which states no fact. "Please note that ..." and "please see ..."
# point at one.
REQUEST = re.compile(
    r"\bplease\s+(?!note\b|see\b)\w+|\b(?:can|could|would|will) you\b", re.IGNORECASE
)
# "I decided ..." with no "we" in it: one person's choice
FIRST_PERSON_ONLY = re.compile(r"^(?!.*\b(?:we|let'?s|the team|our)\b).*\bI\b", re.IGNORECASE)
# A change: "X instead", "from X to Y", "no longer ...", "drop X", "replace X with Y".
_THING = (
    r"(?:the\s+|our\s+)?(?P<{0}>[\w.+#/-]+(?:\s+(?!and\b|with\b|to\b|for\b|in\b|instead\b)["
    r"\w.+#/-]+)?)"
)
_CHANGE_OLD = re.compile(
    r"\b(?:switch(?:ed|ing)?|migrat\w*|mov(?:e|ed|ing)|chang\w*)\s+(?:[\w-]+\s+){0,4}?(?:away\s+)?from\s+"
    + _THING.format("a")
    + r"\s+(?:to|onto)\b"
    r"|\binstead of "
    + _THING.format("b")
    + r"|\bno longer (?:use|using|uses|run|running|need|want)\s+"
    + _THING.format("c")
    + r"|\b(?:drop|dropped|dropping|ditch|ditched|remove|removed|replace|replaced|retire|retired|a"
    r"bandon|abandoned|"
    r"stop using|stopped using|get rid of|got rid of|move off|moved off)\s+"
    + _THING.format("d")
    + r"|\brather than "
    + _THING.format("e")
    + r"|\bnot "
    + _THING.format("f")
    + r" (?:anymore|any more)\b",
    re.IGNORECASE,
)


def change_target(sentence: str) -> str | None:
    """The old thing a sentence replaces ("... drop PgBouncer and use HikariCP instead" ->
    "PgBouncer"), or None when it names none."""
    m = _CHANGE_OLD.search(sentence)
    if not m:
        return None
    old = next(g for g in m.groups() if g)
    words = [w for w in old.split() if w.lower() not in STOPWORDS]
    return " ".join(words) or None


# ── lessons ─────────────────────────────────────────────────────────────────────────
_DIRECTIVE = (
    r"(?:we|i|you|let'?s|make|remember|check|always|never|don'?t|do "
    r"not|use|run|test|ask|try|start|take|keep|avoid)\b"
)
LESSON_CUE = re.compile(
    r"\blessons? learned\b|\blesson:|\btakeaway\b|\bnote to self\b"
    rf"|(?:^|\bso\s+)next time\b|\bnext time,?\s+{_DIRECTIVE}|(?:^|\bso\s+)in the future\b|\bin "
    rf"the future,?\s+{_DIRECTIVE}"
    r"|\bwe should have\b|\bi should have\b|\bshould always\b|^(?:always\s+)?make sure "
    r"(?:to|that)\b|\bthe root cause was\b"
    r"|\bnever\s+(?!want|wanna|thought|knew|felt|been|had|seen|imagined|expected)\w+\b.{2,80}\baga"
    r"in\b|\bnever again\b"
    r"|\b(?:don'?t|do not) ever\b|\b(?:always|never) forget to\b"
    r"|\bremember to always\b|\bi(?:'ve| have)? learned (?:that|the hard way)\b|\bwe(?:'ve| "
    r"have)? learned (?:that|the hard way)\b"
    r"|\b(?:that|this|it) taught (?:me|us)\b|\bthe mistake was\b|\bwon'?t make that mistake again\b"
    r"|\blearned the hard way\b|\bturns out (?:you|we) (?:need|have|must|should)\b",
    re.IGNORECASE,
)
LESSON_PREFIX = re.compile(
    r"^.*?\b(?:lessons? learned|lesson|takeaway|note to self)\b\s*(?:is|was)?\s*[:,-]?\s*",
    re.IGNORECASE,
)

# ── preferences (the user's own) ────────────────────────────────────────────────────
PREFERENCE_CUE = re.compile(
    r"\bi(?:'d| would)? (?:really |much |strongly |generally |usually )?(?:prefer|rather)\b"
    r"|\bi (?:like|love|want|need) (?:it when you|you "
    r"to|(?:short|shorter|brief|concise|long|longer|detailed|"
    r"terse|plain)\b)"
    r"|\bi (?:don'?t|do not) (?:like|want) (?:it when you|you "
    r"to|long|lengthy|verbose|emojis?|tables?|bullet)"
    r"|\bmy preference is\b|\bplease (?:always|never|don'?t|do not|keep|use|avoid|stop)\b"
    r"|\b(?:keep|make) (?:your |the "
    r")?(?:answers|replies|responses|messages|summaries|explanations) "
    r"(?:short|shorter|brief|concise|terse|long|detailed)\b"
    r"|\bcall me\b|\baddress me as\b|\bno more (?:emojis?|tables?|bullet points|long answers)\b"
    r"|\bfrom now on,? (?:please "
    r")?(?:use|give|answer|write|keep|reply|respond|format|send|add|avoid|skip)\b",
    re.IGNORECASE,
)
# A tool's or package's name as a developer writes it: bare, quoted or in backticks, an
# npm package with its scope ("use `@clack/prompts` instead of bun-promptx").
_TOOL_NAME = r"[`'\"]?@?[\w.+#/-]+[`'\"]?"
# How the user wants the work done in code, said as a rule: "use bun, not node", "never
# mock in production", "don't touch the migrations", "always run the linter first",
# "prefer composition over inheritance" (v3: a one-off order such as "make it into a
# file" is none of these).
CODING_PREFERENCE = re.compile(
    r"^(?:no[,.!]?\s+)?(?:please\s+|and\s+|also\s+)?(?:"
    r"(?:always|never)\s+[`'\"]?\w+"
    r"|(?:don'?t|do not)\s+(?:ever\s+)?(?:touch|modify|change|edit|use|add|mock|commit|push|run|"
    r"install|import|write|create|delete|remove|rename)\b.{3,}"
    rf"|use\s+{_TOOL_NAME}(?:\s+{_TOOL_NAME})?,?\s+(?:not|instead of|rather than|over)\s+\S+"
    rf"|(?:i\s+)?prefer\s+{_TOOL_NAME}(?:\s+{_TOOL_NAME})?\s+(?:over|to|to using)\s+\S+"
    r"|we (?:always|never) \w+|in this (?:repo|project|codebase),? (?:we|always|never|use)\b)",
    re.IGNORECASE,
)
# what makes an order a one-off rather than a rule: "DO NOT modify code, JUST identify ..."
_ONE_OFF_TIMES = r"for now|yet|this time|right now"
ONE_OFF = re.compile(rf"\b(?:just|only|{_ONE_OFF_TIMES}|here)\b", re.IGNORECASE)
# A rule a developer says with weight, so that it stands: shouted ("I want ONE FILE that
# WORKS", "DO NOT TRY AND CHANGE THE imports / exports", "BEFORE WE LOAD A MODEL, we need
# to ensure that we UNLOAD ALL LOADED MODELS"), or said of every time or everything ("no
# test scripts ever", "stop using python3", "rename chroma to hue everywhere", "I don't
# want the parallelization of tests", "I want all rich tables to take 100% console
# width"). Shouting alone is no rule ("NO NO NO, we are temporally misaligned", "it is
# NOT the one that was there"): the sentence must also say what should or must be. What
# is not wanted of a thing at hand ("We don't want that JSON block") is no rule either.
_NORMATIVE = re.compile(
    r"\b(?:should|must|need to|needs to|have to|has to|want|don'?t|do not|never|always|ensure)\b",
    re.IGNORECASE,
)
_SHOUTED = re.compile(
    r"\b(?:MUST|SHOULD|NEVER|ALWAYS|NOT|ALL|EVERY|ANY|ONE|NO|DON'?T|HAVE TO|NEED TO|"
    r"BEFORE|AFTER|MORE|EVERYWHERE)\b"
)
_SAID_TO_STAND = re.compile(
    r"\b(?:i|we) (?:don'?t|do not) want (?!to\b|you to\b|that\b)\w+\s+\w+"
    r"|\bi want (?:all|every|each) \w+"
    r"|\bstop (?:\w+ )?(?:using|doing|adding|writing|creating|running|calling|putting)\b"
    r"|^no\b.{3,60}\bever\b"
    r"|\beverywhere\b",
    re.IGNORECASE,
)
# what a line of code or a tool's message opens with: its words are quoted, not said
# ("// TODO: ALWAYS check the return value", "Note: all fields MUST be filled")
_QUOTED_TAG = re.compile(
    r"^\s*(?://|/\*|\*|#|--|(?:todo|fixme|note|nb|warning|warn|error|info|hint)\s*:)",
    re.IGNORECASE,
)


def is_emphatic_rule(sentence: str) -> bool:
    """Whether SENTENCE states a rule with weight (see `_SHOUTED`, `_SAID_TO_STAND`), not
    as a one-off ("no, i want to update the description field ONLY", "DO NOT modify code,
    JUST identify ...") or about a thing at hand ("I don't want this file") unless it
    says it stands, and not as a line of code or a tool's message (`_QUOTED_TAG`)."""
    weighty = _SAID_TO_STAND.search(sentence) or (
        _NORMATIVE.search(sentence) and _SHOUTED.search(sentence)
    )
    if not weighty or ONE_OFF.search(sentence) or OPEN_QUESTION.match(sentence):
        return False
    if _QUOTED_TAG.match(sentence):
        return False
    return not (_AT_HAND.search(sentence) and not STANDING.search(sentence))


# A correction of how the agent works, said in passing as a contrast or a standing rule:
# "just run using `minsky`, not `bun run`", "you're editing the main workspace, not the
# session", "the task should be marked as in review, not complete", "rules MUST always be
# created in .cursor/rules", "when working with json outputs, never use grep, but rather
# jq", "dont tell me what to do, do it yourself". A contrast counts when its first part
# is said to the agent or as a rule (you / we / i want / an order / a modal): "Zonal
# painting is black fill, not using the fill params" describes a bug, and "..., not sure
# why" is no contrast.
_NOT_CONTRAST = (
    r"(?:sure|yet|working|found|defined|exist\w*|available|supported|recogni[sz]ed|allowed|"
    r"installed|needed|necessary|possible|clear|loading|showing|displayed|being|only|just|"
    r"even|really|always|necessarily|too|that|as|so|very|much|quite|enough|what|how|at all|"
    r"(?:an?|the) \w+ (?:function|error|bug|issue|problem))\b"
)
_CONTRAST_FIRST = re.compile(
    r"^(?:(?:no|nope|actually|again)\W+)?(?:(?:just|please|only|so)\s+)?"
    r"(?:you\b|you'?re\b|you'?ve\b|we\b|i (?:want|wanted|need|meant|asked|said)\b|let'?s\b|lets\b|"
    r"(?:use|run|test|put|keep|make|do|create|write|call|add|move|edit|update|store|check|"
    r"record|generate|mention|save|place|name|import|start|build|install|switch|commit|"
    r"push|change)\b)"
    r"|\b(?:should|must|need to|needs to|has to|have to|want|wanted)\b",
    re.IGNORECASE,
)
CORRECTION = re.compile(
    r"^(?:(?:no|nope|actually|again|ok(?:ay)?)[,.!]?\s+)?(?P<first>[^,;:?]{3,90}?)\s*"
    r"(?:,\s*(?:but\s+)?|\s+but\s+)(?:rather\s+than|not|rather|instead of)\s+"
    rf"(?!{_NOT_CONTRAST})[^,;:?]{{2,60}}?(?:[.!]?$|,)"
    r"|\b(?:must|should)\s+(?:always|never)\b"
    r"|^(?:when(?:ever)?|if)\s+[^,]{3,80},\s*(?:please\s+)?(?:always|never|don'?t|do not)\s+\w+"
    r"|^(?:please\s+)?(?:don'?t|do not|never)\s+(?:tell|ask|guess|assume|hard-?code|skip|ignore|"
    r"suggest|stop|wait|leave)\b",
    re.IGNORECASE,
)
# The user asking for a rule of the agent's ("create a rule that specifies that when
# fixing a bug to first always create a failing test", "add to CLAUDE.md: never push to
# main", "add a rule providing guidance on how to write PR descriptions" and its list):
# what the rule says is a standing preference by the user's own word, however it is
# phrased. BODY is what follows "that ...", "saying ...", or a colon; a request without
# one names its rules in the list after it.
_RULE_OBJECT = (
    r"(?:(?:a|an|the|our|your|my|this|new|cursor|project|agent|coding)\s+)*+"
    r"(?:rules?|guidelines?)\b(?:\s+file)?"
    r"|[\w./-]*(?:CLAUDE|AGENTS|GEMINI|copilot-instructions)\.md\b|\.cursorrules\b"
    r"|[\w./-]*\.mdc\b"
)
RULE_REQUEST = re.compile(
    r"^(?:(?:ok(?:ay)?|now|also|and|then|please|can you|could you)[,\s]+)*+"
    r"(?:create|add|write|make|update|amend|extend)\s+(?:to\s+)?(?:" + _RULE_OBJECT + r")"
    r"(?:(?:\s+(?:that|which)(?:\s+(?:specifies|says|states|requires|mandates))?"
    r"|\s+(?:saying|stating|specifying|requiring))(?:\s+that)?\s+(?P<body>\S.*)"
    r"|\s*:\s*(?P<listed>.*)|(?P<rest>(?:\s.*)?))$",
    re.IGNORECASE,
)
# the start of a list item: "- ", "* ", "1. ", "2) "
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,2}[.)])\s+(?P<item>\S.*)$")

# "Make sure to ..." from a developer is mostly an order for the task at hand ("make sure
# to mention it in the spec"); it is a lesson when it says it stands ("always make sure",
# "next time, make sure")
MAKE_SURE = re.compile(r"^(?:always\s+)?make sure\b", re.IGNORECASE)
# "... make sure you never do this again": the rule is the sentence before it
BACK_REFERENCE = re.compile(r"\bnever (?:do|make|repeat) (?:this|that|it) again\b", re.IGNORECASE)
STANDING = re.compile(
    r"\b(?:always|never|every time|each time|whenever|from now on|in the future|going forward|"
    r"next time)\b",
    re.IGNORECASE,
)
# A rule said to hold for the repository the session works in ("we use uv, not pip, in
# this repo"): the project's convention, not the user's everywhere. "this workspace" is
# not one: in agent work it names a checkout ("the main workspace, not the session one").
PROJECT_SCOPE = re.compile(
    r"\b(?:in|for|across|throughout|within)\s+(?:this|our)\s+"
    r"(?:repo(?:sitory)?|project|code\s?base|monorepo|app|package|service)\b"
    # said in a project's session, "everywhere" is all through its code ("we should
    # everywhere rename chroma to hue", "let's update the version everywhere to 1.25.6")
    r"|\beverywhere\b",
    re.IGNORECASE,
)
# the one-off markers of time: a correction's "just" and "only" are part of its contrast
# ("just run using X, not Y"; "I only wanted you to create a task, not work on it")
ONE_OFF_TIME = re.compile(rf"\b(?:{_ONE_OFF_TIMES})\b", re.IGNORECASE)


# A contrast about the thing at hand ("lets extract this session repo path to a common
# function, instead of duplicating it", "generate a PR description for these changes, not
# using the command"): an order for the task, which a later session reads as pointing at
# nothing, unless it says it stands. "this one" is a contrast's other side ("the main
# version should be linked, not this one"), "this repo" a convention's scope.
_AT_HAND = re.compile(
    r"\b(?:this|these|those)\s+(?!(?:one|ones|time|way|is|was|are|were|from|in|on|at|to|for|"
    r"with|by|as|again|now|instead|first|yourself|repo(?:sitory)?|project|code\s?base|"
    r"monorepo)\b)[a-z]",
    re.IGNORECASE,
)


# A rule of how the team works, said as what "we" should or must (not) do: "We shouldn't
# have any tests that rely on a session to exist", "we must never commit the .env". Of a
# thing at hand ("we shouldn't push this branch"), for once ("we shouldn't merge yet") or
# looking back ("we should not have done that") it is no rule.
_TEAM_RULE = re.compile(
    r"^(?:(?:no|so|but|and|also)\W+)?we\s+(?:should(?:n'?t|\s+not|\s+never|\s+always)|"
    r"must(?:n'?t|\s+not|\s+never|\s+always)|need\s+to\s+(?:always|never))\s+"
    r"(?:have(?!\s+(?:\w+ed|been|done|made|had|gone|run|written|taken|seen|built|put|set|"
    r"kept|let)\b)|use|add|write|commit|push|run|mock|depend|rely|touch|modify|change|edit|"
    r"create|delete|remove|call|import|install|hard-?code|check\s+in|test|keep|put|store)\b"
    r".{3,}",
    re.IGNORECASE,
)


def is_team_rule(sentence: str) -> bool:
    """Whether SENTENCE states a rule of how the team works (`_TEAM_RULE`), not of a thing
    at hand unless it says it stands, and not for once."""
    if not _TEAM_RULE.match(sentence) or ONE_OFF.search(sentence):
        return False
    return not (_AT_HAND.search(sentence) and not STANDING.search(sentence))


# What ties a request to the code at hand: a symbol of it (camelCase `rotateCanvas`, a
# file `undo.layers.js`), or the turn's own business ("let's discuss the options", "do
# not do any work"): "please keep both rotateCanvas and rotateWRapper" is an order for
# this change, not how the user wants work done.
_CODE_SYMBOL = re.compile(
    r"\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[\w-]+\.(?:[jt]sx?|py|go|rs|md|json|ya?ml)\b"
)
_THIS_TURN = re.compile(
    r"\blet'?s (?:discuss|talk|think|brainstorm|plan|review|look)\b"
    r"|\b(?:don'?t|do not) (?:do|make|write|change|touch) (?:any|anything)\b",
    re.IGNORECASE,
)


# a request made to the agent rather than a preference stated ("I prefer ...")
REQUEST_TO_AGENT = re.compile(r"\bplease\b|\bi (?:want|need) you to\b", re.IGNORECASE)


def is_order_at_hand(sentence: str) -> bool:
    """Whether SENTENCE, a request to the agent ("please keep ...", "i want you to ..."),
    is about the change at hand rather than how work is done: for once (ONE_OFF), of a
    thing at hand (`_AT_HAND`, a code symbol) or of this turn (`_THIS_TURN`), and not
    said to stand (STANDING)."""
    if STANDING.search(sentence):
        return False
    return bool(
        ONE_OFF.search(sentence)
        or _AT_HAND.search(sentence)
        or _CODE_SYMBOL.search(sentence)
        or _THIS_TURN.search(sentence)
    )


def is_correction(sentence: str) -> bool:
    """Whether SENTENCE corrects how the agent works (see CORRECTION), rather than orders
    the task at hand (`_AT_HAND`, said without STANDING)."""
    m = CORRECTION.search(sentence)
    if m is None or ONE_OFF_TIME.search(sentence):
        return False
    if _AT_HAND.search(sentence) and not STANDING.search(sentence):
        return False
    first = m.group("first")
    return first is None or bool(_CONTRAST_FIRST.search(first))


# A preference's subject, so that a later one about the same thing replaces it: how the
# agent talks to its user (its replies' length, format, language and tone, the user's
# name). One value of a subject is live, so a subject must not pool unrelated rules: "I
# prefer JSON over YAML for the config files" and "the tests should print a table" are
# no format of a reply, and "short function names" is no length of one. A word that can
# be said of anything counts only in a sentence about the agent's replies (_REPLY); a
# word that is only said of a text one reads (bullet points, paragraphs) counts anywhere.
_REPLY = re.compile(
    r"\b(?:answers?|answering|repl(?:y|ies|ying)|explanations?|tone|wording|"
    # a word a program's output is also said in ("API responses", "error messages",
    # "commit message summaries") counts as the agent's when it is "your"s
    r"your\s+(?:responses?|messages?|summar(?:y|ies)|output|writing)|"
    r"(?:respond|talk|speak|explain)(?:ing)?\s+to\s+me|"
    r"(?:be|keep it|keep things)\s+(?:a bit\s+|more\s+|less\s+|very\s+|really\s+)?"
    r"(?:short|shorter|brief|concise|terse|long|longer|detailed|verbose|formal|informal|"
    r"casual|friendly|direct))\b",
    re.IGNORECASE,
)
# (subject, its words, whether they need a sentence about the agent's replies)
_PREFERENCE_SUBJECTS = (
    (
        "length",
        r"\b(?:short|shorter|brief|concise|terse|long|longer|lengthy|detailed|verbose)\b",
        True,
    ),
    (
        "format",
        r"\b(?:bullet(?: points?| lists?)?|prose|paragraphs?|numbered lists?|emojis?|plain text)\b",
        False,
    ),
    ("format", r"\b(?:tables?|markdown|headings?|json|format(?:ting)?)\b", True),
    (
        "language",
        r"\b(?:english|german|french|spanish|italian|dutch|portuguese|japanese|chinese)\b",
        False,
    ),
    ("language", r"\blanguage\b", True),
    ("name", r"\b(?:call me|address me as)\b", False),
    ("tone", r"\b(?:formal|informal|casual|tone|friendly|direct)\b", True),
)


def preference_subject(sentence: str) -> str | None:
    """What a preference is about (the length, format, language or tone of the agent's
    replies, or the user's name), or None: the first subject's word the sentence holds."""
    about_replies = _REPLY.search(sentence) is not None
    found = [
        (m.start(), name)
        for name, rx, of_replies in _PREFERENCE_SUBJECTS
        if about_replies or not of_replies
        for m in [re.search(rx, sentence, re.IGNORECASE)]
        if m
    ]
    return min(found)[1] if found else None


# ── procedures told as a sequence ───────────────────────────────────────────────────
_SEQ_WORD = (
    r"(?:first(?:ly)?|start by|begin by|then|next|after that|afterwards|once "
    r"(?:that|it)'?s? (?:done|finished)|finally|lastly|last|and then)"
)
PROCEDURE_INTRO = re.compile(
    r"^(?:so,?\s+|ok(?:ay)?,?\s+|here'?s how\s+)?(?:to|in order to|if you (?:want|need) "
    r"to|when(?:ever)? you (?:want|need) to|"
    r"the way to|how to)\s+(?P<what>[^,:;]{3,80}?)\s*(?:,|:|\bis to\b|\byou "
    r"(?:need|have|must|should) to\b|-)\s*(?P<rest>.+)$",
    re.IGNORECASE,
)
PROCEDURE_STEP_SPLIT = re.compile(
    rf"(?:[,;.]\s*|\s+)(?:and\s+)?\b{_SEQ_WORD}\b[,:]?\s*", re.IGNORECASE
)
SEQUENCE_START = re.compile(rf"^\s*(?:and\s+)?{_SEQ_WORD}\b[,:]?\s*", re.IGNORECASE)


def procedure_steps(rest: str) -> list[str]:
    """The steps of a sequence told in prose ("first A, then B, finally C" -> [A, B, C]);
    [] unless it has at least two steps joined by sequence words."""
    if not re.search(rf"\b{_SEQ_WORD}\b", rest, re.IGNORECASE):
        return []
    rest = SEQUENCE_START.sub("", rest.strip())
    parts = [p.strip(" ,;.") for p in PROCEDURE_STEP_SPLIT.split(rest)]
    steps = [p for p in parts if len(re.findall(r"[A-Za-z]{2,}", p)) >= 2]
    return steps if len(steps) >= 2 else []


# ── dates ───────────────────────────────────────────────────────────────────────────
_MONTH_RX = (
    r"(?:january|february|march|april|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?"
)
_DAY_RX = r"(?:3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?"
_YEAR_RX = r"(?:,?\s+(?:19|20)\d\d)"
_WEEKDAY_RX = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
DATE = re.compile(
    rf"\b(?:(?:{_MONTH_RX}|May)\s+{_DAY_RX}\b{_YEAR_RX}?|{_DAY_RX}\s+(?:of\s+)?(?:{_MONTH_RX}|May)\b{_YEAR_RX}?"
    rf"|\d{{4}}-\d\d-\d\d|(?:next|this|coming)\s+(?:{_WEEKDAY_RX}|week|month|weekend|quarter|year)"
    rf"|(?:on\s+)?{_WEEKDAY_RX}|tomorrow|end of (?:the |this |next )?(?:week|month|quarter|year)"
    r"|Q[1-4](?:\s+(?:19|20)\d\d)?|(?:early|mid|late)[- "
    rf"]{_MONTH_RX}|{_MONTH_RX}\s+(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_SCHEDULED = (
    r"(?:planned|scheduled|set|due|slated|booked|targeted|expected|pencilled|penciled|happening|ta"
    r"king place|"
    r"going live|landing|fixed)"
)
_MOVED = (
    r"(?:moved|pushed(?: back| out)?|postponed|rescheduled|delayed|brought forward|pulled "
    r"in|shifted|bumped|"
    r"slipped|changed)"
)
_NP = r"(?P<{0}>(?:the|our|my|their|its|this|that)\s+[\w-]+(?:\s+[\w-]+){{0,3}}?)"
_NP_BARE = r"(?P<{0}>[A-Za-z][\w-]+(?:\s+[\w-]+){{0,3}}?)"
EVENT_DATE = re.compile(
    rf"{_NP.format('subj')}\s+(?:is|was|has been|will "
    r"be|'s|are)\s+(?:now\s+|still\s+|currently\s+|tentatively\s+)?"
    rf"(?:{_SCHEDULED}\s+(?:for|on|to|at|in|by)|{_MOVED}\s+(?:to|until|till|back to|out "
    r"to)|on|due|for)\s+(?P<when>.+)"
    rf"|\b(?:we|they|i)\s+(?:have\s+|'ve\s+)?{_MOVED}\s+{_NP.format('subj2')}\s+(?:to|until|till|b"
    r"ack to|out to)\s+(?P<when2>.+)"
    rf"|{_NP_BARE.format('subj3')}\s+(?P<noun>deadline|date|day)\s+is\s+(?:now\s+)?(?P<when3>.+)",
    re.IGNORECASE,
)
_NOT_EVENT = {"it", "this", "that", "which", "what", "there", "he", "she", "they", "we", "i", "you"}


def event_date(sentence: str) -> tuple[str, bool] | None:
    """(subject, moved) of a sentence that dates an event: "the cutover is planned for June
    3" -> ("cutover", False); "we moved the cutover to June 17" -> ("cutover", True).
    None when the sentence holds no date or no event."""
    if not DATE.search(sentence):
        return None
    for m in EVENT_DATE.finditer(sentence):
        when = m.group("when") or m.group("when2") or m.group("when3") or ""
        if not DATE.match(when.strip()) and not DATE.search(when[:40]):
            continue
        subj = m.group("subj") or m.group("subj2") or (m.group("subj3") + f" {m.group('noun')}")
        subj = re.sub(
            r"^(?:the|our|my|their|its|this|that)\s+", "", subj.strip(), flags=re.IGNORECASE
        )
        subj = re.sub(r"\s+(?:date|day)$", "", subj, flags=re.IGNORECASE)
        words = [w for w in subj.lower().split() if w not in STOPWORDS]
        if not words or words[0] in _NOT_EVENT or DATE.fullmatch(subj):
            continue
        moved = bool(re.search(_MOVED, m.group(0), re.IGNORECASE)) or bool(
            re.search(r"\bnow\b", m.group(0), re.IGNORECASE)
        )
        return " ".join(words[-3:]), moved
    return None


def _fmt(d: date) -> str:
    return f"{d.day} {d.strftime('%B %Y')}"


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|this morning|last night|(?:last|next|this past|this "
    r"coming) "
    rf"(?:week|weekend|month|year|{'|'.join(_WEEKDAYS)})|(?:a|one|two|three|four|five|six|\d+) "
    r"(?:days?|weeks?|months?|years?) ago)\b",
    re.IGNORECASE,
)
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def resolve_relative(phrase: str, said: datetime) -> str | None:
    """An absolute form of a relative date said at SAID ("yesterday" said on 8 May 2023 ->
    "7 May 2023"; "last week" -> "week of 1 May 2023"; "last year" -> "2022")."""
    p = phrase.lower()
    day = said.date()
    if p in ("today", "tonight", "this morning"):
        return _fmt(day)
    if p in ("yesterday", "last night"):
        return _fmt(day - timedelta(days=1))
    if p == "tomorrow":
        return _fmt(day + timedelta(days=1))
    m = re.fullmatch(r"(\w+) (day|week|month|year)s? ago", p)
    if m:
        n = _NUMBERS.get(m.group(1)) or (int(m.group(1)) if m.group(1).isdigit() else 1)
        unit = m.group(2)
        if unit == "day":
            return _fmt(day - timedelta(days=n))
        if unit == "week":
            d = day - timedelta(weeks=n)
            return "week of " + _fmt(d - timedelta(days=d.weekday()))
        if unit == "month":
            y, mo = divmod(day.year * 12 + day.month - 1 - n, 12)
            return date(y, mo + 1, 1).strftime("%B %Y")
        return str(day.year - n)
    m = re.fullmatch(r"(last|next|this past|this coming) (\w+)", p)
    if not m:
        return None
    step = 1 if m.group(1) in ("next", "this coming") else -1
    what = m.group(2)
    if what in _WEEKDAYS:
        target = _WEEKDAYS.index(what)
        delta = (target - day.weekday()) % 7 if step > 0 else -((day.weekday() - target) % 7)
        delta = delta or 7 * step
        return _fmt(day + timedelta(days=delta))
    if what in ("week", "weekend"):
        d = day + timedelta(weeks=step)
        if what == "weekend":
            return "weekend of " + _fmt(d + timedelta(days=5 - d.weekday()))
        return "week of " + _fmt(d - timedelta(days=d.weekday()))
    if what == "month":
        y, mo = divmod(day.year * 12 + day.month - 1 + step, 12)
        return date(y, mo + 1, 1).strftime("%B %Y")
    if what == "year":
        return str(day.year + step)
    return None


def with_absolute_dates(text: str, said: datetime) -> str:
    """TEXT with each relative date followed by its absolute form in brackets, so that a
    fact read weeks later still says when: "I went there yesterday [7 May 2023]"."""
    out, last = [], 0
    for m in _RELATIVE.finditer(text):
        absolute = resolve_relative(m.group(0), said)
        if absolute is None:
            continue
        out.append(text[last : m.end()] + f" [{absolute}]")
        last = m.end()
    return "".join(out) + text[last:] if out else text


# ── people ──────────────────────────────────────────────────────────────────────────
ROLE_WORDS = (
    r"engineer|developer|dev|designer|manager|lead|sre|pm|po|cto|ceo|cfo|coo|cio|vp|director|intern|analyst|architect|"
    r"admin|administrator|scientist|researcher|owner|maintainer|reviewer|contractor|consultant|recruiter|tester|qa|"
    r"devops|head|coordinator|scrum "
    r"master|on-call|teammate|colleague|mentor|boss|founder|co-founder|advisor|"
    r"accountant|lawyer|doctor|nurse|teacher|coach|therapist|counselor|counsellor|officer|specialist|expert|"
    r"champion|point of "
    r"contact|contact|representative|rep|assistant|editor|writer|producer|operator"
)
# "X is joining the team as our SRE", "X joined as the new PM", "X takes over as ...", "X will be
# our ..."; a role word stands alone ("Unfortunately, the dev-server.log ..." names no dev)
ROLE_CUE = re.compile(
    r"^\s*(?:is|was|has been|will be|'s)?\s*(?:now\s+)?(?:joining|joined|starting|started|coming "
    r"on board|hired|"
    r"takes? over|took over|taking over|moving|moved|promoted|stepping in|steps in|stepped "
    r"in|signed on)\b"
    r"(?:\s+(?:the|our)\s+\w+(?:\s+team)?|\s+us)?(?:\s+(?:on|next|this)\s+\w+)?\s+as\s+(?P<role>(?:(?:our|the|a|an)\s+)?.{2,60})"
    r"|^\s*(?:is|'s|will be|has become|became|is now|'s "
    r"now)\s+(?:now\s+)?(?P<role2>(?:our|the|a|an)\s+(?:new\s+|acting\s+|interim\s+|"
    rf"lead\s+|senior\s+|junior\s+|principal\s+|staff\s+|head\s+)?(?:[\w-]+\s+){{0,3}}?(?:{ROLE_WORDS})\b(?![-.]\w).{{0,40}})"
    rf"|^,\s+(?P<role3>(?:our|the|a|an)\s+(?:new\s+)?(?:[\w-]+\s+){{0,2}}?(?:{ROLE_WORDS}))\b(?![-.]\w)",
    re.IGNORECASE,
)
# "we hired Lena as our SRE", "welcome Tom, the new PM"
HIRED_BEFORE = re.compile(
    r"\b(?:hired|welcome|welcomed|onboarded|onboarding|brought on|bringing "
    r"on|recruited|promoted|meet)\s+$",
    re.IGNORECASE,
)
HIRED_AFTER = re.compile(
    r"^(?:\s+(?:as|to be|to)|,)\s+(?P<role>(?:our|the|a|an)\s+(?:new\s+)?.{2,60})", re.IGNORECASE
)
# "Lena's birthday is on March 14", "Tom starts on Monday", "Ana was born on 3 May 1990"
PERSON_DATE_NOUNS = (
    r"birthday|anniversary|name day|last day|first day|start date|wedding|due date|graduation|"
    r"retirement|surgery|flight|vacation|holiday|leave|day off|interview|appointment|party|exam"
)
PERSON_DATE = re.compile(
    rf"^'s\s+(?P<noun>{PERSON_DATE_NOUNS})\b"
    r"|^\s+(?P<verb>was born|starts|started|is starting|will start|joins|is joining|leaves|is "
    r"leaving|left|retires|"
    r"is out|is off|is away|is on (?:vacation|leave|holiday)|flies|arrives|moves|is moving|turns "
    r"\d+|gets married|returns|"
    r"is back)\b",
    re.IGNORECASE,
)

# ── a person's own statements (multi-party conversations) ────────────────────────────
PERSONAL_FACT = re.compile(
    r"\b(?:i|we)\s+(?:just\s+|recently\s+|finally\s+|also\s+|actually\s+|really\s+|still\s+)?(?:'ve\s+|have\s+|had\s+)?"
    r"(?:work(?:ed)?|live[ds]?|grew up|was "
    r"born|moved|studied|graduated|teach|taught|volunteer(?:ed)?|play(?:ed)?|joined|"
    r"started|quit|adopted|bought|got "
    r"married|married|went|visited|travell?ed|took|ran|painted|wrote|read|finished|"
    r"signed up|applied|received|won|lost|met|celebrated|attended|love|enjoy|collect|practice|own|"
    r"made|built|"
    r"learned|learnt|passed|failed|hiked|camped|cooked|baked|planted|planned|decided|got|prefer|like|did|tried|found|"
    r"booked|am|was)\b"
    r"|\bi'?m (?:a|an|from|originally|currently|\w+ing)\b"
    # the pronoun dropped, as people chat: "Took a short trip to Rome last week."
    r"|^(?:just\s+|also\s+|finally\s+|recently\s+)?(?:got|took|went|had|visited|started|finished|bought|made|did|met|"
    r"joined|moved|tried|found|signed up|booked|won|lost|learned|adopted|been)\b"
    r"|\bmy\s+(?:wife|husband|partner|kids?|children|son|daughter|mom|mother|dad|father|sister|brother|family|"
    r"friends?|dog|cat|pets?|puppy|job|boss|team|birthday|favou?rite|name|home|house|car|hobby|goal|dream|"
    r"grand\w+|parents|boyfriend|girlfriend|fianc[eé]e?|niece|nephew|cousin|aunt|uncle)\b",
    re.IGNORECASE,
)
HYPOTHETICAL = re.compile(
    r"^(?:if|when|whenever|maybe|perhaps)\b|\b(?:would|could|might)\b|\bi wish\b|\bwhat if\b",
    re.IGNORECASE,
)
# A sentence that only wonders: "if we use X ...", "should we ...", "maybe we'll ..."
OPEN_QUESTION = re.compile(
    r"^(?:(?:so|and|but|then|ok(?:ay)?)[,\s]+)*+"
    r"(?:if|when|whenever|maybe|perhaps|what if|should we|do we|can we|could we|shall we|would "
    r"we|are we|i wonder"
    # a question asked the other way round, its "?" left off ("So then don't we NOT want
    # go.work at all")
    r"|(?:don'?t|do not|shouldn'?t|can'?t|isn'?t|aren'?t|wouldn'?t|won'?t) (?:we|it|they))\b",
    re.IGNORECASE,
)


__all__ = [
    "ACK",
    "BACK_REFERENCE",
    "CODING_PREFERENCE",
    "CONFIRM",
    "CORRECTION",
    "DATE",
    "DECISION_CUE",
    "DECISION_PREFIX",
    "FIRST_PERSON_ONLY",
    "HIRED_AFTER",
    "HIRED_BEFORE",
    "HYPOTHETICAL",
    "LESSON_CUE",
    "LESSON_PREFIX",
    "MAKE_SURE",
    "NARRATION",
    "ONE_OFF",
    "ONE_OFF_TIME",
    "OPEN_QUESTION",
    "ORDER",
    "PERSONAL_FACT",
    "PERSON_DATE",
    "PREFERENCE_CUE",
    "RULE_REQUEST",
    "LIST_ITEM",
    "PROCEDURE_INTRO",
    "PROPOSAL",
    "REQUEST",
    "ROLE_CUE",
    "STANDING",
    "change_target",
    "event_date",
    "is_correction",
    "is_emphatic_rule",
    "is_order_at_hand",
    "REQUEST_TO_AGENT",
    "is_team_rule",
    "preference_subject",
    "procedure_steps",
    "resolve_relative",
    "with_absolute_dates",
]
