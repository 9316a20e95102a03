//! The Chat Completions stream decoder: `data:` frames to model events.
//!
//! Text and reasoning deltas pass straight through. Tool calls arrive as argument deltas keyed
//! by `index` (several calls may interleave): a call starts ([`ModelEvent::ToolCallStart`]) as
//! soon as its id and name are known, each delta is appended to its call and forwarded as
//! [`ModelEvent::ToolInputDelta`] (deltas that come before the name are held until it comes,
//! then forwarded as one), and the complete calls are emitted, in index order, once the choice
//! reports its finish reason. Usage arrives in its own chunk
//! after that (`stream_options.include_usage`), and only `data: [DONE]` ends the stream with
//! [`ModelEvent::Finish`], once a finish reason came: `[DONE]` without one is a truncated
//! stream, not a shorter answer.

use agent_core::{
    FinishReason, ModelError, ModelErrorKind, ModelEvent, Text as SharedText, ToolCall, Usage,
    is_context_overflow,
};

use super::chunk::{ChoiceSink, StreamChoice, read_chunk};
use super::wire::{
    Content, ContentPart, Delta, ErrorBody, ErrorCode, ErrorFrame, Text, ToolCallDelta, WireUsage,
};
use crate::drive::{Decoder, status_error};

const PROVIDER: &str = "openai";

/// Decodes one attempt's stream.
#[derive(Default)]
pub(crate) struct OpenAiDecoder {
    /// Tool calls still streaming, in order of first appearance.
    calls: Vec<PendingCall>,
    /// The highest index among `calls`: a piece with a higher one starts a call.
    highest: Option<u32>,
    finish: Option<FinishReason>,
    done: bool,
    /// Which choice of the stream is read (see `chunk.rs`).
    choice: StreamChoice,
    /// The citations last kept (a server repeats them in every chunk).
    citations: Option<serde_json::Value>,
    /// The index of a complete call that came without a name (a server that lost it, or
    /// argument pieces after the choice finished): the stream is malformed, since no tool can
    /// run it and a provider refuses it in the next request's history.
    nameless: Option<u32>,
}

struct PendingCall {
    index: u32,
    /// The id and name as the complete call holds them: moved into it, not copied again.
    id: SharedText,
    name: SharedText,
    arguments: String,
    /// Its [`ModelEvent::ToolCallStart`] was emitted.
    started: bool,
    /// Its id is the server's (not `call_<index>`, made when its arguments came first).
    server_id: bool,
}

impl PendingCall {
    /// Whether `id` names another call than this one, which has an id of the server's.
    fn other_than(&self, id: Option<&str>) -> bool {
        self.server_id && id.is_some_and(|id| *self.id != *id)
    }
}

impl Decoder for OpenAiDecoder {
    fn decode(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        // Chunks are JSON objects: anything else is the end marker, nothing, or malformed.
        if !data.starts_with('{') {
            return self.marker(event, data.trim(), out);
        }
        if event == Some("error") {
            return Err(stream_error(data));
        }
        // The chunk's choice goes to `choice` as it is read; its events come after the
        // citations' below, and none stay when the chunk is an error or malformed.
        let start = out.len();
        let read = read_chunk(self, data, out);
        if let Some(index) = self.nameless.take() {
            out.truncate(start);
            return Err(nameless(index));
        }
        let rest = match read {
            Ok(rest) if !rest.error => rest,
            Ok(_) => {
                out.truncate(start);
                return Err(stream_error(data));
            }
            Err(error) => {
                out.truncate(start);
                return Err(malformed(&error, data));
            }
        };
        if let Some(citations) = rest.citations.filter(|c| !c.is_null())
            && self.citations.as_ref() != Some(&*citations)
        {
            // Sent again with every chunk: kept once, and again only when it changes.
            let kept = serde_json::json!({ "citations": citations });
            out.insert(start, ModelEvent::ProviderMetadata(kept));
            self.citations = Some(*citations);
        }
        if let Some(usage) = rest.usage {
            out.push(ModelEvent::Usage(usage_of(&usage)));
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.done
    }
}

impl ChoiceSink for OpenAiDecoder {
    fn stream_choice(&mut self) -> &mut StreamChoice {
        &mut self.choice
    }

    /// The chunk's choice the stream is read from: its deltas, and its finish reason.
    fn choice(
        &mut self,
        delta: Option<&mut Delta<'_>>,
        finish: Option<Text<'_>>,
        logprobs: Option<Box<serde_json::Value>>,
        out: &mut Vec<ModelEvent>,
    ) {
        if let Some(logprobs) = logprobs.filter(|l| !l.is_null()) {
            out.push(ModelEvent::ProviderMetadata(
                serde_json::json!({ "logprobs": logprobs }),
            ));
        }
        if let Some(delta) = delta {
            // A server may send both reasoning fields; one is enough (an empty one is none).
            if let Some(reasoning) = delta
                .reasoning_content
                .take()
                .filter(non_empty)
                .or(delta.reasoning.take().filter(non_empty))
            {
                out.push(ModelEvent::ReasoningDelta(reasoning.into_delta()));
            }
            match delta.content.take() {
                Some(Content::Text(text)) if !text.is_empty() => {
                    out.push(ModelEvent::TextDelta(text));
                }
                Some(Content::Parts(parts)) => content_parts(parts, out),
                _ => {}
            }
            if let Some(refusal) = delta.refusal.take().filter(non_empty) {
                out.push(ModelEvent::TextDelta(refusal.into_delta()));
            }
            if let Some(calls) = delta.tool_calls.take() {
                for call in calls {
                    self.tool_delta(call, out);
                }
            }
        }
        if let Some(reason) = finish.filter(non_empty) {
            self.finish = Some(finish_reason(&reason.0));
            // The calls are complete once the choice finished.
            self.flush_calls(out);
        }
    }
}

impl OpenAiDecoder {
    /// A frame that is not a JSON object: `[DONE]`, nothing (a block with only an id or a retry
    /// field), or something malformed.
    fn marker(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            // The end marker is `[DONE]` after a finish reason: one without (a proxy closing a
            // broken upstream, say) would end a shorter answer, or calls with cut arguments,
            // as if complete.
            let Some(reason) = self.finish.take() else {
                return Err(ModelError::new(
                    ModelErrorKind::StreamTruncated,
                    format!(
                        "{PROVIDER}: the stream ended with [DONE] but no finish reason (truncated)"
                    ),
                ));
            };
            self.flush_calls(out);
            if let Some(index) = self.nameless.take() {
                return Err(nameless(index));
            }
            out.push(ModelEvent::Finish(reason));
            self.done = true;
            return Ok(());
        }
        if event == Some("error") {
            return Err(stream_error(data));
        }
        if data.starts_with('{') {
            // An object after leading whitespace, now trimmed.
            return self.decode(event, data, out);
        }
        Err(match serde_json::from_str::<serde::de::IgnoredAny>(data) {
            Err(error) => malformed(&error, data),
            Ok(_) => ModelError::new(
                ModelErrorKind::StreamMalformed,
                format!(
                    "{PROVIDER}: a stream chunk is not a JSON object: {}",
                    excerpt(data, 200)
                ),
            ),
        })
    }

    fn tool_delta(&mut self, delta: ToolCallDelta<'_>, out: &mut Vec<ModelEvent>) {
        let id = delta.id.filter(non_empty);
        let slot = match delta.index {
            // A reply's calls stream one after another: a piece goes on with the last call or
            // starts one after every other, and neither is searched for. A search for each
            // piece made a reply of 32 calls cost about 180 instructions a call more than one
            // of 8 (`whole_turn_calls_agent` in agent-providers/benches/stream.rs).
            Some(index) => match self.calls.last() {
                // Another id at the index of the call going on starts a call of its own:
                // some servers (Ollama) number every call of a parallel batch 0 and tell
                // them apart by id alone.
                Some(last)
                    if last.index == index && last.other_than(id.as_ref().map(|id| &*id.0)) =>
                {
                    None
                }
                Some(last) if last.index == index => Some(self.calls.len() - 1),
                _ if self.highest.is_none_or(|highest| index > highest) => None,
                _ => self.calls.iter().position(|call| call.index == index),
            },
            // A server that omits the index: a new id starts a call, else the last one goes on.
            None => match &id {
                Some(id) => self.calls.iter().position(|call| *call.id == *id.0),
                None => self.calls.len().checked_sub(1),
            },
        };
        let slot = slot.unwrap_or_else(|| {
            let index = delta
                .index
                .unwrap_or_else(|| self.highest.map_or(0, |highest| highest.saturating_add(1)));
            self.highest = self.highest.max(Some(index));
            self.calls.push(PendingCall {
                index,
                id: SharedText::new(),
                name: SharedText::new(),
                arguments: String::new(),
                started: false,
                server_id: false,
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[slot];
        if let Some(id) = id
            && call.id.is_empty()
        {
            call.id = SharedText::from(&*id.0);
            call.server_id = true;
        }
        let (name, piece) = match delta.function {
            Some(function) => (function.name.filter(non_empty), function.arguments),
            None => (None, None),
        };
        if let Some(name) = name
            && call.name.is_empty()
        {
            call.name = SharedText::from(&*name.0);
        }
        let piece = piece.filter(non_empty);
        let held = call.arguments.len();
        if let Some(piece) = &piece {
            call.arguments.push_str(&piece.0);
            if call.id.is_empty() {
                call.id = format!("call_{}", call.index).into();
            }
        }
        // The call starts once its id and name are known, before its first piece: pieces
        // that came before the name were held (in its arguments), and go out now as one.
        if !call.started && !call.name.is_empty() && !call.id.is_empty() {
            call.started = true;
            out.push(ModelEvent::ToolCallStart {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            if held > 0 {
                out.push(ModelEvent::ToolInputDelta {
                    id: call.id.clone(),
                    delta: call.arguments.as_str().into(),
                });
                return;
            }
        }
        // The call's id and name are shared, and a short piece is held inline: an argument
        // chunk costs no allocation on its way to on_chunk (`openai_call_model` in
        // benches/chunks.rs).
        if let Some(piece) = piece
            && call.started
        {
            out.push(ModelEvent::ToolInputDelta {
                id: call.id.clone(),
                delta: piece.into_delta(),
            });
        }
    }

    /// Emits every pending call, complete, in index order.
    fn flush_calls(&mut self, out: &mut Vec<ModelEvent>) {
        if self.calls.is_empty() {
            return;
        }
        self.calls.sort_by_key(|call| call.index);
        self.highest = None;
        for call in self.calls.drain(..) {
            if call.name.is_empty() {
                self.nameless = self.nameless.or(Some(call.index));
            }
            let id = if call.id.is_empty() {
                format!("call_{}", call.index).into()
            } else {
                call.id
            };
            out.push(ModelEvent::ToolCall(ToolCall::new(
                id,
                call.name,
                call.arguments,
            )));
        }
    }
}

fn non_empty(text: &Text<'_>) -> bool {
    !text.0.is_empty()
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The events of an array `content`: text parts are text, thinking parts reasoning (their text
/// parts, or a plain string), and parts of any other type are skipped.
fn content_parts(parts: Vec<ContentPart>, out: &mut Vec<ModelEvent>) {
    for part in parts {
        match part.kind.as_str() {
            "text" => {
                if let Some(text) = part.text.filter(|text| !text.is_empty()) {
                    out.push(ModelEvent::TextDelta(text.into()));
                }
            }
            "thinking" => {
                let mut reasoning = String::new();
                match part.thinking {
                    Some(serde_json::Value::String(text)) => reasoning = text,
                    Some(serde_json::Value::Array(inner)) => {
                        for piece in &inner {
                            if let Some(text) = piece.get("text").and_then(|t| t.as_str()) {
                                reasoning.push_str(text);
                            }
                        }
                    }
                    _ => {}
                }
                if !reasoning.is_empty() {
                    out.push(ModelEvent::ReasoningDelta(reasoning.into()));
                }
            }
            other => tracing::debug!(
                part = other,
                "openai: skipping a content part of unknown type"
            ),
        }
    }
}

fn usage_of(usage: &WireUsage) -> Usage {
    Usage {
        input_tokens: usage.prompt_tokens.unwrap_or(0),
        output_tokens: usage.completion_tokens.unwrap_or(0),
        reasoning_tokens: usage
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
        cached_input_tokens: usage
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
    }
}

/// A frame that is not a valid chunk.
fn nameless(index: u32) -> ModelError {
    ModelError::new(
        ModelErrorKind::StreamMalformed,
        format!("{PROVIDER}: malformed stream: tool call {index} came without a name"),
    )
}

fn malformed(error: &serde_json::Error, data: &str) -> ModelError {
    ModelError::new(
        ModelErrorKind::StreamMalformed,
        format!(
            "{PROVIDER}: malformed stream chunk ({error}): {}",
            excerpt(data, 200)
        ),
    )
}

/// An error the provider reported inside the stream, keeping its body, with the kind its code
/// or type deserves (a server error is retried, a context overflow is not).
fn stream_error(data: &str) -> ModelError {
    let message = format!("{PROVIDER}: the stream reported an error: {data}");
    let detail = match serde_json::from_str::<ErrorFrame>(data) {
        Ok(ErrorFrame {
            error: Some(ErrorBody::Detail(detail)),
        }) => Some(detail),
        _ => None,
    };
    let status = detail.as_ref().and_then(|detail| match detail.code {
        Some(ErrorCode::Number(code)) => u16::try_from(code)
            .ok()
            .filter(|code| (400..600).contains(code)),
        _ => None,
    });
    if let Some(status) = status {
        let kind = status_error(PROVIDER, status, "", data).kind;
        return ModelError::new(kind, message).with_status(status);
    }
    let kind = if is_context_overflow(data) {
        ModelErrorKind::ContextOverflow
    } else {
        let words = detail
            .iter()
            .flat_map(|detail| {
                let code = match &detail.code {
                    Some(ErrorCode::Text(code)) => Some(code.as_str()),
                    _ => None,
                };
                [detail.kind.as_deref(), code]
            })
            .flatten()
            .map(str::to_ascii_lowercase)
            .collect::<Vec<_>>();
        let any = |needles: &[&str]| {
            words
                .iter()
                .any(|word| needles.iter().any(|needle| word.contains(needle)))
        };
        if any(&["rate_limit", "rate limit", "too_many_requests"]) {
            ModelErrorKind::RateLimited
        } else if any(&[
            "authentication",
            "invalid_api_key",
            "permission",
            "unauthorized",
        ]) {
            ModelErrorKind::Authentication
        } else if any(&[
            "server",
            "overloaded",
            "internal",
            "unavailable",
            "timeout",
            "api_error",
        ]) {
            ModelErrorKind::Server
        } else if any(&[
            "invalid_request",
            "bad_request",
            "badrequest",
            "not_found",
            "unprocessable",
        ]) {
            ModelErrorKind::BadRequest
        } else {
            ModelErrorKind::Provider
        }
    };
    ModelError::new(kind, message)
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn excerpt(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunk that ends a text answer.
    const FINISHED: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

    fn decode(frames: &[&str]) -> Result<(Vec<ModelEvent>, bool), ModelError> {
        let mut decoder = OpenAiDecoder::default();
        let mut out = Vec::new();
        for frame in frames {
            decoder.decode(None, frame, &mut out)?;
        }
        Ok((out, decoder.finished()))
    }

    /// A complete call without a name can run no tool, and a provider refuses it in the next
    /// request's history: malformed (retried), whether the name never came or argument pieces
    /// came after the choice finished.
    #[test]
    fn a_call_without_a_name_is_malformed() {
        let never_named = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let late = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"a","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
            "[DONE]",
        ]);
        for (result, index) in [(never_named, 0), (late, 1)] {
            let error = result.unwrap_err();
            assert_eq!(error.kind, ModelErrorKind::StreamMalformed);
            assert_eq!(
                error.message,
                format!("openai: malformed stream: tool call {index} came without a name")
            );
        }
    }

    #[test]
    fn escaped_and_plain_text_both_decode() {
        let (events, done) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"content":"a \"quoted\"\nline"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"plain"},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert!(done);
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("a \"quoted\"\nline".into()),
                ModelEvent::TextDelta("plain".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ]
        );
    }

    /// Keys are matched by their text whether written plainly or with escapes, and keys this
    /// client does not read (at every level) are skipped, values and all.
    #[test]
    fn escaped_and_unknown_keys_read_as_the_keys_they_spell() {
        let (events, done) = decode(&[
            r#"{"id":"c","extra":{"a":[1,{"b":null}]},"ch\u006fices":[{"ind\u0065x":0,"x":1,"d\u0065lta":{"role":"assistant","c\u006fntent":"hi","y":[true]},"finish_\u0072eason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"\u0075sage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert!(done);
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("hi".into()),
                ModelEvent::Usage(agent_core::Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Default::default()
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ]
        );
    }

    #[test]
    fn calls_without_index_or_id_still_assemble() {
        let (events, _) = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b1","function":{"name":"b","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        let calls: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCall(call) => Some((
                    call.id.as_str(),
                    call.name.as_str(),
                    call.arguments.as_str(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(calls, [("call_0", "a", r#"{"x":1}"#), ("b1", "b", "{}")]);
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finish(FinishReason::ToolCalls))
        );
    }

    /// The id and arguments of each complete call among `events`.
    fn ids_and_arguments(events: &[ModelEvent]) -> Vec<(&str, &str)> {
        events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCall(call) => Some((call.id.as_str(), call.arguments.as_str())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_chunk_may_carry_several_calls_deltas() {
        let (events, _) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a1","function":{"name":"a","arguments":"{}"}},{"index":1,"id":"b1","function":{"name":"b","arguments":"{\"x\""}},{"index":1,"function":{"arguments":":2}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[]},"finish_reason":"tool_calls"}]}"#,
        ])
        .unwrap();
        let calls = ids_and_arguments(&events);
        assert_eq!(calls, [("a1", "{}"), ("b1", r#"{"x":2}"#)]);
    }

    /// Calls of a parallel batch that share index 0 (as Ollama streams them) are told apart by
    /// their ids; a piece without an id goes on with the last of them.
    #[test]
    fn calls_sharing_an_index_are_told_apart_by_id() {
        let (events, _) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a1","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b1","function":{"name":"time","arguments":"{\"city\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\"Rome\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ])
        .unwrap();
        let calls = ids_and_arguments(&events);
        assert_eq!(
            calls,
            [("a1", r#"{"city":"Paris"}"#), ("b1", r#"{"city":"Rome"}"#)]
        );
        // The same id again, as some servers repeat it on every piece, goes on with its call.
        let (events, _) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a1","function":{"name":"weather","arguments":"{\"city\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a1","function":{"arguments":":\"Paris\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(ids_and_arguments(&events), [("a1", r#"{"city":"Paris"}"#)]);
    }

    /// Pieces of calls streamed out of order (a later call's piece, then an earlier one's; a
    /// call whose index is below the highest yet) still join their own calls, which come out
    /// in index order.
    #[test]
    fn interleaved_calls_pieces_join_their_own_calls() {
        // A call's first piece carries its id and name.
        let piece = |index: u32, head: &str, arguments: &str| {
            let name = if head.is_empty() {
                ""
            } else {
                r#""name":"f","#
            };
            format!(
                r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":{index},{head}"function":{{{name}"arguments":{arguments}}}}}]}}}}]}}"#
            )
        };
        let frames = [
            piece(2, r#""id":"c2","#, r#""{\"c\"""#),
            piece(0, r#""id":"c0","#, r#""{\"a\"""#),
            piece(2, "", r#"":3}""#),
            piece(1, r#""id":"c1","#, r#""{}""#),
            piece(0, "", r#"":1}""#),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.to_owned(),
        ];
        let frames: Vec<&str> = frames.iter().map(String::as_str).collect();
        let (events, _) = decode(&frames).unwrap();
        let calls = ids_and_arguments(&events);
        assert_eq!(
            calls,
            [("c0", r#"{"a":1}"#), ("c1", "{}"), ("c2", r#"{"c":3}"#)]
        );
    }

    /// A server that sends both reasoning fields, one of them empty, loses neither.
    #[test]
    fn an_empty_reasoning_field_does_not_hide_the_other() {
        for frame in [
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"think"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think","reasoning":""}}]}"#,
        ] {
            let (events, _) = decode(&[frame, FINISHED, "[DONE]"]).unwrap();
            assert_eq!(
                events.first(),
                Some(&ModelEvent::ReasoningDelta("think".into())),
                "{frame}"
            );
        }
    }

    #[test]
    fn a_key_given_twice_is_malformed() {
        for frame in [
            // A chunk's and a choice's keys: a second one would replace or drop the first's.
            r#"{"choices":[{"index":0,"delta":{"content":"a"},"delta":{"content":"b"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[{"index":0,"delta":{"content":"b"}}]}"#,
            r#"{"choices":[{"index":0,"index":1,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":0,"finish_reason":"stop","finish_reason":"length"}]}"#,
            r#"{"choices":[{"index":0,"logprobs":null,"logprobs":null}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}"#,
            r#"{"choices":[],"error":null,"error":{"message":"x"}}"#,
            r#"{"choices":[],"citations":[],"citations":["https://a"]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":null,"tool_calls":[]}}]}"#,
            r#"{"choices":[{"index":0,"delta":7}]}"#,
            // A tool call's delta and its function are read by hand, with the same rule.
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"index":1}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","id":"b"}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"f","name":"g"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{","arguments":"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":"0"}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":7}]}}]}"#,
        ] {
            let error = decode(&[frame]).unwrap_err();
            assert_eq!(error.kind, ModelErrorKind::StreamMalformed, "{frame}");
        }
        let (events, _) = decode(&[
            r#"{"choices":[{"index":0,"delta":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null}}]}"#,
        ])
        .unwrap();
        assert!(events.is_empty());
    }

    #[test]
    fn content_may_be_an_array_of_typed_parts() {
        let (events, done) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Two and "},{"type":"text","text":"two."}]}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":"Four."},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"2 + 2 = 4"}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert!(done);
        assert_eq!(
            events,
            [
                ModelEvent::ReasoningDelta("Two and two.".into()),
                ModelEvent::ReasoningDelta("Four.".into()),
                ModelEvent::TextDelta("2 + 2 = 4".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ]
        );
    }

    #[test]
    fn a_tool_call_index_of_u32_max_neither_overflows_nor_allocates() {
        let (events, _) = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":4294967295,"id":"big","function":{"name":"a","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"next","function":{"name":"b","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        let ids: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCall(call) => Some(call.id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["big", "next"]);
    }

    #[test]
    fn in_stream_errors_get_fitting_kinds() {
        let kind = |data: &str| decode(&[data]).unwrap_err().kind;
        assert_eq!(
            kind(r#"{"error":{"message":"boom","type":"server_error"}}"#),
            ModelErrorKind::Server
        );
        assert_eq!(
            kind(
                r#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#
            ),
            ModelErrorKind::RateLimited
        );
        assert_eq!(
            kind(
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#
            ),
            ModelErrorKind::ContextOverflow
        );
        assert_eq!(
            kind(r#"{"error":{"message":"upstream","code":502}}"#),
            ModelErrorKind::Server
        );
        assert_eq!(
            kind(r#"{"error":{"message":"bad","type":"BadRequestError","code":400}}"#),
            ModelErrorKind::BadRequest
        );
        assert_eq!(
            kind(r#"{"error":"something odd"}"#),
            ModelErrorKind::Provider
        );
        let error = decode(&[r#"{"error":{"message":"boom","type":"server_error"}}"#]).unwrap_err();
        assert!(
            error.message.contains(r#""message":"boom""#),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_chunk_that_is_not_json_is_malformed() {
        let error = decode(&["{\"choices\": [ oops"]).unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::StreamMalformed);
        assert!(error.message.contains("oops"), "{}", error.message);
    }

    #[test]
    fn frames_that_are_not_objects() {
        assert_eq!(decode(&["", "  ", "\n"]).unwrap(), (Vec::new(), false));
        let done = [FINISHED, " [DONE] "];
        assert_eq!(
            decode(&done).unwrap(),
            (vec![ModelEvent::Finish(FinishReason::Stop)], true)
        );
        let error = decode(&[" [DONE] "]).unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::StreamTruncated);
        let (events, _) =
            decode(&["  {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}"]).unwrap();
        assert_eq!(events, [ModelEvent::TextDelta("x".into())]);
        for frame in ["42", "[1]", "\"text\"", "nope"] {
            assert_eq!(
                decode(&[frame]).unwrap_err().kind,
                ModelErrorKind::StreamMalformed,
                "{frame}"
            );
        }
        let mut decoder = OpenAiDecoder::default();
        let error = decoder
            .decode(Some("error"), "upstream failed", &mut Vec::new())
            .unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::Provider);
        assert!(error.message.contains("upstream failed"));
    }

    #[test]
    fn only_the_first_choice_is_read() {
        let (events, _) = decode(&[
            r#"{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}"#,
            r#"{"choices":null,"usage":null}"#,
        ])
        .unwrap();
        assert_eq!(events, [ModelEvent::TextDelta("mine".into())]);
        // The index may follow the delta; a second choice with index 0 is not read.
        let (events, _) = decode(&[
            r#"{"choices":[{"delta":{"content":"first"},"index":0},{"index":0,"delta":{"content":"again"}}]}"#,
        ])
        .unwrap();
        assert_eq!(events, [ModelEvent::TextDelta("first".into())]);
    }

    /// A stream whose only choice has index 1 (some OpenAI-compatible servers) reads as one
    /// with index 0: text, tool calls and finish reason, in order.
    #[test]
    fn a_stream_whose_only_choice_is_not_index_0_is_read_from_it() {
        let (events, done) = decode(&[
            r#"{"choices":[{"index":1,"delta":{"role":"assistant","content":"Hel"}}]}"#,
            r#"{"choices":[{"index":1,"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"a\""}}]}}]}"#,
            r#"{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"index":1,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert!(done);
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
                ModelEvent::ToolCallStart {
                    id: "c1".into(),
                    name: "f".into()
                },
                ModelEvent::ToolInputDelta {
                    id: "c1".into(),
                    delta: r#"{"a""#.into()
                },
                ModelEvent::ToolInputDelta {
                    id: "c1".into(),
                    delta: ":1}".into()
                },
                ModelEvent::ToolCall(ToolCall::new("c1", "f", r#"{"a":1}"#)),
                ModelEvent::Usage(Usage {
                    input_tokens: 3,
                    output_tokens: 2,
                    ..Usage::default()
                }),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    /// The first chunk with a choice fixes the stream's index: index 0 if it offers one
    /// (wherever it stands in the chunk), else its first choice's; choices with any other
    /// index are skipped from then on, index 0 arriving later included, and chunks without
    /// choices fix nothing.
    #[test]
    fn the_first_chunk_with_a_choice_fixes_the_streams_index() {
        let (events, done) = decode(&[
            r#"{"choices":[]}"#,
            r#"{"choices":[{"index":2,"delta":{"content":"two"}},{"index":1,"delta":{"content":"one"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"zero"}},{"index":2,"delta":{"content":" again"}}]}"#,
            r#"{"choices":[{"index":2,"delta":{},"finish_reason":"stop"},{"index":2,"delta":{"content":"twice"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert!(done);
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("two".into()),
                ModelEvent::TextDelta(" again".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ]
        );
        // Index 0 in the first chunk wins even after other choices, and holds after it.
        let (events, _) = decode(&[
            r#"{"choices":[{"index":1,"delta":{"content":"one"}},{"index":0,"delta":{"content":"zero"}},{"index":2,"delta":{"content":"two"}}]}"#,
            r#"{"choices":[{"index":1,"delta":{"content":"one"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("zero".into()),
                ModelEvent::TextDelta("!".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ]
        );
        // A stream that never finishes its own choice is truncated, whatever others did.
        let error = decode(&[
            r#"{"choices":[{"index":1,"delta":{"content":"one"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
        .unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::StreamTruncated);
    }

    #[test]
    fn a_chunk_reads_the_same_whatever_its_field_order() {
        let (events, _) = decode(&[
            r#"{"usage":{"prompt_tokens":3,"completion_tokens":2},"choices":[{"finish_reason":"stop","delta":{"content":"hi"},"index":0}],"citations":["https://a.example"]}"#,
        ])
        .unwrap();
        assert_eq!(
            events,
            [
                ModelEvent::ProviderMetadata(
                    serde_json::json!({"citations": ["https://a.example"]})
                ),
                ModelEvent::TextDelta("hi".into()),
                ModelEvent::Usage(Usage {
                    input_tokens: 3,
                    output_tokens: 2,
                    ..Usage::default()
                }),
            ]
        );
    }

    #[test]
    fn a_chunk_that_errs_after_its_choices_leaves_no_events() {
        let mut decoder = OpenAiDecoder::default();
        let mut out = vec![ModelEvent::TextDelta("earlier".into())];
        let error = decoder
            .decode(
                None,
                r#"{"choices":[{"index":0,"delta":{"content":"x"}}],"error":{"message":"boom","type":"server_error"}}"#,
                &mut out,
            )
            .unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::Server);
        let malformed = decoder
            .decode(
                None,
                r#"{"choices":[{"index":0,"delta":{"content":"y"}}],"#,
                &mut out,
            )
            .unwrap_err();
        assert_eq!(malformed.kind, ModelErrorKind::StreamMalformed);
        assert_eq!(out, [ModelEvent::TextDelta("earlier".into())]);
    }

    #[test]
    fn excerpts_cut_at_char_boundaries() {
        assert_eq!(excerpt("ééé", 3), "é...");
        assert_eq!(excerpt("abc", 3), "abc");
    }
}
