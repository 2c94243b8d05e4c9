"""Cline's current task shape (native tool_use, results as `[tool for '…'] Result:` text in
the next user message), as a real 12-day task has it: an interrupted task resumed after a
question nobody answered, the user's answers, the reminders Cline injects."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import tool_calls, transcripts

ENV = "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>"
TODO = (
    "\n\n\t\t\t\t# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter "
    "in your NEXT tool call.\n\n\t\t\t\t**Current Progress: 1/3 items completed (33%)**"
)
PROGRESS = (
    "\n# task_progress List (Optional - Plan Mode)\n\nWhile in PLAN MODE, if you've outlined "
    "concrete steps or requirements for the user, you may include a preliminary todo list."
)
RESUMED = (
    "[TASK RESUMPTION] This task was interrupted 3 days ago. The conversation may have been "
    "incomplete. Be aware that the project state may have changed since then.\n\nNote: If you "
    "previously attempted a tool use that the user did not provide a result for, you should "
    "assume the tool use was not successful."
)
NO_MESSAGE = (
    "(The user did not provide a new message. Consider asking them how they'd like you to "
    "proceed, or suggest to them to switch to Act mode to continue with the task.)"
)


def use(tid: str, name: str, **params: str) -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": params}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


TASK = [
    {
        "role": "user",
        "ts": 1777070000000,
        "content": [
            text("<task>\nMove the media uploads from Firebase to Cloud Storage\n</task>"),
            text(PROGRESS),
            text(ENV),
        ],
    },
    {
        "role": "assistant",
        "ts": 1777070100000,
        "content": [
            use("t1", "read_file", path="src/lib/firebase.ts"),
            use("t2", "list_files", path="src/ai"),
            use("t3", "read_file", path="apphosting.yaml"),
        ],
    },
    {
        "role": "user",
        "ts": 1777070200000,
        "content": [
            # the results come in an order of their own, and name the tool
            text("[list_files for 'src/ai'] Result:\ndev.ts\ngenkit.ts"),
            text("[read_file for 'src/lib/firebase.ts'] Result:\n1 | import { getStorage }"),
            text("[read_file for 'apphosting.yaml'] Result:\n1 | runConfig:"),
            text(TODO),
            text(ENV),
        ],
    },
    {
        "role": "assistant",
        "ts": 1777070300000,
        "content": [
            use(
                "t4",
                "ask_followup_question",
                question="Which bucket should uploads go to?",
                options='["mra-media", "a new bucket"]',
                task_progress="- [x] read the code",
            ),
        ],
    },
    # the task was closed at the question and resumed three days later: no answer
    {
        "role": "user",
        "ts": 1777344971097,
        "content": [
            text(RESUMED),
            text(NO_MESSAGE),
            text(PROGRESS),
            text(ENV),
        ],
    },
    {
        "role": "assistant",
        "ts": 1777345000000,
        "content": [
            text("The task was interrupted; let me look again."),
            use("t5", "read_file", path="src/lib/firebase.ts"),
            use("t6", "execute_command", command="npm ls @google-cloud/storage"),
        ],
    },
    {
        "role": "user",
        "ts": 1777345100000,
        "content": [
            text("[read_file for 'src/lib/firebase.ts'] Result:\n1 | import { getStorage } again"),
            text(
                "[execute_command for 'npm ls @google-cloud/storage'] Result:\n"
                "Command executed.\nOutput:\n@google-cloud/storage@7.1.0"
            ),
            text(ENV),
        ],
    },
    {
        "role": "assistant",
        "ts": 1777345200000,
        "content": [
            use(
                "t7", "ask_followup_question", question="Phase 1 is done. Shall I go on to Phase 2?"
            ),
        ],
    },
    {
        "role": "user",
        "ts": 1777346146305,
        "content": [
            text(
                "[ask_followup_question for 'Phase 1 is done. Shall I go on to Phase 2?'] Result:\n"
                "<answer>\nApproved - Proceed to Phase 2\n</answer>\n\n"
                '<file_content path="lib/gcs-storage.ts">\nexport const bucket = 1\n</file_content>'
            ),
            text(ENV),
        ],
    },
    {
        "role": "assistant",
        "ts": 1777346200000,
        "content": [
            use(
                "t8",
                "attempt_completion",
                result="Uploads now go to Cloud Storage.",
                command="npm run dev",
            ),
        ],
    },
    {
        "role": "user",
        "ts": 1777346300000,
        "content": [
            text("[attempt_completion] Result: Done"),
            text("Command failed with exit code 1.\nOutput:\nEADDRINUSE :::9002"),
            text(
                "The user has provided feedback on the results. Consider their input to continue "
                "the task, and then attempt completion again."
            ),
            text("<feedback>\nThe port is taken: stop the old server first\n</feedback>"),
            text(ENV),
        ],
    },
    {
        "role": "assistant",
        "ts": 1777346400000,
        "content": [
            use("t9", "execute_command", command="kill %1"),
        ],
    },
    {
        "role": "user",
        "ts": 1777346500000,
        "content": [
            text(
                "The user provided the following feedback:\n<feedback>\nUse taskkill, this is "
                "Windows\n</feedback>"
            ),
            text("[execute_command for 'kill %1'] Result:\nThe user denied this operation."),
            text(ENV),
        ],
    },
]


def write_task(tmp: Path, messages: list[dict]) -> Path:
    folder = tmp / "saoudrizwan.claude-dev" / "tasks" / "1777070000000"
    folder.mkdir(parents=True)
    path = folder / "api_conversation_history.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_results_pair_within_the_next_message_and_an_unanswered_question_stays_open(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    report = import_files(memory_repo, [write_task(tmp_path, TASK)])
    assert report.refused == []
    t = transcripts(memory_repo, report.imported)["cline-1777070000000"]
    calls = {(c.tool, c.args): c.result for c in tool_calls(t)}
    assert calls[("list_files", "src/ai")] == "dev.ts genkit.ts"
    assert calls[("read_file", "apphosting.yaml")] == "1 | runConfig:"
    # the question of the interrupted task has no answer, and the results after the
    # resumption are on their own calls (before the fix: each on the call before it)
    assert (
        calls[("ask_followup_question", '{"options": "[\\"mra-media\\", \\"a new bucket\\"]"}')]
        is None
    )
    results = [c.result for c in tool_calls(t) if c.tool == "read_file"]
    assert results == [
        "1 | import { getStorage }",
        "1 | runConfig:",
        "1 | import { getStorage } again",
    ]
    assert calls[("execute_command", "npm ls @google-cloud/storage")].endswith("@7.1.0")
    # attempt_completion's command output continues its result; a denied call says so
    assert calls[("attempt_completion", "npm run dev")] == (
        "Done Command failed with exit code 1. Output: EADDRINUSE :::9002"
    )
    assert calls[("execute_command", "kill %1")] == "The user denied this operation."


def test_the_users_answers_are_user_turns_and_the_reminders_are_dropped(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    report = import_files(memory_repo, [write_task(tmp_path, TASK)])
    t = transcripts(memory_repo, report.imported)["cline-1777070000000"]
    user = [turn.text for turn in t.turns if turn.role == "user"]
    assert user == [
        "Move the media uploads from Firebase to Cloud Storage",
        "Approved - Proceed to Phase 2",
        "The port is taken: stop the old server first",
        "Use taskkill, this is Windows",
    ]
    answer = next(turn for turn in t.turns if turn.text == "Approved - Proceed to Phase 2")
    assert tf.Attachment("lib/gcs-storage.ts") in answer.items  # the file the answer mentions
    system = [turn.text for turn in t.turns if turn.role == "system"]
    assert system == ["[TASK RESUMPTION] This task was interrupted 3 days ago."]
    body = (memory_repo.root / report.imported[0]).read_text(encoding="utf-8")
    for injected in (
        "task_progress",
        "TODO LIST",
        "did not provide a new message",
        "provided feedback on the results",
        "<answer>",
        "<feedback>",
    ):
        assert injected not in body, injected
    # what the agent says through a tool is its text
    agent = "\n".join(turn.text for turn in t.turns if turn.role == "agent")
    assert "Which bucket should uploads go to?" in agent
    assert "Uploads now go to Cloud Storage." in agent
