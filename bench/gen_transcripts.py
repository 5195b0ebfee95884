"""A deterministic generator of realistic Claude Code transcripts, for bench/transcripts.py.

Same seed and size, same bytes. The corpus mixes what real archives hold: short user
prompts, long assistant answers with code, tool calls (Bash, Read, Edit, Grep) and
their results (often far longer than what the archive keeps), thinking blocks, meta
entries, summaries, subagent transcripts, and text in Japanese, Chinese, Korean,
German and French, and code with camelCase names. The query terms are planted at known
rates so that the three query classes (rare < 0.1 %, medium 1-10 %, very common > 50 % of
messages) hold.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

# Twenty rare terms: each in about 1 message in 2,500 (0.04 %).
RARE = [
    "zanzibarite",
    "quokkaflux",
    "mordantix",
    "velociraptorium",
    "glimmerwick",
    "thundersnout",
    "paraboloxx",
    "snorkelgate",
    "wobbleframe",
    "crystalfen",
    "obsidianqueue",
    "marzipantry",
    "hollowbyte",
    "fjordline",
    "kraken_sync_v9",
    "blimpstack",
    "quillotron",
    "xylocarp",
    "zephyrcache",
    "tumbleweedjs",
]
# Twenty medium terms: each in about 1-10 % of messages.
MEDIUM = [
    "postgres",
    "kubernetes",
    "webpack",
    "migration",
    "flaky",
    "latency",
    "checksum",
    "deadlock",
    "serializer",
    "middleware",
    "pagination",
    "websocket",
    "tokenizer",
    "backoff",
    "idempotent",
    "memoize",
    "sharding",
    "rollback",
    "linter",
    "refactor",
]
# Everyday words (the very common class is built from these; see COMMON_QUERIES).
EVERYDAY = [
    "the",
    "and",
    "to",
    "of",
    "a",
    "in",
    "is",
    "it",
    "that",
    "for",
    "this",
    "with",
    "on",
    "be",
    "as",
    "you",
    "can",
    "we",
    "not",
    "are",
    "have",
    "will",
    "if",
    "or",
    "but",
    "at",
    "by",
    "from",
    "file",
    "code",
    "test",
    "run",
    "so",
    "just",
    "now",
    "then",
    "add",
    "fix",
    "use",
    "change",
    "check",
    "make",
    "need",
    "see",
    "all",
    "one",
    "should",
    "would",
    "could",
    "there",
    "here",
    "what",
    "when",
]
FILLER = [
    "function",
    "value",
    "return",
    "error",
    "result",
    "config",
    "update",
    "build",
    "server",
    "client",
    "request",
    "response",
    "module",
    "import",
    "export",
    "class",
    "method",
    "object",
    "string",
    "number",
    "list",
    "array",
    "index",
    "query",
    "table",
    "column",
    "schema",
    "version",
    "branch",
    "commit",
    "merge",
    "release",
    "output",
    "input",
    "path",
    "directory",
    "script",
    "command",
    "option",
    "default",
    "handler",
    "service",
    "cache",
    "queue",
    "worker",
    "thread",
    "process",
    "memory",
    "buffer",
    "stream",
    "event",
    "callback",
    "promise",
    "async",
    "await",
    "loop",
    "parse",
    "format",
    "render",
    "component",
    "state",
    "props",
    "hook",
    "effect",
    "context",
    "route",
    "model",
    "view",
    "controller",
    "field",
    "record",
    "session",
    "user",
    "account",
    "token",
    "secret",
    "deploy",
    "deployment",
    "dependency",
    "dependencies",
    "depends",
    "deprecated",
    "depth",
]
DEP_WORDS = ["deploy", "dependency", "dependencies", "depends", "deployment", "depth"]
FOREIGN = [
    "このテストは本番環境のデータベースに接続しないでください。",
    "東京タワーの近くで会議があります。設定ファイルを確認してください。",
    "我们需要在部署之前运行所有的测试。数据库迁移已经完成。",
    "请检查配置文件中的缓存设置，然后重新启动服务器。",
    "테스트는 실제 데이터베이스를 사용해야 합니다. 서울에서 회의가 있습니다.",
    "배포하기 전에 모든 테스트를 실행하세요.",
    "Bitte prüfe die Konfiguration, bevor du den Server neu startest.",
    "Les tests doivent utiliser la vraie base de données, pas des simulacres.",
    "Hay que revisar el registro de errores después del despliegue.",
]
CODE = [
    "def {n}(items):\n    result = []\n    for item in items:\n        if item.{f}:\n"
    "            result.append(item)\n    return result\n",
    "export async function {n}{F}(req, res) {{\n  const {f}Value = await db.{f}(req.params.id);\n"
    "  if (!{f}Value) return res.status(404).end();\n  res.json({f}Value);\n}}\n",
    "SELECT id, {f} FROM {n} WHERE created_at > now() - interval '1 day' ORDER BY id;\n",
    "fn {n}(input: &str) -> Result<{F}{N}, Error> {{\n    let parsed = input.parse()?;\n"
    "    Ok(parsed)\n}}\n",
]
TOOLS = ["Bash", "Read", "Edit", "Grep", "Write", "Glob"]
PROJECTS = ["-home-dev-webshop", "-home-dev-infra", "-home-dev-ml-pipeline", "-home-dev-docs"]


class Generator:
    """Writes transcripts into `<root>/projects/<project>/<session>.jsonl`."""

    def __init__(self, seed: int = 42) -> None:
        self.rng = random.Random(seed)
        self.clock = 1_767_225_600  # 2026-01-01

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _words(self, count: int) -> str:
        rng = self.rng
        out: list[str] = []
        for _ in range(count):
            roll = rng.random()
            if roll < 0.55:
                out.append(rng.choice(EVERYDAY))
            elif roll < 0.56:
                out.append(rng.choice(DEP_WORDS))
            else:
                out.append(rng.choice(FILLER))
        return " ".join(out)

    def _sentence_block(self, words: int) -> str:
        rng = self.rng
        text = self._words(words)
        # Planted terms: the rates are per message, so plant once per call.
        if rng.random() < 0.004:  # one of 20: each rare term in ~0.04 % of messages
            text += " " + rng.choice(RARE)
        for term_index, term in enumerate(MEDIUM):
            if rng.random() < 0.01 + 0.004 * (term_index % 10):
                text += f" {term}"
        if rng.random() < 0.75:
            text = "In the " + text + ". Deploy it and check the dependency."
        if rng.random() < 0.08:
            text += "\n" + rng.choice(FOREIGN)
        return text

    def _code(self) -> str:
        rng = self.rng
        # camelCase and PascalCase names as real code has them (a third of real messages
        # hold one), made of the same draws so the corpus keeps its shape.
        code, n, f = rng.choice(CODE), rng.choice(FILLER), rng.choice(FILLER)
        return code.format(n=n, f=f, N=n.capitalize(), F=f.capitalize())

    def _size(self, median: int) -> int:
        return max(3, int(self.rng.lognormvariate(0, 1.0) * median))

    def _base(self, session: str, project: str, kind: str, parent: str | None) -> dict[str, object]:
        self.clock += self.rng.randint(2, 90)
        return {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/" + project.strip("-").replace("-", "/"),
            "sessionId": session,
            "version": "2.1.231",
            "gitBranch": "main",
            "type": kind,
            "uuid": self._uuid(),
            "timestamp": _iso(self.clock),
        }

    def _assistant_blocks(self) -> tuple[list[dict[str, object]], str | None]:
        rng = self.rng
        blocks: list[dict[str, object]] = []
        if rng.random() < 0.3:
            blocks.append(
                {"type": "thinking", "thinking": self._words(self._size(60)), "signature": "x" * 80}
            )
        text = self._sentence_block(self._size(50))
        if rng.random() < 0.3:
            text += "\n\n```\n" + self._code() + "```\n"
        blocks.append({"type": "text", "text": text})
        tool_id = None
        if rng.random() < 0.45:
            tool_id = "toolu_" + self._uuid().replace("-", "")[:24]
            tool = rng.choice(TOOLS)
            if tool == "Bash":
                tool_input: dict[str, object] = {
                    "command": f"pnpm test --filter {rng.choice(FILLER)}",
                    "description": "Run the tests",
                }
            elif tool == "Edit":
                tool_input = {
                    "file_path": f"/src/{rng.choice(FILLER)}.py",
                    "old_string": self._code(),
                    "new_string": self._code(),
                }
            else:
                tool_input = {"file_path": f"/src/{rng.choice(FILLER)}/{rng.choice(FILLER)}.ts"}
            blocks.append({"type": "tool_use", "id": tool_id, "name": tool, "input": tool_input})
        return blocks, tool_id

    def _tool_result(self, tool_id: str) -> list[dict[str, object]]:
        rng = self.rng
        parts = []
        for _ in range(self._size(4)):
            parts.append(self._code() if rng.random() < 0.5 else self._sentence_block(20))
        return [{"type": "tool_result", "tool_use_id": tool_id, "content": "\n".join(parts)}]

    def session_lines(self, session: str, project: str, turns: int) -> list[str]:
        """One session's JSONL lines."""
        rng = self.rng
        lines: list[str] = []
        parent: str | None = None

        def emit(record: dict[str, object]) -> None:
            nonlocal parent
            parent = str(record["uuid"])
            lines.append(json.dumps(record, ensure_ascii=False))

        meta = self._base(session, project, "user", parent)
        meta["isMeta"] = True
        caveat = "<local-command-caveat>Caveat</local-command-caveat>"
        meta["message"] = {"role": "user", "content": caveat}
        emit(meta)
        for _ in range(turns):
            user = self._base(session, project, "user", parent)
            user["message"] = {"role": "user", "content": self._sentence_block(self._size(18))}
            emit(user)
            for _ in range(rng.randint(1, 3)):
                blocks, tool_id = self._assistant_blocks()
                record = self._base(session, project, "assistant", parent)
                record["message"] = {
                    "id": "msg_" + self._uuid().replace("-", "")[:24],
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-opus-4",
                    "content": blocks,
                    "usage": {"input_tokens": rng.randint(10, 9000), "output_tokens": 300},
                }
                emit(record)
                if tool_id:
                    result = self._base(session, project, "user", parent)
                    result["message"] = {"role": "user", "content": self._tool_result(tool_id)}
                    emit(result)
        if rng.random() < 0.5:
            lines.append(
                json.dumps({"type": "summary", "summary": self._words(8), "leafUuid": parent})
            )
        return lines

    def write(self, root: Path, total_bytes: int) -> tuple[int, int]:
        """Write transcripts under `root` until `total_bytes`; return (files, bytes)."""
        written = files = 0
        while written < total_bytes:
            project = self.rng.choice(PROJECTS)
            session = self._uuid()
            directory = root / "projects" / project
            directory.mkdir(parents=True, exist_ok=True)
            turns = max(1, int(self.rng.lognormvariate(2.5, 0.9)))
            paths = [(directory / f"{session}.jsonl", turns)]
            if self.rng.random() < 0.2:
                agent = f"agent-{self.rng.getrandbits(60):015x}"
                paths.append((directory / session / "subagents" / f"{agent}.jsonl", turns // 2 + 1))
            for path, count in paths:
                path.parent.mkdir(parents=True, exist_ok=True)
                data = ("\n".join(self.session_lines(session, project, count)) + "\n").encode()
                path.write_bytes(data)
                written += len(data)
                files += 1
        return files, written


def _iso(seconds: int) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(seconds))
