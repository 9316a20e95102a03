#!/usr/bin/env python3
"""Writes expected.json: what each recorded stream in this folder says, read from the recording
by the providers' documented stream semantics, independently of the Rust decoders (a second
implementation in another language, so a decoder bug cannot write its own expectation).

Run from anywhere: `python3 agent-providers/tests/corpus/expect.py`. The replay test
(`agent-providers/tests/providers/corpus.rs`) compares the decoders' output with this file.

Per response (a file may hold several: an Anthropic one ends each at `message_stop`, an
OpenAI-compatible one starts each with a new completion `id`):
text, reasoning, tool calls (id, name, parsed arguments), the last usage reported, the finish
reason, and the error kind a broken stream must end in.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def usage_openai(u):
    return {
        "input_tokens": u.get("prompt_tokens") or 0,
        "output_tokens": u.get("completion_tokens") or 0,
        "reasoning_tokens": (u.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0,
        "cached_input_tokens": (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0,
    }


def arguments(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def openai(frames):
    text, reasoning, usage, finish = "", "", None, None
    calls = []  # [index, id, name, arguments]
    for frame in frames:
        choices = frame.get("choices") or []
        choice = next((c for c in choices if c.get("index", 0) == 0), None)
        if choice:
            delta = choice.get("delta") or {}
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if thought:
                reasoning += thought
            content = delta.get("content")
            if isinstance(content, str):
                text += content
            elif isinstance(content, list):
                for part in content:
                    if part.get("type") == "text":
                        text += part.get("text") or ""
                    elif part.get("type") == "thinking":
                        inner = part.get("thinking")
                        if isinstance(inner, str):
                            reasoning += inner
                        else:
                            reasoning += "".join(p.get("text") or "" for p in inner or [])
            if delta.get("refusal"):
                text += delta["refusal"]
            for d in delta.get("tool_calls") or []:
                fn = d.get("function") or {}
                index = d.get("index")
                call = None
                if index is not None:
                    call = next((c for c in calls if c[0] == index), None)
                elif d.get("id"):
                    call = next((c for c in calls if c[1] == d["id"]), None)
                elif calls:
                    call = calls[-1]
                if call is None:
                    if index is None:
                        index = max((c[0] + 1 for c in calls), default=0)
                    call = [index, "", "", ""]
                    calls.append(call)
                if d.get("id") and not call[1]:
                    call[1] = d["id"]
                if fn.get("name") and not call[2]:
                    call[2] = fn["name"]
                call[3] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
        if frame.get("usage"):
            usage = usage_openai(frame["usage"])
    calls.sort(key=lambda c: c[0])
    return {
        "text": text,
        "reasoning": reasoning,
        "tool_calls": [
            {"id": c[1] or f"call_{c[0]}", "name": c[2], "arguments": arguments(c[3] or "{}")}
            for c in calls
        ],
        "usage": usage,
        "finish_reason": finish,
    }


ANTHROPIC_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def anthropic(frames):
    out = {"text": "", "reasoning": "", "tool_calls": [], "usage": None, "finish_reason": None}
    counts = {"input": 0, "creation": 0, "read": 0, "output": 0}
    state = {"message": None, "stop": None}
    open_blocks = {}

    def take_usage(u):
        counts["input"] = u.get("input_tokens", counts["input"]) if u.get("input_tokens") is not None else counts["input"]
        for key, field in [("creation", "cache_creation_input_tokens"), ("read", "cache_read_input_tokens"), ("output", "output_tokens")]:
            if u.get(field) is not None:
                counts[key] = u[field]
        out["usage"] = {
            "input_tokens": counts["input"] + counts["creation"] + counts["read"],
            "output_tokens": counts["output"],
            "reasoning_tokens": 0,
            "cached_input_tokens": counts["read"],
        }

    def start(block):
        kind = block.get("type")
        if kind == "text":
            out["text"] += block.get("text") or ""
        elif kind == "thinking":
            out["reasoning"] += block.get("thinking") or ""
        elif kind == "tool_use":
            given = block.get("input")
            return {"id": block.get("id", ""), "name": block.get("name", ""), "given": given, "deltas": ""}
        return None

    def close(call):
        if call is None:
            return
        if call["deltas"].strip():
            args = arguments(call["deltas"])
        elif call["given"]:
            args = call["given"]
        else:
            args = {}
        out["tool_calls"].append({"id": call["id"], "name": call["name"], "arguments": args})

    for frame in frames:
        kind = frame.get("type")
        if kind == "message_start":
            message = frame.get("message") or {}
            if state["message"] is not None:
                out["error"] = "StreamMalformed"
                return out
            state["message"] = message.get("id", "")
            if message.get("usage"):
                take_usage(message["usage"])
            for block in message.get("content") or []:
                close(start(block))
            if message.get("stop_reason"):
                state["stop"] = message["stop_reason"]
        elif kind == "content_block_start":
            open_blocks[frame.get("index", 0)] = start(frame.get("content_block") or {})
        elif kind == "content_block_delta":
            delta = frame.get("delta") or {}
            dkind = delta.get("type")
            if dkind == "text_delta":
                out["text"] += delta.get("text") or ""
            elif dkind == "thinking_delta":
                out["reasoning"] += delta.get("thinking") or ""
            elif dkind == "input_json_delta":
                call = open_blocks.get(frame.get("index", 0))
                if call is not None:
                    call["deltas"] += delta.get("partial_json") or ""
        elif kind == "content_block_stop":
            close(open_blocks.pop(frame.get("index", 0), None))
        elif kind == "message_delta":
            delta = frame.get("delta") or {}
            if delta.get("stop_reason"):
                state["stop"] = delta["stop_reason"]
            if frame.get("usage"):
                take_usage(frame["usage"])
        elif kind == "message_stop":
            for index in sorted(open_blocks):
                close(open_blocks[index])
            open_blocks.clear()
            stop = state["stop"]
            if stop == "tool_use":
                out["finish_reason"] = "tool_calls" if out["tool_calls"] else "stop"
            elif stop is None:
                out["finish_reason"] = "unknown"
            else:
                out["finish_reason"] = ANTHROPIC_STOP.get(stop, stop)
            return out
    out["error"] = "StreamTruncated"
    return out


def responses(provider, lines, raw_sse):
    if raw_sse:
        # A whole response body as sent: its `data:` frames up to `[DONE]`.
        data = [l[len("data: "):] for l in lines if l.startswith("data: ")]
        return [[json.loads(d) for d in data if d.strip() != "[DONE]"]]
    frames = [json.loads(line) for line in lines if line.strip()]
    split, current, last_id = [], [], None
    for frame in frames:
        if provider == "openai":
            # A new completion id starts the next response of a multi-response file.
            if frame.get("id") and last_id and frame["id"] != last_id:
                split.append(current)
                current = []
            last_id = frame.get("id") or last_id
        current.append(frame)
        if frame.get("type") == "message_stop":
            split.append(current)
            current = []
    if current:
        split.append(current)
    return split


def main():
    expected = {}
    for provider in ["openai", "anthropic"]:
        folder = os.path.join(HERE, provider)
        for name in sorted(os.listdir(folder)):
            if not (name.endswith(".chunks.txt") or name.endswith(".sse")):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as file:
                lines = file.read().split("\n")
            decode = openai if provider == "openai" else anthropic
            split = responses(provider, lines, name.endswith(".sse"))
            expected[f"{provider}/{name}"] = [decode(r) for r in split]
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as file:
        json.dump(expected, file, indent=1, ensure_ascii=False, sort_keys=True)
        file.write("\n")


if __name__ == "__main__":
    main()
