//! Property tests (bounded, so CI stays fast) of everything a server controls, through the whole
//! provider path over a loopback socket (HTTP, SSE framing, decoding, retries): whatever the
//! bytes, the split points or the header values, the provider never panics, and it yields either
//! exactly the events of the intact stream or a typed error.

use std::sync::OnceLock;
use std::time::Duration;

use crate::support::{Reply, TestServer, collect, request, settings};
use agent_core::{Message, Model, ModelError, ModelErrorKind, ModelEvent, ToolCall};
use agent_providers::{Anthropic, OpenAi};
use proptest::prelude::*;
use serde_json::{Value, json};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

#[derive(Clone, Copy, Debug)]
enum Provider {
    OpenAi,
    Anthropic,
}

fn model(provider: Provider, url: &str, max_retries: u32) -> Box<dyn Model> {
    match provider {
        Provider::OpenAi => Box::new(
            OpenAi::new("key")
                .base_url(format!("{url}/v1"))
                .model("gpt-test")
                .settings(settings(max_retries)),
        ),
        Provider::Anthropic => Box::new(
            Anthropic::new("key")
                .base_url(url)
                .model("claude-test")
                .settings(settings(max_retries)),
        ),
    }
}

/// What one model call yielded: its events, and the error that ended it, if any.
type Outcome = (Vec<ModelEvent>, Option<ModelError>);

/// One model call of `provider` against a server answering with `replies`.
fn call(provider: Provider, replies: Vec<Reply>, max_retries: u32) -> Outcome {
    runtime().block_on(async move {
        let server = TestServer::start(replies).await;
        collect(model(provider, &server.url, max_retries).stream(request())).await
    })
}

fn openai_stream() -> String {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let frame = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {frame}\n\n")
    };
    let mut body = String::new();
    body += &chunk(
        json!({"role": "assistant", "reasoning_content": "Thinking… ünïcode"}),
        None,
    );
    body += &chunk(json!({"content": "Héllo wörld 🌍, "}), None);
    body += &chunk(json!({"content": "twice."}), None);
    body += &chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"pa"}}]}),
        None,
    );
    body += &chunk(
        json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Zürich\"}"}}]}),
        None,
    );
    body += &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"ä.txt\"}"}}]}),
        None,
    );
    body += &chunk(json!({}), Some("tool_calls"));
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}});
    body += &format!("data: {usage}\n\ndata: [DONE]\n\n");
    body
}

fn anthropic_stream() -> String {
    let sse = |data: serde_json::Value| {
        let name = data["type"].as_str().unwrap_or("message").to_owned();
        format!("event: {name}\ndata: {data}\n\n")
    };
    let mut body = sse(json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 12, "output_tokens": 1}}}));
    body += ": keep-alive comment\n\n";
    body += &sse(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
    );
    body += &sse(
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hmm… ü"}}),
    );
    body += &sse(
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}}),
    );
    body += &sse(json!({"type": "content_block_stop", "index": 0}));
    body += &sse(
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
    );
    body += &sse(
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Héllo 🌍"}}),
    );
    body += &sse(json!({"type": "content_block_stop", "index": 1}));
    body += &sse(json!({"type": "content_block_start", "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}}));
    body += &sse(
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":"}}),
    );
    body += &sse(
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"ä.txt\"}"}}),
    );
    body += &sse(json!({"type": "content_block_stop", "index": 2}));
    body += &sse(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 9}}),
    );
    body += &sse(json!({"type": "message_stop"}));
    body
}

fn stream_of(provider: Provider) -> &'static str {
    static OPENAI: OnceLock<String> = OnceLock::new();
    static ANTHROPIC: OnceLock<String> = OnceLock::new();
    match provider {
        Provider::OpenAi => OPENAI.get_or_init(openai_stream),
        Provider::Anthropic => ANTHROPIC.get_or_init(anthropic_stream),
    }
}

/// The events of the intact stream, written in one piece.
fn intact(provider: Provider) -> &'static [ModelEvent] {
    static OPENAI: OnceLock<Vec<ModelEvent>> = OnceLock::new();
    static ANTHROPIC: OnceLock<Vec<ModelEvent>> = OnceLock::new();
    let decode = || {
        let body = stream_of(provider).as_bytes().to_vec();
        let (events, error) = call(provider, vec![Reply::Sse(vec![body])], 0);
        assert_eq!(error, None, "the intact {provider:?} stream decodes");
        assert!(
            matches!(events.last(), Some(ModelEvent::Finish(_))),
            "{events:?}"
        );
        events
    };
    match provider {
        Provider::OpenAi => OPENAI.get_or_init(decode),
        Provider::Anthropic => ANTHROPIC.get_or_init(decode),
    }
}

/// `bytes` cut into pieces of the given sizes (cycled), each written as its own HTTP chunk.
fn pieces(bytes: &[u8], sizes: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut sizes = sizes.iter().cycle();
    while at < bytes.len() {
        let size = (*sizes.next().unwrap_or(&1)).max(1);
        let end = (at + size).min(bytes.len());
        out.push(bytes[at..end].to_vec());
        at = end;
    }
    out
}

/// Errors a broken body may end in.
fn is_stream_error(error: &ModelError) -> bool {
    matches!(
        error.kind,
        ModelErrorKind::StreamTruncated
            | ModelErrorKind::StreamMalformed
            | ModelErrorKind::Disconnected
            | ModelErrorKind::Provider
            | ModelErrorKind::Server
            | ModelErrorKind::RateLimited
            | ModelErrorKind::ContextOverflow
            | ModelErrorKind::BadRequest
            | ModelErrorKind::Authentication
            | ModelErrorKind::Other
    )
}

/// JSON values a server may add under keys this client does not read.
const UNREAD: [&str; 6] = [
    "null",
    "true",
    "-12.5e3",
    "\"text \\\" ü\"",
    "[1,{\"a\":null}]",
    "{\"b\":[{}]}",
];

/// `value` written with each object's keys in an order `next` picks, and with up to two keys
/// this client does not read added to every object but a tool's input (which is the call's).
fn scramble(value: &Value, next: &mut impl FnMut() -> usize, in_input: bool) -> String {
    match value {
        Value::Object(fields) => {
            let mut entries: Vec<String> = fields
                .iter()
                .map(|(key, field)| {
                    let field = scramble(field, next, in_input || key == "input");
                    format!("{}:{field}", Value::String(key.clone()))
                })
                .collect();
            if !in_input {
                for extra in 0..next() % 3 {
                    entries.push(format!(
                        "\"zz_unread_{extra}\":{}",
                        UNREAD[next() % UNREAD.len()]
                    ));
                }
            }
            for at in (1..entries.len()).rev() {
                entries.swap(at, next() % (at + 1));
            }
            format!("{{{}}}", entries.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|item| scramble(item, next, in_input))
                .collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// The intact stream with every event's JSON scrambled (see [`scramble`]) from `seed`.
fn scrambled(provider: Provider, seed: u64) -> String {
    let mut state = seed | 1;
    // xorshift64: the same scramble for the same seed, so a failing case can be replayed.
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 33) as usize
    };
    stream_of(provider)
        .split_inclusive('\n')
        .map(|line| {
            let data = line.strip_prefix("data: ").map(str::trim_end);
            match data.and_then(|data| serde_json::from_str::<Value>(data).ok()) {
                Some(value) => format!("data: {}\n", scramble(&value, &mut next, false)),
                None => line.to_owned(),
            }
        })
        .collect()
}

fn provider() -> impl Strategy<Value = Provider> {
    prop_oneof![Just(Provider::OpenAi), Just(Provider::Anthropic)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// However the bytes are split (inside events, lines and UTF-8 characters), the events are
    /// those of the intact stream.
    #[test]
    fn any_split_decodes_to_the_same_events(
        provider in provider(),
        sizes in prop::collection::vec(1usize..48, 1..12),
    ) {
        let body = pieces(stream_of(provider).as_bytes(), &sizes);
        let (events, error) = call(provider, vec![Reply::Sse(body)], 0);
        prop_assert_eq!(error, None);
        prop_assert_eq!(events.as_slice(), intact(provider));
    }

    /// The decoders read objects by key, whatever their order and whatever keys they do not
    /// read come with them (of any JSON type, in every object but a tool's input): the events
    /// are those of the intact stream.
    #[test]
    fn any_key_order_and_unread_keys_decode_to_the_same_events(
        provider in provider(),
        seed in any::<u64>(),
    ) {
        let body = scrambled(provider, seed).into_bytes();
        let (events, error) = call(provider, vec![Reply::Sse(vec![body])], 0);
        prop_assert_eq!(error, None);
        prop_assert_eq!(events.as_slice(), intact(provider));
    }

    /// A stream cut anywhere before its end is an error, never a shorter answer; cut at its very
    /// end it is whole.
    #[test]
    fn a_cut_stream_is_whole_or_an_error(provider in provider(), cut in 0.0f64..1.0) {
        let full = stream_of(provider).as_bytes();
        let at = ((full.len() as f64) * cut) as usize;
        let (events, error) = call(provider, vec![Reply::Sse(vec![full[..at].to_vec()])], 0);
        match error {
            None => prop_assert_eq!(events.as_slice(), intact(provider)),
            Some(error) => prop_assert!(is_stream_error(&error), "{:?}", error),
        }
    }

    /// Arbitrary bytes as the body (and arbitrary bytes spliced into a valid stream) never
    /// panic: the call ends in a typed error, or with the events of a stream that finished.
    #[test]
    fn arbitrary_bytes_never_panic(
        provider in provider(),
        noise in prop::collection::vec(any::<u8>(), 0..400),
        at in 0.0f64..1.0,
        sizes in prop::collection::vec(1usize..64, 1..6),
    ) {
        for body in [noise.clone(), {
            let full = stream_of(provider).as_bytes();
            let at = ((full.len() as f64) * at) as usize;
            [&full[..at], &noise[..], &full[at..]].concat()
        }] {
            let (events, error) = call(provider, vec![Reply::Sse(pieces(&body, &sizes))], 0);
            match error {
                None => prop_assert!(matches!(events.last(), Some(ModelEvent::Finish(_))), "{:?}", events),
                Some(error) => prop_assert!(is_stream_error(&error), "{:?}", error),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever a rate-limited response says in `Retry-After` or `retry-after-ms`, the retry
    /// waits at most `max_backoff` and the call recovers.
    #[test]
    fn any_retry_after_value_is_safe(
        provider in provider(),
        name in prop_oneof![Just("retry-after"), Just("retry-after-ms")],
        value in prop_oneof![
            "[ -~]{0,24}",
            Just("inf".to_owned()),
            Just("1e30".to_owned()),
            Just("-1".to_owned()),
            Just("NaN".to_owned()),
            Just("18446744073709551616".to_owned()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|n| n.to_string()),
        ],
    ) {
        let limited = Reply::Status {
            status: 429,
            headers: vec![(name.to_owned(), value.trim().to_owned())],
            body: r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#.to_owned(),
        };
        let ok = Reply::Sse(vec![stream_of(provider).as_bytes().to_vec()]);
        let started = std::time::Instant::now();
        let (events, error) = call(provider, vec![limited, ok], 1);
        prop_assert_eq!(error, None);
        prop_assert_eq!(events.as_slice(), intact(provider));
        prop_assert!(started.elapsed() < Duration::from_secs(5));
    }
}

/// The `messages` of the body `provider` sends for `request` (answered with its whole stream).
fn sent_messages(provider: Provider, request: agent_core::ModelRequest) -> Vec<Value> {
    runtime().block_on(async {
        let reply = Reply::Sse(vec![stream_of(provider).as_bytes().to_vec()]);
        let server = TestServer::start([reply]).await;
        let (_, error) = collect(model(provider, &server.url, 0).stream(request)).await;
        assert_eq!(error, None);
        let body = server.requests()[0].json();
        body["messages"].as_array().cloned().unwrap_or_default()
    })
}

/// A message of a generated conversation: its kind and the parts that decide its blocks.
fn message() -> impl Strategy<Value = Message> {
    let text = prop_oneof![Just(String::new()), "[a-z ]{1,8}"];
    prop_oneof![
        text.clone().prop_map(Message::user),
        text.clone().prop_map(Message::system),
        (
            text.clone(),
            text.clone(),
            any::<bool>(),
            prop::collection::vec(
                (
                    "[a-z]{1,4}",
                    prop_oneof![Just("{}"), Just("{\"a\":1}"), Just("{bad")]
                ),
                0..3
            ),
        )
            .prop_map(|(content, reasoning, signed, calls)| Message::Assistant {
                content: content.into(),
                reasoning: reasoning.into(),
                tool_calls: calls
                    .into_iter()
                    .map(|(id, arguments)| ToolCall::new(id, "t", arguments))
                    .collect(),
                reasoning_signature: signed.then(|| "sig".to_owned()),
                provider_blocks: Vec::new(),
            }),
        (text, any::<bool>()).prop_map(|(content, is_error)| Message::Tool {
            call_id: "c".into(),
            name: "t".into(),
            content: content.into(),
            is_error,
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever the conversation, Anthropic's request opens with the user's message and
    /// alternates roles, sends no message without blocks and sends each message's blocks: a
    /// user message's text (even empty), an assistant message's signed reasoning (with thinking
    /// on), text (unless empty or whitespace alone) and tool calls (their input always an object), a tool result's
    /// block; a system message none. A conversation whose first message that sends anything is
    /// an assistant's gets one text block more: the user message that opens it.
    #[test]
    fn anthropic_requests_alternate_roles_and_carry_every_block(
        messages in prop::collection::vec(message(), 0..12),
        thinking in any::<bool>(),
    ) {
        let mut request = request();
        request.messages = messages.clone().into();
        if thinking {
            request.provider_options = json!({"thinking": {"type": "enabled", "budget_tokens": 1024}})
                .as_object()
                .cloned()
                .unwrap_or_default();
        }
        let sent = sent_messages(Provider::Anthropic, request);
        let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap_or("?")).collect();
        prop_assert!(roles.windows(2).all(|pair| pair[0] != pair[1]), "{:?}", roles);
        prop_assert!(roles.first().is_none_or(|role| *role == "user"), "{:?}", roles);
        let blocks: Vec<&Value> = sent
            .iter()
            .flat_map(|m| m["content"].as_array().map(|c| c.iter().collect()).unwrap_or_else(Vec::new))
            .collect();
        prop_assert!(sent.iter().all(|m| m["content"].as_array().is_some_and(|c| !c.is_empty())));
        let count = |kind: &str| blocks.iter().filter(|b| b["type"] == kind).count();
        let sends = |message: &Message| match message {
            Message::System { .. } => None,
            Message::Assistant { content, reasoning, tool_calls, reasoning_signature, .. } => {
                let signed = thinking && reasoning_signature.is_some() && !reasoning.is_empty();
                (!content.trim().is_empty() || !tool_calls.is_empty() || signed).then_some("assistant")
            }
            _ => Some("user"),
        };
        let opened = messages.iter().find_map(sends) == Some("assistant");
        let mut want = [usize::from(opened), 0, 0, 0];
        for message in &messages {
            match message {
                Message::User { .. } => want[0] += 1,
                Message::Assistant { content, reasoning, tool_calls, reasoning_signature, .. } => {
                    want[0] += usize::from(!content.trim().is_empty());
                    want[1] += usize::from(thinking && reasoning_signature.is_some() && !reasoning.is_empty());
                    want[2] += tool_calls.len();
                }
                Message::Tool { .. } => want[3] += 1,
                Message::System { .. } => {}
            }
        }
        prop_assert_eq!([count("text"), count("thinking"), count("tool_use"), count("tool_result")], want);
        prop_assert!(blocks.iter().filter(|b| b["type"] == "tool_use").all(|b| b["input"].is_object()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever the conversation, OpenAI's request carries one message for each of its own, in
    /// order and with its role: a user's or system message's text, an assistant's text (`null`
    /// when it is empty and the reply calls tools) and its calls, a tool result's call id and
    /// text.
    #[test]
    fn openai_requests_carry_each_message_with_its_role(
        messages in prop::collection::vec(message(), 0..12),
    ) {
        let mut request = request();
        request.system = None;
        request.messages = messages.clone().into();
        let sent = sent_messages(Provider::OpenAi, request);
        prop_assert_eq!(sent.len(), messages.len());
        for (message, sent) in messages.iter().zip(&sent) {
            prop_assert_eq!(sent["role"].as_str(), Some(message.role()));
            match message {
                Message::Assistant { content, tool_calls, .. } => {
                    let calls = sent["tool_calls"].as_array().map_or(0, Vec::len);
                    prop_assert_eq!(calls, tool_calls.len());
                    if content.is_empty() && !tool_calls.is_empty() {
                        prop_assert!(sent["content"].is_null(), "{}", sent);
                    } else {
                        prop_assert_eq!(sent["content"].as_str(), Some(content.as_str()));
                    }
                }
                Message::Tool { call_id, content, .. } => {
                    prop_assert_eq!(sent["tool_call_id"].as_str(), Some(call_id.as_str()));
                    prop_assert_eq!(sent["content"].as_str(), Some(content.as_str()));
                }
                other => prop_assert_eq!(sent["content"].as_str(), Some(other.text())),
            }
        }
    }
}
