//! The Anthropic Messages client over real sockets: the in-process test server replays streams
//! in Anthropic's exact event format (split at arbitrary byte boundaries), scripted error
//! statuses and broken streams, and records what the client sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Reply, TestServer};
use agent_core::{
    AgentBuilder, CallSettings, Chunk, ChunkContext, FinishReason, FnTool, Hook, Message, Model,
    ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelStream, OutputSchema, ToolCall,
    ToolChoice, ToolError, ToolSpec, TurnConfig, Usage, event,
};
use agent_providers::{Anthropic, HttpSettings};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-test-secret-0123456789";

/// Small timeouts and near-zero backoff: the tests never wait on a clock.
fn settings(max_retries: u32) -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(5),
        first_byte_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..HttpSettings::default()
    }
}

fn client(server: &TestServer, max_retries: u32) -> Anthropic {
    Anthropic::new(KEY)
        .base_url(&server.url)
        .settings(settings(max_retries))
}

async fn collect(mut stream: ModelStream) -> Vec<Result<ModelEvent, ModelError>> {
    let mut items = Vec::new();
    while let Some(item) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
        items.push(item);
    }
    items
}

/// The events of a stream that must succeed.
async fn events(model: &Anthropic, request: ModelRequest) -> Vec<ModelEvent> {
    collect(model.stream(request))
        .await
        .into_iter()
        .map(|item| item.unwrap_or_else(|error| panic!("unexpected error: {error:?}")))
        .collect()
}

/// The error a stream must end with.
async fn error(model: &Anthropic, request: ModelRequest) -> (Vec<ModelEvent>, ModelError) {
    let mut items = collect(model.stream(request)).await;
    let last = items.pop().expect("the stream yields something");
    let error = last.expect_err("the stream ends in an error");
    let events = items
        .into_iter()
        .map(|item| item.expect("only the last item is an error"))
        .collect();
    (events, error)
}

fn text_of(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn user(text: &str) -> ModelRequest {
    {
        let mut req = ModelRequest::default();
        req.messages = vec![Message::user(text)].into();
        req
    }
}

/// One SSE event as Anthropic writes it.
fn sse(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("message").to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start(input_tokens: u64) -> String {
    sse(json!({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}
    }}))
}

fn text_block(index: u32, pieces: &[&str]) -> String {
    let mut out = sse(
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    );
    for piece in pieces {
        out += &sse(
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
        );
    }
    out + &sse(json!({"type": "content_block_stop", "index": index}))
}

fn tool_block(index: u32, id: &str, name: &str, pieces: &[&str]) -> String {
    let mut out = sse(json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
    for piece in pieces {
        out += &sse(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "input_json_delta", "partial_json": piece}}));
    }
    out + &sse(json!({"type": "content_block_stop", "index": index}))
}

fn message_end(stop_reason: &str, output_tokens: u64) -> String {
    sse(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": output_tokens}}),
    ) + &sse(json!({"type": "message_stop"}))
}

/// A whole stream answering with this text.
fn text_stream(text: &str) -> String {
    message_start(10) + &text_block(0, &[text]) + &message_end("end_turn", 5)
}

/// A stream in Anthropic's exact wire format, byte for byte as the API writes it: usage with
/// cache counts, a ping, a thinking block with its signature, a text block, and two tool calls
/// whose arguments stream in pieces (the first piece empty, as the API sends it), with
/// multi-byte characters everywhere.
const FULL_STREAM: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":10,"cache_read_input_tokens":30,"output_tokens":1}}}

event: ping
data: {"type": "ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The weather in Zürich, é"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" then the time 🦀."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me check 🦀"}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" — café \"au lait\".\n"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Zü"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"rich\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_02","name":"get_time","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"tz\""}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":": \"Europe/"}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"Zurich\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"#;

fn full_stream_events() -> Vec<ModelEvent> {
    let usage = |output_tokens| Usage {
        input_tokens: 160,
        output_tokens,
        reasoning_tokens: 0,
        cached_input_tokens: 30,
    };
    let start = |id: &str, name: &str| ModelEvent::ToolCallStart {
        id: id.into(),
        name: name.into(),
    };
    let input = |id: &str, delta: &str| ModelEvent::ToolInputDelta {
        id: id.into(),
        delta: delta.into(),
    };
    vec![
        ModelEvent::Usage(usage(1)),
        ModelEvent::ReasoningDelta("The weather in Zürich, é".into()),
        ModelEvent::ReasoningDelta(" then the time 🦀.".into()),
        ModelEvent::ReasoningSignature(
            "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".to_owned(),
        ),
        ModelEvent::TextDelta("Let me check 🦀".into()),
        ModelEvent::TextDelta(" — café \"au lait\".\n".into()),
        start("toolu_01", "get_weather"),
        input("toolu_01", "{\"city\": \"Zü"),
        input("toolu_01", "rich\"}"),
        ModelEvent::ToolCall(ToolCall {
            id: "toolu_01".into(),
            name: "get_weather".into(),
            arguments: "{\"city\": \"Zürich\"}".into(),
            metadata: None,
        }),
        start("toolu_02", "get_time"),
        input("toolu_02", "{\"tz\""),
        input("toolu_02", ": \"Europe/"),
        input("toolu_02", "Zurich\"}"),
        ModelEvent::ToolCall(ToolCall {
            id: "toolu_02".into(),
            name: "get_time".into(),
            arguments: "{\"tz\": \"Europe/Zurich\"}".into(),
            metadata: None,
        }),
        ModelEvent::Usage(usage(89)),
        ModelEvent::Finish(FinishReason::ToolCalls),
    ]
}

#[tokio::test]
async fn a_stream_decodes_the_same_however_its_bytes_are_split() {
    // Small sizes cut multi-byte characters ("ü", "é", "—", "🦀") in two; larger ones cut events.
    let cuts_a_character = |size: usize| {
        FULL_STREAM
            .char_indices()
            .any(|(at, c)| (at + 1..at + c.len_utf8()).any(|inside| inside % size == 0))
    };
    for size in [1, 2, 3, 7, 13] {
        assert!(cuts_a_character(size), "{size}");
    }
    let expected = full_stream_events();
    for size in [1, 2, 3, 7, 13, 64, 1000, FULL_STREAM.len()] {
        let server = TestServer::start([Reply::sse_split(FULL_STREAM, size)]).await;
        let got = events(&client(&server, 0), user("Weather and time in Zürich?")).await;
        assert_eq!(got, expected, "split into pieces of {size} bytes");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn the_request_carries_the_conversation_in_anthropic_form() {
    let server = TestServer::start([Reply::sse_split(&text_stream("ok"), 64)]).await;
    let weather = ToolSpec {
        name: "get_weather".to_owned(),
        description: "The weather of a city.".to_owned(),
        parameters: json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"$ref": "#/$defs/Unit"}},
            "required": ["city"],
            "additionalProperties": false,
            "$defs": {"Unit": {"enum": ["c", "f"]}}
        }),
    };
    let time = ToolSpec {
        name: "get_time".to_owned(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    };
    let request = {
        let mut req = ModelRequest::default();
        req.system = Some("Be brief.".to_owned());
        req.messages = vec![
            Message::system("Answer in French."),
            Message::user("Weather and time in Paris?"),
            Message::Assistant {
                content: "Checking.".into(),
                reasoning: "Two tools.".into(),
                tool_calls: vec![
                    ToolCall {
                        id: "toolu_1".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"city":"Paris"}"#.into(),
                        metadata: None,
                    },
                    ToolCall {
                        id: "toolu_2".into(),
                        name: "get_time".into(),
                        arguments: "{not json".into(),
                        metadata: None,
                    },
                ]
                .into(),
                // With thinking on, the signed reasoning goes back before the tool calls.
                reasoning_signature: Some("sig-1".to_owned()),
                provider_blocks: Vec::new(),
            },
            Message::Tool {
                call_id: "toolu_1".into(),
                name: "get_weather".into(),
                content: "sunny".into(),
                is_error: false,
            },
            Message::Tool {
                call_id: "toolu_2".into(),
                name: "get_time".into(),
                content: "invalid arguments".into(),
                is_error: true,
            },
            Message::user("And tomorrow?"),
        ]
        .into();
        req.tools = vec![Arc::new(weather), Arc::new(time)];
        req.tool_choice = ToolChoice::Required;
        req.settings = CallSettings {
            temperature: Some(0.5),
            max_output_tokens: None,
            top_p: Some(0.9),
            stop_sequences: Some(vec!["END".to_owned()]),
            seed: Some(7),
        };
        req.provider_options = json!({"thinking": {"type": "enabled", "budget_tokens": 1024}, "metadata": {"user_id": "u-1"}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        req
    };
    let got = events(&client(&server, 0), request).await;
    assert_eq!(text_of(&got), "ok");

    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.json(),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "Be brief.\n\nAnswer in French.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather and time in Paris?"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Two tools.", "signature": "sig-1"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "invalid arguments", "is_error": true},
                    {"type": "text", "text": "And tomorrow?"}
                ]}
            ],
            "tools": [
                {"name": "get_weather", "description": "The weather of a city.", "input_schema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "unit": {"$ref": "#/$defs/Unit"}},
                    "required": ["city"],
                    "additionalProperties": false,
                    "$defs": {"Unit": {"enum": ["c", "f"]}}
                }},
                {"name": "get_time", "input_schema": {"type": "object"}}
            ],
            // Extended thinking forbids `any`: the required call is left to the model.
            "tool_choice": {"type": "auto"},
            "temperature": 0.5,
            "top_p": 0.9,
            "stop_sequences": ["END"],
            "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "metadata": {"user_id": "u-1"}
        })
    );
}

/// With thinking off, signed reasoning is not sent back; a reply that then sends nothing is
/// left out, and the user messages around it become one message (roles must alternate).
#[tokio::test]
async fn without_thinking_signed_reasoning_stays_home_and_an_empty_reply_sends_nothing() {
    let server = TestServer::start([Reply::sse_split(&text_stream("ok"), 64)]).await;
    let reply = |content: &str| Message::Assistant {
        content: content.into(),
        reasoning: "Thought.".into(),
        tool_calls: Arc::default(),
        reasoning_signature: Some("sig".to_owned()),
        provider_blocks: Vec::new(),
    };
    let mut request = ModelRequest::default();
    request.messages = vec![
        Message::user("a"),
        reply(""),
        Message::user("b"),
        reply("x"),
        Message::user(""),
    ]
    .into();
    let got = events(&client(&server, 0), request).await;
    assert_eq!(text_of(&got), "ok");
    assert_eq!(
        server.requests()[0].json()["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
            {"role": "user", "content": [{"type": "text", "text": ""}]}
        ])
    );
}

#[tokio::test]
async fn tool_choices_limits_models_and_option_overrides() {
    let tools = vec![
        Arc::new(ToolSpec {
            name: "get_weather".to_owned(),
            description: "Weather.".to_owned(),
            parameters: json!({"type": "object"}),
        }),
        Arc::new(ToolSpec {
            name: "get_time".to_owned(),
            description: "Time.".to_owned(),
            parameters: json!({"type": "object"}),
        }),
    ];
    let with = |choice: ToolChoice| {
        let mut req = user("hi");
        req.tools = tools.clone();
        req.tool_choice = choice;
        req
    };
    let options = json!({"max_tokens": 100, "stream": false, "temperature": 1.0})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let cases: Vec<(ModelRequest, Value)> = vec![
        (with(ToolChoice::Auto), json!({"type": "auto"})),
        (with(ToolChoice::None), json!({"type": "none"})),
        (with(ToolChoice::Required), json!({"type": "any"})),
        (
            with(ToolChoice::Tool("get_time".to_owned())),
            json!({"type": "tool", "name": "get_time"}),
        ),
        // No tools: neither `tools` nor `tool_choice` is sent.
        (
            {
                let mut req = user("hi");
                req.tool_choice = ToolChoice::Required;
                req
            },
            Value::Null,
        ),
        (
            {
                let mut req = user("hi");
                req.model = "claude-opus-4-1".to_owned();
                req.settings = CallSettings {
                    max_output_tokens: Some(256),
                    temperature: Some(0.2),
                    ..CallSettings::default()
                };
                req
            },
            Value::Null,
        ),
        (
            {
                let mut req = user("hi");
                req.provider_options = options;
                req.settings = CallSettings {
                    temperature: Some(0.2),
                    ..CallSettings::default()
                };
                req
            },
            Value::Null,
        ),
    ];
    let server = TestServer::start(
        cases
            .iter()
            .map(|_| Reply::sse_split(&text_stream("ok"), 50)),
    )
    .await;
    let model = client(&server, 0)
        .model("claude-haiku-4-5")
        .max_tokens(1000);
    assert_eq!(model.id(), "claude-haiku-4-5");
    for (request, _) in &cases {
        assert_eq!(text_of(&events(&model, request.clone()).await), "ok");
    }
    let sent = server.requests();
    for (index, (_, choice)) in cases.iter().enumerate() {
        assert_eq!(sent[index].json()["tool_choice"], *choice, "case {index}");
    }
    let bodies: Vec<Value> = sent.iter().map(|request| request.json()).collect();
    assert_eq!(bodies[0]["tools"].as_array().map(Vec::len), Some(2));
    assert_eq!(bodies[4].get("tools"), None);
    assert_eq!(bodies[0]["model"], "claude-haiku-4-5");
    assert_eq!(bodies[0]["max_tokens"], 1000);
    assert_eq!(bodies[0].get("temperature"), None);
    assert_eq!(bodies[5]["model"], "claude-opus-4-1");
    assert_eq!(bodies[5]["max_tokens"], 256);
    assert_eq!(bodies[5]["temperature"], 0.2);
    // Provider options win over the fields built from the request, without duplicate keys,
    // except `stream`, which the client needs.
    assert_eq!(bodies[6]["max_tokens"], 100);
    assert_eq!(bodies[6]["temperature"], 1.0);
    assert_eq!(bodies[6]["stream"], true);
    for key in ["\"max_tokens\"", "\"temperature\"", "\"stream\""] {
        assert_eq!(
            sent[6].body.matches(key).count(),
            1,
            "{key} in {}",
            sent[6].body
        );
    }
}

#[tokio::test]
async fn a_base_url_ending_in_v1_is_not_doubled() {
    let server = TestServer::start([Reply::sse_split(&text_stream("ok"), 64)]).await;
    let model = Anthropic::new(KEY)
        .base_url(format!("{}/v1/", server.url))
        .settings(settings(0));
    assert_eq!(text_of(&events(&model, user("hi")).await), "ok");
    assert_eq!(server.requests()[0].path, "/v1/messages");
}

fn report_schema() -> OutputSchema {
    OutputSchema {
        name: "weather_report".to_owned(),
        schema: json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"city": {"type": "string"}, "temp_c": {"type": "integer"}},
            "required": ["city", "temp_c"]
        })
        .into(),
    }
}

/// The answer tool's call, streamed in pieces.
fn answer_stream() -> String {
    message_start(40)
        + &tool_block(
            0,
            "toolu_answer",
            "weather_report",
            &["", "{\"city\": \"Pa", "ris\", \"temp_c\"", ": 21}"],
        )
        + &message_end("tool_use", 20)
}

#[tokio::test]
async fn structured_output_goes_through_a_forced_tool_and_comes_back_as_text() {
    let server = TestServer::start([Reply::sse_split(&answer_stream(), 5)]).await;
    let agent = AgentBuilder::new("reporter")
        .model(client(&server, 0))
        .hook(Hook::<event::BeforeTurn>::sync("structured", |_ctx| {
            Some({
                let mut cfg = TurnConfig::default();
                cfg.output_schema = Some(report_schema());
                cfg
            })
        }))
        .build()
        .expect("the agent builds");
    let result = agent.run("Weather in Paris?").await;
    assert!(result.is_completed(), "{:?}", result.error);
    assert_eq!(result.text, r#"{"city": "Paris", "temp_c": 21}"#);
    assert_eq!(result.steps.len(), 1);
    assert!(result.steps[0].tool_calls.is_empty());
    assert_eq!(result.steps[0].finish_reason, FinishReason::Stop);
    let answer: Value = serde_json::from_str(&result.text).expect("the answer is JSON");
    assert_eq!(answer, json!({"city": "Paris", "temp_c": 21}));

    let body = server.requests()[0].json();
    assert_eq!(
        body["tools"],
        json!([{
            "name": "weather_report",
            "description": "Gives the final answer: this tool's input is the answer.",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "temp_c": {"type": "integer"}},
                "required": ["city", "temp_c"]
            }
        }])
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "weather_report"})
    );
}

#[tokio::test]
async fn structured_output_with_other_tools_lets_the_model_call_them_first() {
    let stream = message_start(40)
        + &tool_block(0, "toolu_w", "get_weather", &["{\"city\": \"Paris\"}"])
        + &message_end("tool_use", 20);
    let server = TestServer::start([
        Reply::sse_split(&stream, 64),
        Reply::sse_split(&answer_stream(), 64),
    ])
    .await;
    let model = client(&server, 0);
    let tools = vec![Arc::new(ToolSpec {
        name: "get_weather".to_owned(),
        description: "Weather.".to_owned(),
        parameters: json!({"type": "object"}),
    })];
    let request = {
        let mut req = user("Weather in Paris?");
        req.tools = tools;
        req.output_schema = Some(report_schema());
        req
    };
    let first = events(&model, request.clone()).await;
    assert!(first.contains(&ModelEvent::ToolCall(ToolCall {
        id: "toolu_w".into(),
        name: "get_weather".into(),
        arguments: "{\"city\": \"Paris\"}".into(),
        metadata: None,
    })));
    assert_eq!(
        first.last(),
        Some(&ModelEvent::Finish(FinishReason::ToolCalls))
    );
    let second = events(&model, request).await;
    assert_eq!(text_of(&second), r#"{"city": "Paris", "temp_c": 21}"#);
    assert!(!second.iter().any(|event| matches!(
        event,
        ModelEvent::ToolCall(_) | ModelEvent::ToolInputDelta { .. }
    )));
    assert_eq!(second.last(), Some(&ModelEvent::Finish(FinishReason::Stop)));

    let body = server.requests()[0].json();
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    let names: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, ["get_weather", "weather_report"]);
}

#[tokio::test]
async fn structured_output_tool_choice_follows_the_request() {
    let tools = vec![Arc::new(ToolSpec {
        name: "get_weather".to_owned(),
        description: "Weather.".to_owned(),
        parameters: json!({"type": "object"}),
    })];
    let structured = |tool_choice: ToolChoice, options: Value| {
        let mut req = user("Weather in Paris?");
        req.tools = tools.clone();
        req.tool_choice = tool_choice;
        req.output_schema = Some(report_schema());
        req.provider_options = options.as_object().cloned().unwrap_or_default();
        req
    };
    let thinking = json!({"thinking": {"type": "enabled", "budget_tokens": 2048}});
    let cases = [
        // The model may not call tools: only the answer is left, but the tools stay listed.
        (
            structured(ToolChoice::None, json!({})),
            json!({"type": "tool", "name": "weather_report"}),
        ),
        (
            structured(ToolChoice::Required, json!({})),
            json!({"type": "any"}),
        ),
        (
            structured(ToolChoice::Tool("get_weather".to_owned()), json!({})),
            json!({"type": "tool", "name": "get_weather"}),
        ),
        // Extended thinking forbids forcing a tool.
        (
            structured(ToolChoice::Auto, thinking),
            json!({"type": "auto"}),
        ),
    ];
    let server =
        TestServer::start(cases.iter().map(|_| Reply::sse_split(&answer_stream(), 64))).await;
    let model = client(&server, 0);
    for (request, _) in &cases {
        assert_eq!(
            text_of(&events(&model, request.clone()).await),
            r#"{"city": "Paris", "temp_c": 21}"#
        );
    }
    for (sent, (_, choice)) in server.requests().iter().zip(&cases) {
        let body = sent.json();
        assert_eq!(body["tool_choice"], *choice);
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(2));
    }
    // The answer's name may not be taken by a tool.
    let clash = {
        let mut req = structured(ToolChoice::Auto, json!({}));
        req.output_schema = Some(OutputSchema {
            name: "get_weather".to_owned(),
            schema: json!({"type": "object"}).into(),
        });
        req
    };
    let (_, error) = error(&model, clash).await;
    assert_eq!(error.kind, ModelErrorKind::BadRequest, "{error}");
    assert_eq!(server.requests().len(), cases.len());
}

#[tokio::test]
async fn stop_reasons_map_to_finish_reasons() {
    let cases = [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("refusal", FinishReason::ContentFilter),
        ("pause_turn", FinishReason::Other("pause_turn".to_owned())),
    ];
    let streams: Vec<Reply> = cases
        .iter()
        .map(|(reason, _)| {
            Reply::sse_split(
                &(message_start(3) + &text_block(0, &["x"]) + &message_end(reason, 1)),
                64,
            )
        })
        .collect();
    let server = TestServer::start(streams).await;
    let model = client(&server, 0);
    for (reason, finish) in cases {
        let got = events(&model, user("hi")).await;
        assert_eq!(got.last(), Some(&ModelEvent::Finish(finish)), "{reason}");
    }
}

#[tokio::test]
async fn a_stream_without_message_stop_is_retried_then_truncated() {
    let cut = message_start(10) + &text_block(0, &["Hello"]);
    let server = TestServer::start((0..3).map(|_| Reply::sse_split(&cut, 16))).await;
    let (events, error) = error(&client(&server, 2), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::StreamTruncated, "{error}");
    assert_eq!(server.requests().len(), 3);
    let discards = events
        .iter()
        .filter(|event| matches!(event, ModelEvent::Discard { .. }))
        .count();
    assert_eq!(discards, 2, "each retried attempt is discarded: {events:?}");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ModelEvent::Finish(_)))
    );
}

#[tokio::test]
async fn an_overload_inside_the_stream_is_retried_and_observers_see_the_discard() {
    let overloaded = message_start(10)
        + &sse(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )
        + &sse(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Partial"}}),
        )
        + &sse(
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
    let server = TestServer::start([
        Reply::sse_split(&overloaded, 7),
        Reply::sse_split(&text_stream("Whole answer."), 7),
    ])
    .await;
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let seen = chunks.clone();
    let agent = AgentBuilder::new("retrying")
        .model(client(&server, 2))
        .hook(Hook::<event::OnChunk>::sync(
            "record",
            move |ctx: &ChunkContext| {
                seen.lock().expect("not poisoned").push(ctx.chunk.clone());
            },
        ))
        .build()
        .expect("the agent builds");
    let result = agent.run("hi").await;
    assert!(result.is_completed(), "{:?}", result.error);
    assert_eq!(result.text, "Whole answer.");
    assert_eq!(server.requests().len(), 2);
    let chunks = chunks.lock().expect("not poisoned").clone();
    assert_eq!(chunks.len(), 3, "{chunks:?}");
    assert_eq!(chunks[0], Chunk::TextDelta("Partial".into()));
    assert!(
        matches!(&chunks[1], Chunk::Discarded { reason } if reason.contains("overloaded_error")),
        "{:?}",
        chunks[1]
    );
    assert_eq!(chunks[2], Chunk::TextDelta("Whole answer.".into()));
}

#[tokio::test]
async fn errors_inside_the_stream_get_the_kind_their_type_says() {
    let in_stream = |kind: &str, message: &str| {
        message_start(10)
            + &sse(json!({"type": "error", "error": {"type": kind, "message": message}}))
    };
    let server = TestServer::start([
        Reply::sse_split(
            &in_stream(
                "rate_limit_error",
                "Number of request tokens has exceeded your rate limit",
            ),
            64,
        ),
        Reply::sse_split(
            &in_stream(
                "invalid_request_error",
                "prompt is too long: 210000 tokens > 200000 maximum",
            ),
            64,
        ),
        Reply::sse_split(
            &in_stream("api_error", &format!("internal error for key {KEY}")),
            64,
        ),
    ])
    .await;
    // Retries would be allowed: a context overflow is not retried.
    let (_, error1) = error(&client(&server, 0), user("hi")).await;
    assert_eq!(error1.kind, ModelErrorKind::RateLimited, "{error1}");
    let (_, error2) = error(&client(&server, 2), user("hi")).await;
    assert_eq!(error2.kind, ModelErrorKind::ContextOverflow, "{error2}");
    assert!(error2.message.contains("prompt is too long"), "{error2}");
    assert_eq!(server.requests().len(), 2);
    let (_, error3) = error(&client(&server, 0), user("hi")).await;
    assert_eq!(error3.kind, ModelErrorKind::Server, "{error3}");
    assert!(!error3.message.contains(KEY), "{error3}");
}

#[tokio::test]
async fn invalid_json_in_a_data_line_is_malformed() {
    let broken = message_start(10)
        + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\n\n";
    let server = TestServer::start([Reply::sse_split(&broken, 64)]).await;
    let (_, error) = error(&client(&server, 0), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::StreamMalformed, "{error}");
    assert_eq!(server.requests().len(), 1);
}

/// A delta's text, thinking and tool input are one field (a delta carries one of them): a delta
/// carrying two is malformed, as a key given twice is.
#[tokio::test]
async fn a_delta_carrying_two_pieces_of_text_is_malformed() {
    let broken = message_start(10)
        + &text_block(0, &["Hello"])
        + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\",\"partial_json\":\"b\"}}\n\n";
    let server = TestServer::start([Reply::sse_split(&broken, 64)]).await;
    let (_, error) = error(&client(&server, 0), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::StreamMalformed, "{error}");
    assert!(error.message.contains("duplicate field"), "{error}");
}

/// A block started again while open would drop what it gathered (here a tool call's
/// arguments): malformed, not a shorter answer.
#[tokio::test]
async fn a_block_started_twice_while_open_is_malformed() {
    let start = sse(json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}));
    let piece = sse(json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": "{\"city\":\"Oslo\"}"}}));
    let broken = message_start(10) + &start + &piece + &text_block(0, &["Hello"]);
    let server = TestServer::start([Reply::sse_split(&broken, 64)]).await;
    let (_, error) = error(&client(&server, 0), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::StreamMalformed, "{error}");
    assert!(error.message.contains("already open"), "{error}");
}

/// A client tool call without its name or id, streamed or whole in `message_start`, is
/// malformed: no tool could run it, no result could answer it, and Anthropic would refuse it in
/// the next request's history.
#[tokio::test]
async fn a_tool_use_block_without_its_name_or_id_is_malformed() {
    let stop = sse(json!({"type": "content_block_stop", "index": 0}))
        + &sse(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}))
        + &sse(json!({"type": "message_stop"}));
    for block in [
        json!({"type": "tool_use", "id": "toolu_1", "input": {}}),
        json!({"type": "tool_use", "id": "toolu_1", "name": "", "input": {}}),
        json!({"type": "tool_use", "name": "weather", "input": {}}),
        json!({"type": "tool_use", "id": "", "name": "weather", "input": {}}),
    ] {
        let start = sse(json!({"type": "content_block_start", "index": 0, "content_block": block}));
        let broken = message_start(10) + &start + &stop;
        let whole = sse(json!({"type": "message_start", "message": {"id": "msg_1",
            "usage": {"input_tokens": 10}, "content": [block]}}))
            + &sse(json!({"type": "message_stop"}));
        for body in [broken, whole] {
            let server = TestServer::start([Reply::sse_split(&body, 64)]).await;
            let (_, error) = error(&client(&server, 0), user("hi")).await;
            assert_eq!(
                error.kind,
                ModelErrorKind::StreamMalformed,
                "{block}: {error}"
            );
            assert!(
                error
                    .message
                    .contains("tool_use block without its name or id"),
                "{error}"
            );
        }
    }
}

/// A delta for a block that is not open (never started, or stopped) is a stream that lost a
/// frame: malformed, whatever the delta's kind, not text put in the wrong place.
#[tokio::test]
async fn a_delta_for_a_block_that_is_not_open_is_malformed() {
    let stray = |kind: &str, field: &str| {
        sse(json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": kind, field: "lost"}}))
    };
    for delta in [
        stray("text_delta", "text"),
        stray("thinking_delta", "thinking"),
        stray("input_json_delta", "partial_json"),
    ] {
        // Block 0 started and stopped; block 1 never started.
        let broken = message_start(10) + &text_block(0, &["Hello"]) + &delta;
        let server = TestServer::start([Reply::sse_split(&broken, 64)]).await;
        let (_, error) = error(&client(&server, 0), user("hi")).await;
        assert_eq!(error.kind, ModelErrorKind::StreamMalformed, "{error}");
        assert!(
            error.message.contains("block 1, which is not open"),
            "{error}"
        );
    }
    // A delta for block 0 after its stop is as stray.
    let late = sse(json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": " again"}}));
    let broken = message_start(10) + &text_block(0, &["Hello"]) + &late;
    let server = TestServer::start([Reply::sse_split(&broken, 64)]).await;
    let (_, error) = error(&client(&server, 0), user("hi")).await;
    assert!(
        error.message.contains("block 0, which is not open"),
        "{error}"
    );
}

/// A stream that lost its beginning (a `message_stop` with no `message_start`) is malformed, not
/// a complete empty answer.
#[tokio::test]
async fn a_stop_without_its_start_is_malformed() {
    let broken = text_block(0, &["Hello"]) + &sse(json!({"type": "message_stop"}));
    let server = TestServer::start([Reply::sse_split(&broken, 64)]).await;
    let (_, error) = error(&client(&server, 0), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::StreamMalformed, "{error}");
    assert!(error.message.contains("without a message_start"), "{error}");
}

/// Frames are read by hand: as a derived reader did, a key given twice is malformed, a frame
/// needs its type, and keys and types this client does not read are skipped.
#[tokio::test]
async fn frames_with_repeated_keys_or_no_type_are_malformed_and_unknown_keys_are_skipped() {
    let frame = |data: &str| format!("event: content_block_delta\ndata: {data}\n\n");
    let broken = [
        (
            r#"{"type":"content_block_delta","type":"ping","index":0,"delta":{"type":"text_delta","text":"a"}}"#,
            "duplicate field `type`",
        ),
        (
            r#"{"type":"content_block_delta","index":0,"index":1,"delta":{"type":"text_delta","text":"a"}}"#,
            "duplicate field `index`",
        ),
        (
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"},"delta":null}"#,
            "duplicate field `delta`",
        ),
        (
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","type":"text_delta","text":"a"}}"#,
            "duplicate field `type`",
        ),
        (
            r#"{"index":0,"delta":{"type":"text_delta","text":"a"}}"#,
            "an event without its type",
        ),
        (
            r#"{"type":7,"index":0,"delta":{"type":"text_delta","text":"a"}}"#,
            "expected a string",
        ),
        (r#"["content_block_delta",0]"#, "expected an event object"),
    ];
    for (data, says) in broken {
        let stream = message_start(10) + &text_block(0, &["Hello"]) + &frame(data);
        let server = TestServer::start([Reply::sse_split(&stream, 64)]).await;
        let (_, error) = error(&client(&server, 0), user("hi")).await;
        assert_eq!(
            error.kind,
            ModelErrorKind::StreamMalformed,
            "{data}: {error}"
        );
        assert!(error.message.contains(says), "{data}: {error}");
    }
    // Unknown keys (of any JSON type) and frame types are skipped; a `null` delta is none.
    let stream = message_start(10)
        + &frame(
            r#"{"type":"content_block_start","extra":{"a":[1,{"b":null}]},"index":0,"content_block":{"type":"text","text":""}}"#,
        )
        + &frame(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","new":[true],"text":"Hi"},"more":"x"}"#,
        )
        + &frame(r#"{"type":"future_event","index":0,"delta":{"type":"novel"}}"#)
        + &frame(r#"{"type":"ping","delta":null}"#)
        + &frame(r#"{"type":"content_block_stop","index":0}"#)
        + &message_end("end_turn", 5);
    let server = TestServer::start([Reply::sse_split(&stream, 64)]).await;
    let got = events(&client(&server, 0), user("hi")).await;
    assert_eq!(text_of(&got), "Hi");
    assert!(
        matches!(got.last(), Some(ModelEvent::Finish(FinishReason::Stop))),
        "{got:?}"
    );
}

#[tokio::test]
async fn an_overloaded_529_is_retried() {
    let server = TestServer::start([
        Reply::status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        Reply::sse_split(&text_stream("Recovered."), 64),
    ])
    .await;
    let got = events(&client(&server, 2), user("hi")).await;
    assert_eq!(text_of(&got), "Recovered.");
    assert!(
        !got.iter()
            .any(|event| matches!(event, ModelEvent::Discard { .. })),
        "nothing streamed before: {got:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_401_is_not_retried_and_the_echoed_key_is_redacted() {
    let body = format!(
        r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key: {KEY}"}}}}"#
    );
    let server = TestServer::start([Reply::status(401, &body)]).await;
    let (_, error) = error(&client(&server, 2), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::Authentication, "{error}");
    assert_eq!(error.status, Some(401));
    assert_eq!(server.requests().len(), 1);
    assert!(
        error.message.contains("authentication_error"),
        "the provider's body is kept: {error}"
    );
    assert!(!error.message.contains(KEY), "{error}");
    assert!(!format!("{error:?}").contains(KEY));
}

#[tokio::test]
async fn a_context_overflow_400_is_typed() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    let server = TestServer::start([Reply::status(400, body)]).await;
    let (_, error) = error(&client(&server, 2), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::ContextOverflow, "{error}");
    assert_eq!(error.status, Some(400));
    assert!(
        error.message.contains("210000 tokens > 200000 maximum"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_agent_turn_calls_a_tool_and_answers() {
    let first = message_start(50)
        + &text_block(0, &["Let me add."])
        + &tool_block(1, "toolu_add", "add", &["", "{\"a\": 2", ", \"b\": 3}"])
        + &message_end("tool_use", 30);
    let second =
        message_start(90) + &text_block(0, &["The sum ", "is 5."]) + &message_end("end_turn", 6);
    let server =
        TestServer::start([Reply::sse_split(&first, 11), Reply::sse_split(&second, 11)]).await;
    let add = FnTool::new(
        "add",
        "Adds two integers.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
        |args, _ctx| async move {
            let a = args["a"]
                .as_i64()
                .ok_or_else(|| ToolError::new("a is not an integer"))?;
            let b = args["b"]
                .as_i64()
                .ok_or_else(|| ToolError::new("b is not an integer"))?;
            Ok(json!(a + b))
        },
    );
    let agent = AgentBuilder::new("adder")
        .instructions("You add numbers.")
        .model(client(&server, 0))
        .dyn_tool(add)
        .build()
        .expect("the agent builds");
    let result = agent.run("What is 2 + 3?").await;
    assert!(result.is_completed(), "{:?}", result.error);
    assert_eq!(result.text, "The sum is 5.");
    assert_eq!(result.steps.len(), 2);
    assert_eq!(result.steps[0].finish_reason, FinishReason::ToolCalls);
    assert_eq!(result.steps[1].finish_reason, FinishReason::Stop);
    assert_eq!(result.usage.input_tokens, 140);
    assert_eq!(result.usage.output_tokens, 36);

    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    let first_body = sent[0].json();
    assert_eq!(first_body["system"], "You add numbers.");
    assert_eq!(first_body["tools"][0]["name"], "add");
    assert_eq!(first_body["tool_choice"], json!({"type": "auto"}));
    let second_body = sent[1].json();
    assert_eq!(second_body["system"], "You add numbers.");
    assert_eq!(
        second_body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is 2 + 3?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me add."},
                {"type": "tool_use", "id": "toolu_add", "name": "add", "input": {"a": 2, "b": 3}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_add", "content": "5"}]}
        ])
    );
}

#[tokio::test]
async fn an_echoed_key_is_redacted_from_discard_reasons_too() {
    let echo = message_start(10)
        + &text_block(0, &["Partial"])
        + &sse(
            json!({"type": "error", "error": {"type": "api_error", "message": format!("bad key {KEY}")}}),
        );
    let server =
        TestServer::start([Reply::sse_split(&echo, 64), Reply::sse_split(&echo, 64)]).await;
    let (events, error) = error(&client(&server, 1), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::Server, "{error}");
    let reasons: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::Discard { reason } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 1, "{events:?}");
    assert!(reasons[0].contains("[redacted]"), "{}", reasons[0]);
    assert!(!reasons[0].contains(KEY), "{}", reasons[0]);
    assert!(!error.message.contains(KEY), "{error}");
}

#[tokio::test]
async fn the_key_never_shows() {
    let server = TestServer::start([Reply::status(500, &format!("upstream rejected {KEY}"))]).await;
    let model = client(&server, 0);
    let debug = format!("{model:?}");
    assert!(!debug.contains(KEY), "{debug}");
    assert!(debug.contains("redacted"), "{debug}");
    assert!(debug.contains("claude-sonnet-4-5"), "{debug}");
    let (_, error) = error(&model, user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert!(!error.to_string().contains(KEY), "{error}");
    assert!(!format!("{error:?}").contains(KEY));
}

#[tokio::test]
async fn huge_usage_counts_saturate_instead_of_overflowing() {
    let start = sse(json!({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": null, "stop_sequence": null, "usage": {
            "input_tokens": u64::MAX, "cache_creation_input_tokens": u64::MAX,
            "cache_read_input_tokens": 7, "output_tokens": 1}
    }}));
    let body = start + &text_block(0, &["Hi"]) + &message_end("end_turn", u64::MAX);
    let server = TestServer::start([Reply::sse_split(&body, 64)]).await;
    let events = events(&client(&server, 0), user("hi")).await;
    let last_usage = events
        .iter()
        .rev()
        .find_map(|event| match event {
            ModelEvent::Usage(usage) => Some(*usage),
            _ => None,
        })
        .expect("usage");
    assert_eq!(last_usage.input_tokens, u64::MAX);
    assert_eq!(last_usage.cached_input_tokens, 7);
    assert_eq!(last_usage.output_tokens, u64::MAX);
    // Summed over steps by the engine, the total saturates too.
    let mut total = last_usage;
    total.add(&last_usage);
    assert_eq!(total.input_tokens, u64::MAX);
}

fn calls_of(events: &[ModelEvent]) -> Vec<ToolCall> {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_tool_use_block_that_starts_with_its_whole_input_keeps_it_and_its_caller() {
    // Programmatic tool calling: a server tool's code calls a client tool; the block arrives
    // whole, with no input_json_delta, and says who called it.
    let caller = json!({"type": "code_execution_20250825", "tool_id": "srvtoolu_1"});
    let body = message_start(10)
        + &sse(
            json!({"type": "content_block_start", "index": 0, "content_block": {
            "type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {}}}),
        )
        + &sse(json!({"type": "content_block_stop", "index": 0}))
        + &sse(
            json!({"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_1", "name": "rollDie",
            "input": {"player": "player1"}, "caller": caller}}),
        )
        + &sse(json!({"type": "content_block_stop", "index": 1}))
        + &message_end("tool_use", 5);
    let server = TestServer::start([Reply::sse_split(&body, 7)]).await;
    let events = events(&client(&server, 0), user("play")).await;
    let calls = calls_of(&events);
    assert_eq!(
        calls.len(),
        1,
        "the server tool is not a client call: {calls:?}"
    );
    assert_eq!(calls[0].name, "rollDie");
    assert_eq!(calls[0].arguments, r#"{"player":"player1"}"#);
    assert_eq!(calls[0].metadata, Some(json!({ "caller": caller })));
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finish(FinishReason::ToolCalls))
    );
}

#[tokio::test]
async fn blocks_inside_message_start_are_decoded_and_its_stop_reason_kept() {
    let body = sse(json!({"type": "message_start", "message": {
        "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_2", "name": "rollDie",
            "input": {"player": "player2"}, "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 0, "output_tokens": 0}}}))
        + &sse(json!({"type": "message_stop"}));
    let server = TestServer::start([Reply::sse_split(&body, 9)]).await;
    let events = events(&client(&server, 0), user("go on")).await;
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "toolu_2");
    assert_eq!(calls[0].arguments, r#"{"player":"player2"}"#);
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finish(FinishReason::ToolCalls))
    );
}

#[tokio::test]
async fn deltas_onto_an_empty_start_still_make_the_input() {
    let body = message_start(10)
        + &tool_block(0, "toolu_3", "add", &["{\"a\":", " 1}"])
        + &message_end("tool_use", 5);
    let server = TestServer::start([Reply::sse_split(&body, 5)]).await;
    let calls = calls_of(&events(&client(&server, 0), user("add")).await);
    assert_eq!(calls[0].arguments, r#"{"a": 1}"#);
    assert_eq!(calls[0].metadata, None);
}

#[tokio::test]
async fn a_second_message_start_inside_an_unfinished_message_is_malformed() {
    let second = sse(json!({"type": "message_start", "message": {
        "id": "msg_second", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 17, "output_tokens": 1}}}));
    let body = message_start(17)
        + &text_block(0, &["Hel"])
        + &second
        + &text_block(0, &["lo"])
        + &message_end("end_turn", 5);
    let server = TestServer::start([Reply::sse_split(&body, 13)]).await;
    let (events, error) = error(&client(&server, 0), user("hi")).await;
    assert_eq!(error.kind, ModelErrorKind::StreamMalformed);
    assert!(
        error.message.contains("msg_second") && error.message.contains("msg_01"),
        "{}",
        error.message
    );
    assert_eq!(text_of(&events), "Hel");
}

#[tokio::test]
async fn server_tool_blocks_are_kept_on_the_reply_and_sent_back_next_turn() {
    let use_block =
        json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}});
    let result_block = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://example.com", "title": "Example"}]});
    let first = message_start(10)
        + &sse(json!({"type": "content_block_start", "index": 0, "content_block": use_block}))
        + &sse(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"rust\"}"}}))
        + &sse(json!({"type": "content_block_stop", "index": 0}))
        + &sse(json!({"type": "content_block_start", "index": 1, "content_block": result_block}))
        + &sse(json!({"type": "content_block_stop", "index": 1}))
        + &text_block(2, &["Rust is a language."])
        + &message_end("end_turn", 9);
    let server = TestServer::start([
        Reply::sse_split(&first, 17),
        Reply::sse_split(&text_stream("You're welcome."), 17),
    ])
    .await;
    let agent = AgentBuilder::new("searcher")
        .model(client(&server, 0))
        .build()
        .expect("the agent builds");
    let conversation = agent.conversation();
    let result = conversation.run("What is Rust?").await;
    assert_eq!(result.text, "Rust is a language.");
    assert!(
        result.steps[0].tool_calls.is_empty(),
        "a server tool is not a client call"
    );
    let used = json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust"}});
    assert_eq!(
        result.steps[0].provider_metadata,
        [used.clone(), result_block.clone()]
    );
    conversation.run("Thanks").await;

    let second = server.requests()[1].json();
    assert_eq!(
        second["messages"][1],
        json!({"role": "assistant", "content": [
            used,
            result_block,
            {"type": "text", "text": "Rust is a language."}
        ]})
    );
}

/// Each tool_use block's call starts once, naming its tool, before its argument pieces (one
/// block streams none), as an agent's on_chunk sees it.
#[tokio::test]
async fn each_tool_use_block_starts_its_call_before_its_arguments() {
    let calls = message_start(10)
        + &text_block(0, &["Looking."])
        + &tool_block(1, "toolu_a", "search", &["{\"q\":", "\"rust\"}"])
        + &tool_block(2, "toolu_b", "now", &[])
        + &message_end("tool_use", 5);
    let server = TestServer::start([
        Reply::sse_split(&calls, 7),
        Reply::sse_split(&text_stream("Done."), 7),
    ])
    .await;
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let seen = chunks.clone();
    let agent = AgentBuilder::new("starts")
        .model(client(&server, 0))
        .hook(Hook::<event::OnChunk>::sync(
            "record",
            move |ctx: &ChunkContext| {
                let entry = match &ctx.chunk {
                    Chunk::ToolInputStart { id, name } => format!("start {id} {name}"),
                    Chunk::ToolInputDelta { id, delta } => format!("input {id} {delta}"),
                    Chunk::ToolCall(call) => format!("call {} {}", call.id, call.name),
                    Chunk::ToolResult { id, .. } => format!("result {id}"),
                    Chunk::TextDelta(text) => format!("text {text}"),
                    other => format!("{other:?}"),
                };
                seen.lock().expect("not poisoned").push(entry);
            },
        ))
        .build()
        .expect("the agent builds");
    let result = agent.run("go").await;
    assert!(result.is_completed(), "{:?}", result.error);
    assert_eq!(
        *chunks.lock().expect("not poisoned"),
        [
            "text Looking.",
            "start toolu_a search",
            "input toolu_a {\"q\":",
            "input toolu_a \"rust\"}",
            "call toolu_a search",
            "start toolu_b now",
            "call toolu_b now",
            "result toolu_a",
            "result toolu_b",
            "text Done.",
        ]
    );
}
