//! The Chat Completions wire format: the request body, serialized straight from the core's
//! [`ModelRequest`] (borrowing it, no intermediate JSON tree), and the stream's chunk types,
//! deserialized straight from each SSE frame (borrowing its text where no escape forces a copy).

use std::borrow::Cow;
use std::fmt;

use crate::json_keys::token_count;
use agent_core::{DeltaText, Message, ModelRequest, ToolCall, ToolChoice, ToolSpec};
use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

/// The request body of one call. Provider options are written at the top level; one that names
/// a field this body sets replaces it, and a `null` option removes the field (`stream` stays).
pub(super) struct Body<'a> {
    pub(super) model: &'a str,
    pub(super) request: &'a ModelRequest,
    /// The `tools` array ([`Tools`], written once for a client's list of tools), when the
    /// request offers tools.
    pub(super) tools: Option<&'a RawValue>,
    /// The structured-output schema (adapted when `strict_output`), if any.
    pub(super) output: Option<(&'a str, Cow<'a, Value>)>,
    pub(super) strict_output: bool,
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let options = &request.provider_options;
        let mut map = serializer.serialize_map(None)?;
        let mut put = Entries {
            map: &mut map,
            options,
        };
        put.entry("model", self.model)?;
        put.entry(
            "messages",
            &Messages {
                system: request
                    .system
                    .as_deref()
                    .filter(|system| !system.is_empty()),
                messages: &request.messages,
                send_reasoning: request.send_reasoning,
            },
        )?;
        put.map.serialize_entry("stream", &true)?;
        put.entry(
            "stream_options",
            &StreamOptions {
                include_usage: true,
            },
        )?;
        if let Some(tools) = self.tools {
            put.entry("tools", tools)?;
            put.entry("tool_choice", &WireToolChoice(&request.tool_choice))?;
        }
        let settings = &request.settings;
        if let Some(temperature) = settings.temperature {
            put.entry("temperature", &temperature)?;
        }
        if let Some(max) = settings.max_output_tokens {
            put.entry("max_completion_tokens", &max)?;
        }
        if let Some(top_p) = settings.top_p {
            put.entry("top_p", &top_p)?;
        }
        if let Some(stop) = &settings.stop_sequences {
            put.entry("stop", stop)?;
        }
        if let Some(seed) = settings.seed {
            put.entry("seed", &seed)?;
        }
        if let Some((name, schema)) = &self.output {
            put.entry(
                "response_format",
                &ResponseFormat {
                    kind: "json_schema",
                    json_schema: JsonSchemaFormat {
                        name,
                        schema,
                        strict: self.strict_output,
                    },
                },
            )?;
        }
        for (key, value) in options {
            if key != "stream" && !value.is_null() {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// Writes the body's own fields, skipping those a provider option replaces.
struct Entries<'m, M> {
    map: &'m mut M,
    options: &'m Map<String, Value>,
}

impl<M: SerializeMap> Entries<'_, M> {
    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), M::Error> {
        if self.options.contains_key(key) {
            return Ok(());
        }
        self.map.serialize_entry(key, value)
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The system prompt first, then the conversation.
struct Messages<'a> {
    system: Option<&'a str>,
    messages: &'a [Message],
    send_reasoning: bool,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = self.messages.len() + usize::from(self.system.is_some());
        let mut seq = serializer.serialize_seq(Some(len))?;
        if let Some(content) = self.system {
            seq.serialize_element(&Plain {
                role: "system",
                content,
            })?;
        }
        for message in self.messages {
            seq.serialize_element(&WireMessage {
                message,
                send_reasoning: self.send_reasoning,
            })?;
        }
        seq.end()
    }
}

/// One message of the conversation as Chat Completions reads it, with whether earlier
/// reasoning is sent back. Written field by field from the core's message (no borrowed copy of
/// it first, nor serde's internally tagged enum): a long history is written twice a turn, and
/// this was 55 instructions a message more than a plain struct's derived `Serialize`
/// (`whole_turn_conversation_*` in agent-providers/benches/stream.rs). Its kinds are told apart
/// by two tests (an assistant message? a tool result?) rather than one four-way `match`, which
/// compiled to a jump table whose target changes from message to message (user, call, results,
/// answer): a mispredicted jump for most messages of a long history (the same bench).
struct WireMessage<'a> {
    message: &'a Message,
    send_reasoning: bool,
}

/// A message of text alone: the system prompt, a system or a user message.
#[derive(Serialize)]
struct Plain<'a> {
    role: &'static str,
    content: &'a str,
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Message::Assistant {
            content,
            reasoning,
            tool_calls,
            ..
        } = self.message
        {
            let reasoning = (self.send_reasoning && !reasoning.is_empty()).then_some(reasoning);
            let fields = 2 + usize::from(reasoning.is_some()) + usize::from(!tool_calls.is_empty());
            let mut message = serializer.serialize_struct("Message", fields)?;
            message.serialize_field("role", "assistant")?;
            // `null` when the reply is only tool calls.
            let content =
                (!content.is_empty() || tool_calls.is_empty()).then_some(content.as_str());
            message.serialize_field("content", &content)?;
            // Earlier reasoning, sent back the way compatible servers read it.
            if let Some(reasoning) = reasoning {
                message.serialize_field("reasoning_content", reasoning.as_str())?;
            }
            if !tool_calls.is_empty() {
                message.serialize_field("tool_calls", &ToolCalls(tool_calls))?;
            }
            return message.end();
        }
        if let Message::Tool {
            call_id, content, ..
        } = self.message
        {
            let mut message = serializer.serialize_struct("Message", 3)?;
            message.serialize_field("role", "tool")?;
            message.serialize_field("tool_call_id", call_id.as_str())?;
            message.serialize_field("content", content.as_str())?;
            return message.end();
        }
        // A system or a user message: its role and text read without another test of its kind.
        Plain {
            role: self.message.role(),
            content: self.message.text(),
        }
        .serialize(serializer)
    }
}

/// An assistant message's tool calls.
struct ToolCalls<'a>(&'a [ToolCall]);

impl Serialize for ToolCalls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|call| WireToolCall {
            id: &call.id,
            kind: "function",
            function: WireFunctionCall {
                name: &call.name,
                // Compatible servers parse the arguments as JSON: an empty string is no arguments.
                arguments: if agent_core::no_arguments(&call.arguments) {
                    "{}"
                } else {
                    &call.arguments
                },
            },
        }))
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// The tools offered: each as a function with its parameters' schema.
pub(super) struct Tools<'a> {
    pub(super) specs: &'a [std::sync::Arc<ToolSpec>],
    /// The parameters' schemas, adapted to strict mode when it is on (same order as `specs`).
    pub(super) parameters: &'a [Cow<'a, Value>],
    /// Whether tools are sent with `strict: true`.
    pub(super) strict: bool,
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            self.specs
                .iter()
                .zip(self.parameters)
                .map(|(spec, parameters)| WireTool {
                    kind: "function",
                    function: WireFunction {
                        name: &spec.name,
                        description: &spec.description,
                        parameters,
                        strict: self.strict.then_some(true),
                    },
                }),
        )
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    parameters: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

struct WireToolChoice<'a>(&'a ToolChoice);

impl Serialize for WireToolChoice<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Named<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Name<'a>,
        }
        #[derive(Serialize)]
        struct Name<'a> {
            name: &'a str,
        }
        match self.0 {
            ToolChoice::Auto => serializer.serialize_str("auto"),
            ToolChoice::None => serializer.serialize_str("none"),
            ToolChoice::Required => serializer.serialize_str("required"),
            ToolChoice::Tool(name) => Named {
                kind: "function",
                function: Name { name },
            }
            .serialize(serializer),
        }
    }
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

// ---------------------------------------------------------------------------------------------
// Stream
// ---------------------------------------------------------------------------------------------

/// A string from the stream: borrowed from the frame when it holds no escapes, owned otherwise.
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Cow<'de, str>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(text))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(text.to_owned()))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Cow::Owned(text))
            }
        }

        deserializer.deserialize_str(TextVisitor).map(Text)
    }
}

impl Text<'_> {
    /// The text as a delta's: short text copied inline from the borrowed input, no `String`
    /// made (`benches/chunks.rs`: one allocation less per streamed text chunk).
    pub(super) fn into_delta(self) -> DeltaText {
        match self.0 {
            Cow::Borrowed(text) => text.into(),
            Cow::Owned(text) => text.into(),
        }
    }
}

/// `delta.content`: a string, or (Mistral's reasoning models) an array of typed parts:
/// `{"type": "text", "text": ...}` and `{"type": "thinking", "thinking": [text parts]}`.
pub(super) enum Content {
    /// Short text held inline (see [`DeltaText`]).
    Text(DeltaText),
    Parts(Vec<ContentPart>),
}

/// One typed part of an array `content`; parts of other types are skipped by the decoder.
#[derive(Deserialize)]
pub(super) struct ContentPart {
    #[serde(rename = "type", default)]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) text: Option<String>,
    /// A thinking part's reasoning: text parts, or a plain string.
    #[serde(default)]
    pub(super) thinking: Option<Value>,
}

/// A string straight into a [`DeltaText`] (escaped text too: no `String` made in between),
/// an array of parts into its parts.
impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;

        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content parts")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(DeltaText::from(text)))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Content::Text(DeltaText::from(text)))
            }

            fn visit_seq<S: de::SeqAccess<'de>>(self, seq: S) -> Result<Self::Value, S::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Content::Parts)
            }
        }

        deserializer.deserialize_any(ContentVisitor)
    }
}

/// A choice's `delta`, read in place by `chunk`'s reader; a field it lacks is `None`.
#[derive(Default)]
pub(super) struct Delta<'a> {
    pub(super) content: Option<Content>,
    /// Reasoning as DeepSeek, vLLM and llama.cpp stream it.
    pub(super) reasoning_content: Option<Text<'a>>,
    /// Reasoning as OpenRouter, Ollama and Groq stream it.
    pub(super) reasoning: Option<Text<'a>>,
    /// A structured-output refusal, shown as text.
    pub(super) refusal: Option<Text<'a>>,
    pub(super) tool_calls: Option<ToolCallDeltas<'a>>,
}

/// `delta.tool_calls`: the deltas of one chunk, in order. A chunk almost always holds one,
/// kept inline; any more go in a `Vec` (a `Vec` for every tool-call chunk was an allocation
/// and its free, two per streamed call: `whole_turn_calls_agent` in benches/stream.rs).
pub(super) struct ToolCallDeltas<'a> {
    first: Option<ToolCallDelta<'a>>,
    rest: Vec<ToolCallDelta<'a>>,
}

impl<'a> IntoIterator for ToolCallDeltas<'a> {
    type Item = ToolCallDelta<'a>;
    type IntoIter = std::iter::Chain<
        std::option::IntoIter<ToolCallDelta<'a>>,
        std::vec::IntoIter<ToolCallDelta<'a>>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ToolCallDeltas<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DeltasVisitor;

        impl<'de> Visitor<'de> for DeltasVisitor {
            type Value = ToolCallDeltas<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<S: de::SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let first = seq.next_element()?;
                let mut rest = Vec::new();
                if first.is_some() {
                    while let Some(delta) = seq.next_element()? {
                        rest.push(delta);
                    }
                }
                Ok(ToolCallDeltas { first, rest })
            }
        }

        deserializer.deserialize_seq(DeltasVisitor)
    }
}

/// One call's delta in `delta.tool_calls`; read by `chunk.rs` (a field it lacks is `None`).
#[derive(Default)]
pub(super) struct ToolCallDelta<'a> {
    pub(super) index: Option<u32>,
    pub(super) id: Option<Text<'a>>,
    pub(super) function: Option<FunctionDelta<'a>>,
}

/// A call delta's `function`; read by `chunk.rs`.
#[derive(Default)]
pub(super) struct FunctionDelta<'a> {
    pub(super) name: Option<Text<'a>>,
    /// Borrowed from the chunk, unless escaped (serde_json then hands over a copy): read as a
    /// `DeltaText` instead, an escaped piece made no `String` but every piece ran about 55
    /// instructions more, 40 ns (`openai_call_model` in `benches/chunks.rs`).
    pub(super) arguments: Option<Text<'a>>,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "token_count")]
    pub(super) prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(super) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(super) prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub(super) completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
pub(super) struct PromptDetails {
    #[serde(default, deserialize_with = "token_count")]
    pub(super) cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct CompletionDetails {
    #[serde(default, deserialize_with = "token_count")]
    pub(super) reasoning_tokens: Option<u64>,
}

/// An error frame (`{"error": {...}}` or `{"error": "..."}`), parsed only when one arrives.
#[derive(Deserialize)]
pub(super) struct ErrorFrame {
    #[serde(default)]
    pub(super) error: Option<ErrorBody>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum ErrorBody {
    Detail(ErrorDetail),
    Other(IgnoredAny),
}

#[derive(Deserialize)]
pub(super) struct ErrorDetail {
    #[serde(default, rename = "type")]
    pub(super) kind: Option<String>,
    #[serde(default)]
    pub(super) code: Option<ErrorCode>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum ErrorCode {
    Number(i64),
    Text(String),
    Other(IgnoredAny),
}
