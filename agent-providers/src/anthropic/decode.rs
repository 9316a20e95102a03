//! The stream side of the Messages API: each SSE frame is parsed straight into one typed
//! [`Frame`] (a flat struct whose `type` is an enum, so serde reads the JSON once and buffers
//! nothing), then mapped onto the core's events.
//!
//! | Anthropic | Core |
//! |---|---|
//! | `message_start` usage | [`ModelEvent::Usage`] |
//! | `text_delta` | [`ModelEvent::TextDelta`] |
//! | `thinking_delta` | [`ModelEvent::ReasoningDelta`] |
//! | `signature_delta` | [`ModelEvent::ReasoningSignature`] (kept to send the thinking back) |
//! | `tool_use` block's `content_block_start` | [`ModelEvent::ToolCallStart`] |
//! | `tool_use` block, `input_json_delta` | [`ModelEvent::ToolInputDelta`] per delta |
//! | `tool_use` block's `content_block_stop` | one [`ModelEvent::ToolCall`] |
//! | `message_delta` usage and `stop_reason` | [`ModelEvent::Usage`], the finish reason |
//! | `message_stop` | [`ModelEvent::Finish`], the end marker |
//! | `event: error` | an error of the kind its `type` says |
//! | server-tool blocks (`server_tool_use`, `*_tool_result`, ...) | [`ModelEvent::ProviderBlock`], as sent (never a client tool call; sent back next request) |
//! | `container`, `citations_delta` | [`ModelEvent::ProviderMetadata`] |
//! | `ping`, unknown events | nothing |

use agent_core::{
    DeltaText, FinishReason, ModelError, ModelErrorKind, ModelEvent, Text, ToolCall, Usage,
    is_context_overflow,
};
use serde::de::DeserializeSeed;

use super::frame::{
    BlockHead, BlockKind, Delta, DeltaKind, ErrorBody, Frame, FrameKind, FrameSeed, MessageHead,
    WireUsage,
};
use crate::drive::Decoder;

/// A content block between its start and its stop.
struct Open {
    index: u32,
    block: OpenBlock,
}

enum OpenBlock {
    /// Text, thinking, and blocks that stream nothing the core reads.
    Passive,
    /// A tool call: its arguments gather here until the block stops (or come whole with its
    /// start, in `given`).
    Tool {
        id: Text,
        name: Text,
        arguments: String,
        given: Option<String>,
        metadata: Option<serde_json::Value>,
    },
    /// The tool that carries the structured answer: its input streams as the answer's text.
    Answer { streamed: bool },
    /// A block the engine has no event for (a server tool's use or result): kept as sent, with
    /// any input that streams into it, as provider metadata.
    Server {
        block: serde_json::Value,
        input: String,
    },
}

/// Decodes one Anthropic Messages stream.
pub(super) struct AnthropicDecoder {
    /// The name of the tool that carries a structured answer, if one was asked for.
    answer_tool: Option<String>,
    open: Vec<Open>,
    /// Prompt tokens neither read from nor written to the cache.
    uncached_input: u64,
    cache_creation: u64,
    cache_read: u64,
    usage: Usage,
    stop_reason: Option<String>,
    tool_calls: bool,
    /// The id of the message being streamed, once `message_start` said it.
    message: Option<String>,
    finished: bool,
    /// With an answer tool: the text blocks' text, held until the message ends. With
    /// extended thinking the answer tool is not forced, and a model often writes a sentence
    /// before calling it; that text is not the answer. Sent as the reply's text if no answer
    /// tool came, else kept as provider metadata (`{"text": ...}`).
    held: String,
    /// The answer tool's block started.
    answered: bool,
}

impl AnthropicDecoder {
    pub(super) fn new(answer_tool: Option<String>) -> Self {
        AnthropicDecoder {
            answer_tool,
            open: Vec::new(),
            uncached_input: 0,
            cache_creation: 0,
            cache_read: 0,
            usage: Usage::default(),
            stop_reason: None,
            tool_calls: false,
            message: None,
            finished: false,
            held: String::new(),
            answered: false,
        }
    }

    /// A text block's text: streamed, or held while an answer tool may come (see `held`).
    fn text(&mut self, text: Option<DeltaText>, out: &mut Vec<ModelEvent>) {
        if self.answer_tool.is_none() {
            push_delta(out, text, ModelEvent::TextDelta);
        } else if let Some(text) = text {
            self.held.push_str(&text);
        }
    }

    /// The held text, once the message ends: the reply's text, or beside the answer.
    fn release_held(&mut self, out: &mut Vec<ModelEvent>) {
        if self.held.is_empty() {
            return;
        }
        let held = std::mem::take(&mut self.held);
        out.push(if self.answered {
            ModelEvent::ProviderMetadata(serde_json::json!({ "text": held }))
        } else {
            ModelEvent::TextDelta(held.into())
        });
    }

    /// Takes the counts a frame reports (later counts replace earlier ones) and pushes the
    /// usage so far. The core's input tokens are all of the prompt, cached or not.
    fn usage(&mut self, usage: &WireUsage, out: &mut Vec<ModelEvent>) {
        self.uncached_input = usage.input_tokens.unwrap_or(self.uncached_input);
        self.cache_creation = usage
            .cache_creation_input_tokens
            .unwrap_or(self.cache_creation);
        self.cache_read = usage.cache_read_input_tokens.unwrap_or(self.cache_read);
        self.usage.input_tokens = self
            .uncached_input
            .saturating_add(self.cache_creation)
            .saturating_add(self.cache_read);
        self.usage.cached_input_tokens = self.cache_read;
        self.usage.output_tokens = usage.output_tokens.unwrap_or(self.usage.output_tokens);
        out.push(ModelEvent::Usage(self.usage));
    }

    fn start(
        &mut self,
        index: u32,
        head: BlockHead,
        raw: Option<serde_json::Value>,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        // A second start of an open block would drop what the first gathered (a tool call's
        // arguments, say): malformed, as a delta for a block that never started is.
        if self.open.iter().any(|open| open.index == index) {
            return Err(malformed(format!(
                "content_block_start for block {index}, which is already open"
            )));
        }
        let block = self.block(head, raw, out)?;
        self.open.push(Open { index, block });
        Ok(())
    }

    /// A block as it starts: what it says at once, and what it gathers until it stops. `raw` is
    /// the block as sent, read only for blocks of other kinds. A client tool call without its
    /// name or id is malformed: no tool could run it, no result could answer it, and Anthropic
    /// would refuse it in the next request's history.
    fn block(
        &mut self,
        head: BlockHead,
        raw: Option<serde_json::Value>,
        out: &mut Vec<ModelEvent>,
    ) -> Result<OpenBlock, ModelError> {
        Ok(match head.kind {
            BlockKind::Text => {
                self.text(head.text, out);
                OpenBlock::Passive
            }
            BlockKind::Thinking => {
                let thinking = head.thinking.map(DeltaText::from);
                push_delta(out, thinking, ModelEvent::ReasoningDelta);
                push_text(out, head.signature, ModelEvent::ReasoningSignature);
                OpenBlock::Passive
            }
            BlockKind::ToolUse => {
                let name = head.name.unwrap_or_default();
                // An input that came whole (not `{}` awaiting deltas) is the call's input.
                let given = head
                    .input
                    .filter(|input| input.as_object().is_none_or(|fields| !fields.is_empty()))
                    .map(|input| input.to_string());
                if self.answer_tool.as_deref() == Some(name.as_str()) {
                    self.answered = true;
                    if let Some(given) = given {
                        out.push(ModelEvent::TextDelta(given.into()));
                        OpenBlock::Answer { streamed: true }
                    } else {
                        OpenBlock::Answer { streamed: false }
                    }
                } else {
                    let id = head.id.unwrap_or_default();
                    if id.is_empty() || name.is_empty() {
                        return Err(malformed(format!(
                            "a tool_use block without its name or id (name `{name}`, id `{id}`)"
                        )));
                    }
                    // Shared: the start event, each input delta and the `ToolCall` hold the
                    // call's one copy of each.
                    let id = Text::from(id);
                    let name = Text::from(name);
                    out.push(ModelEvent::ToolCallStart {
                        id: id.clone(),
                        name: name.clone(),
                    });
                    OpenBlock::Tool {
                        id,
                        name,
                        arguments: String::new(),
                        given,
                        metadata: head
                            .caller
                            .map(|caller| serde_json::json!({ "caller": caller })),
                    }
                }
            }
            BlockKind::Other => match raw {
                Some(block) => OpenBlock::Server {
                    block,
                    input: String::new(),
                },
                None => OpenBlock::Passive,
            },
        })
    }

    fn delta(
        &mut self,
        index: u32,
        delta: Delta,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        // A delta belongs to a block that started and has not stopped: one for any other
        // index is a stream that lost a frame, whose text would land in the wrong place.
        let Some(position) = self.open.iter().position(|open| open.index == index) else {
            return Err(malformed(format!(
                "content_block_delta for block {index}, which is not open"
            )));
        };
        match delta.kind {
            Some(DeltaKind::TextDelta) => self.text(delta.text, out),
            Some(DeltaKind::ThinkingDelta) => {
                push_delta(out, delta.text, ModelEvent::ReasoningDelta)
            }
            Some(DeltaKind::SignatureDelta) => push_text(
                out,
                delta.signature.map(String::from),
                ModelEvent::ReasoningSignature,
            ),
            Some(DeltaKind::InputJsonDelta) => {
                let open = &mut self.open[position];
                let piece = delta.text.unwrap_or_default();
                if piece.is_empty() {
                    return Ok(());
                }
                match &mut open.block {
                    OpenBlock::Tool { id, arguments, .. } => {
                        arguments.push_str(&piece);
                        out.push(ModelEvent::ToolInputDelta {
                            id: id.clone(),
                            delta: piece,
                        });
                    }
                    OpenBlock::Answer { streamed } => {
                        *streamed = true;
                        out.push(ModelEvent::TextDelta(piece));
                    }
                    OpenBlock::Server { input, .. } => input.push_str(&piece),
                    OpenBlock::Passive => {}
                }
            }
            Some(DeltaKind::CitationsDelta) => {
                if let Some(citation) = delta.citation {
                    out.push(ModelEvent::ProviderMetadata(
                        serde_json::json!({ "citation": citation }),
                    ));
                }
            }
            Some(DeltaKind::Other) | None => {}
        }
        Ok(())
    }

    fn stop(&mut self, index: u32, out: &mut Vec<ModelEvent>) {
        if let Some(position) = self.open.iter().position(|open| open.index == index) {
            let open = self.open.remove(position);
            self.complete(open.block, out);
        }
    }

    fn complete(&mut self, block: OpenBlock, out: &mut Vec<ModelEvent>) {
        match block {
            OpenBlock::Tool {
                id,
                name,
                mut arguments,
                given,
                metadata,
            } => {
                // Streamed deltas win; else the input the block started with; else none.
                if agent_core::no_arguments(&arguments) {
                    arguments = given.unwrap_or_else(|| "{}".to_owned());
                }
                self.tool_calls = true;
                let mut call = ToolCall::new(id, name, arguments);
                call.metadata = metadata;
                out.push(ModelEvent::ToolCall(call));
            }
            // A tool input that streamed no delta is the empty object.
            OpenBlock::Answer { streamed: false } => out.push(ModelEvent::TextDelta("{}".into())),
            OpenBlock::Server { mut block, input } => {
                if !input.trim().is_empty()
                    && let Some(fields) = block.as_object_mut()
                {
                    let input =
                        serde_json::from_str(&input).unwrap_or(serde_json::Value::String(input));
                    fields.insert("input".to_owned(), input);
                }
                out.push(ModelEvent::ProviderBlock(block));
            }
            OpenBlock::Answer { streamed: true } | OpenBlock::Passive => {}
        }
    }

    /// A message starts: its usage, and any whole blocks it already holds. A second start
    /// inside a message that has not stopped is malformed (the reference SDKs refuse it too):
    /// merging two messages would invent an answer neither sent.
    fn message_start(
        &mut self,
        message: MessageHead,
        raw_blocks: Vec<Option<serde_json::Value>>,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let id = message.id.unwrap_or_default();
        if let Some(first) = &self.message {
            return Err(malformed(format!(
                "message `{id}` started inside message `{first}`, which had not stopped"
            )));
        }
        self.message = Some(id);
        if let Some(usage) = &message.usage {
            self.usage(usage, out);
        }
        for (block, raw) in message.content.into_iter().zip(raw_blocks) {
            let block = self.block(block, raw, out)?;
            self.complete(block, out);
        }
        if message.stop_reason.is_some() {
            self.stop_reason = message.stop_reason;
        }
        Ok(())
    }

    fn finish_reason(&self) -> FinishReason {
        match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") => FinishReason::Stop,
            Some("max_tokens") => FinishReason::Length,
            // A stop for the answer tool alone is the end of the answer.
            Some("tool_use") if self.tool_calls => FinishReason::ToolCalls,
            Some("tool_use") => FinishReason::Stop,
            Some("refusal") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None => FinishReason::Other("unknown".to_owned()),
        }
    }
}

impl Decoder for AnthropicDecoder {
    fn decode(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        // A frame without data (a keep-alive) says nothing. (An object is seen without
        // trimming it: `anthropic_model` in `benches/chunks.rs`, 50 instructions per chunk.)
        if !data.starts_with('{') && data.trim().is_empty() {
            return Ok(());
        }
        // Read in place through a deserializer of our own (see `FrameSeed`) rather than
        // `serde_json::from_str`, whose layers each moved the frame once more.
        let mut frame = Frame::default();
        let mut json = serde_json::Deserializer::from_str(data);
        FrameSeed { frame: &mut frame }
            .deserialize(&mut json)
            .and_then(|()| json.end())
            .map_err(|error| {
                malformed(format!(
                    "an event that is not valid JSON ({error}): {}",
                    excerpt(data)
                ))
            })?;
        let Some(kind) = frame.kind else {
            return Err(malformed(format!(
                "an event without its type: {}",
                excerpt(data)
            )));
        };
        match kind {
            FrameKind::MessageStart => {
                let Some(message) = frame.message else {
                    return Err(malformed("message_start without its message".to_owned()));
                };
                let raw = if message
                    .content
                    .iter()
                    .any(|b| matches!(b.kind, BlockKind::Other))
                {
                    raw_field(data, &["message", "content"])
                        .and_then(|blocks| blocks.as_array().cloned())
                        .map(|blocks| blocks.into_iter().map(Some).collect())
                        .unwrap_or_default()
                } else {
                    vec![None; message.content.len()]
                };
                self.message_start(*message, raw, out)?;
            }
            FrameKind::ContentBlockStart => {
                let Some(head) = frame.content_block else {
                    return Err(malformed(
                        "content_block_start without its content_block".to_owned(),
                    ));
                };
                let raw = matches!(head.kind, BlockKind::Other)
                    .then(|| raw_field(data, &["content_block"]))
                    .flatten();
                self.start(frame.index, *head, raw, out)?;
            }
            FrameKind::ContentBlockDelta => {
                let Some(delta) = frame.delta else {
                    return Err(malformed(
                        "content_block_delta without its delta".to_owned(),
                    ));
                };
                self.delta(frame.index, delta, out)?;
            }
            FrameKind::ContentBlockStop => self.stop(frame.index, out),
            FrameKind::MessageDelta => {
                if let Some(delta) = frame.delta {
                    if let Some(reason) = delta.stop_reason {
                        self.stop_reason = Some(reason.into());
                    }
                    if let Some(container) = delta.container {
                        out.push(ModelEvent::ProviderMetadata(
                            serde_json::json!({ "container": container }),
                        ));
                    }
                }
                if let Some(usage) = &frame.usage {
                    self.usage(usage, out);
                }
            }
            FrameKind::MessageStop => {
                // A stop without its start is a stream that lost its beginning, not a complete
                // empty answer.
                if self.message.is_none() {
                    return Err(malformed("message_stop without a message_start".to_owned()));
                }
                // Blocks the stream never stopped end with the message.
                for open in std::mem::take(&mut self.open) {
                    self.complete(open.block, out);
                }
                self.release_held(out);
                self.finished = true;
                out.push(ModelEvent::Finish(self.finish_reason()));
            }
            FrameKind::Error => {
                return Err(stream_error(frame.error.map(|e| *e).unwrap_or_default()));
            }
            FrameKind::Other => {}
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

/// A field of a frame, read again as plain JSON: only for the rare blocks kept whole.
fn raw_field(data: &str, path: &[&str]) -> Option<serde_json::Value> {
    let mut value: serde_json::Value = serde_json::from_str(data).ok()?;
    for key in path {
        value = value.get_mut(*key)?.take();
    }
    Some(value)
}

/// Pushes a piece of text, unless it is empty.
fn push_text(out: &mut Vec<ModelEvent>, text: Option<String>, event: fn(String) -> ModelEvent) {
    if let Some(text) = text.filter(|text| !text.is_empty()) {
        out.push(event(text));
    }
}

/// Pushes a streamed piece of text or reasoning, unless it is empty.
#[inline]
fn push_delta(
    out: &mut Vec<ModelEvent>,
    text: Option<DeltaText>,
    event: fn(DeltaText) -> ModelEvent,
) {
    if let Some(text) = text.filter(|text| !text.is_empty()) {
        out.push(event(text));
    }
}

fn malformed(what: String) -> ModelError {
    ModelError::new(
        ModelErrorKind::StreamMalformed,
        format!("anthropic: malformed stream: {what}"),
    )
}

/// The start of an event's data, for an error message.
fn excerpt(data: &str) -> &str {
    const MAX: usize = 200;
    if data.len() <= MAX {
        return data;
    }
    let mut end = MAX;
    while !data.is_char_boundary(end) {
        end -= 1;
    }
    &data[..end]
}

/// The error an `event: error` reports, with the kind its type deserves: an overload or an API
/// error is a server failure (retried), a rate limit is one too, and an invalid request that
/// says the prompt is too long is a context overflow (not retried).
fn stream_error(error: ErrorBody) -> ModelError {
    let kind = match error.kind.as_str() {
        _ if is_context_overflow(&error.message) => ModelErrorKind::ContextOverflow,
        "overloaded_error" | "api_error" => ModelErrorKind::Server,
        "rate_limit_error" => ModelErrorKind::RateLimited,
        "authentication_error" | "permission_error" => ModelErrorKind::Authentication,
        "invalid_request_error" | "not_found_error" | "request_too_large" => {
            ModelErrorKind::BadRequest
        }
        "timeout_error" => ModelErrorKind::Timeout,
        _ => ModelErrorKind::Provider,
    };
    let name = if error.kind.is_empty() {
        "error"
    } else {
        error.kind.as_str()
    };
    let message = if error.message.is_empty() {
        format!("anthropic: the stream reported {name}")
    } else {
        format!("anthropic: the stream reported {name}: {}", error.message)
    };
    ModelError::new(kind, message)
}
