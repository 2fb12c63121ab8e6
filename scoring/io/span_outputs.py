"""The answer an OpenInference span gives (docs/formats.md, "OpenInference spans", "Answers"), from its
attributes as dotted keys (``llm.output_messages.0.message.content``), in this order:

1. its **output messages**: the texts of ``llm.output_messages.{i}.message.content`` (or of the
   message's parts, ``message.contents.{j}.message_content.text``), in index order, one a line;
2. else a **JSON output**: ``output.value`` when ``output.mime_type`` is ``application/json`` (or when the
   export gives it as an object), read by `json_answer`;
3. else the **text** of ``output.value``.

A JSON output that is not JSON, or that holds no answer under `ANSWER_KEYS`, is a problem: the span says
it answered, and the import cannot tell what.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..store.files import parse_json
from .span_files import subtree

ANSWER_KEYS = ("result", "answer", "output", "response", "text", "content", "message", "parts", "choices",
               "candidates")
"""The keys under which a JSON output holds its answer, tried in this order, at every level: LangChain's
chains (``{"query", "result"}``, ``{"input", "context", "answer"}``, an agent's ``{"output"}``), LlamaIndex's
``{"response"}``, a chat completion (``choices[0].message.content``), a text completion (``choices[0].text``),
Anthropic's messages (``content[i].text``), Gemini's (``candidates[0].content.parts[i].text``), OpenAI's
responses (``output[i].content[j].text``)."""
FIRST_ONLY = ("choices", "candidates")
"""List keys whose items are alternatives: the first is read (the others are answers not delivered)."""
JSON_MIME = "application/json"

_MESSAGE_TEXT = re.compile(r"llm\.output_messages\.(\d+)\.message\.(?:content|contents\.(\d+)\.message_content\.text)")


@dataclass(frozen=True)
class Answer:
    """What a span answered: `text`, or None with the `problem` that hides it; `field`: the attribute it
    came from (``attributes.output.value``, ``attributes.llm.output_messages.0.message.content``)."""

    text: str | None
    field: str
    problem: str | None = None


def span_answer(attrs: dict[str, Any]) -> Answer | None:
    """The answer of a span's attributes (dotted keys), by the module docstring's order; None when the
    span gives none."""
    messages = sorted((int(match.group(1)), int(match.group(2) or -1), key)
                      for key in attrs if (match := _MESSAGE_TEXT.fullmatch(key))
                      and isinstance(attrs[key], str) and attrs[key].strip())
    if messages:
        return Answer("\n".join(attrs[key] for _, _, key in messages), f"attributes.{messages[0][2]}")
    field = "attributes.output.value"
    value = attrs.get("output.value")
    if value is None and any(key.startswith("output.value.") for key in attrs):
        value = subtree(attrs, "output.value")
    elif isinstance(value, str) and _is_json(attrs.get("output.mime_type")):
        try:
            value = parse_json(value, allow_nan=True)
        except ValueError as error:
            return Answer(None, field, f"output.mime_type is {JSON_MIME}, but output.value is not valid JSON "
                                       f"({getattr(error, 'msg', error)})")
    elif isinstance(value, str):
        return Answer(value, field) if value.strip() else None
    if value is None:
        return None
    found = json_answer(value)
    if found is None:
        return Answer(None, field, f"the JSON output holds no answer text under any of {', '.join(ANSWER_KEYS)} "
                                   "(the first item of choices and candidates)")
    return Answer(found, field)


def json_answer(value: Any) -> str | None:
    """The answer text of a JSON value: a string is itself; a list, the answers of its items, one a line;
    an object, the answer under the first of `ANSWER_KEYS` that holds one (of `FIRST_ONLY` lists, the
    first item only). None when there is none."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list):
        found = [text for text in map(json_answer, value) if text is not None]
        return "\n".join(found) if found else None
    if isinstance(value, dict):
        for key in ANSWER_KEYS:
            item = value.get(key)
            if key in FIRST_ONLY and isinstance(item, list):
                item = item[0] if item else None
            found = json_answer(item) if item is not None else None
            if found is not None:
                return found
    return None


def _is_json(mime: Any) -> bool:
    return isinstance(mime, str) and mime.split(";")[0].strip().lower() == JSON_MIME
