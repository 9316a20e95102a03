//! The OpenAI Chat Completions client over real sockets (the in-process test server): the
//! stream decoded identically however its bytes are split, the request body as JSON, strict-mode
//! schema adaptation, and a full agent turn with a tool call.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Reply, TestServer};
use agent_core::{
    AgentBuilder, CallSettings, Chunk, FinishReason, FnTool, Hook, Message, Model, ModelError,
    ModelErrorKind, ModelEvent, ModelRequest, ModelStream, OutputSchema, Tool, ToolCall,
    ToolChoice, ToolSpec, TurnStatus, Usage, event, tool,
};
use agent_providers::{HttpSettings, OpenAi};
use futures_core::Stream;
use serde_json::{Value, json};

fn settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(5),
        first_byte_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries: 0,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(10),
        ..HttpSettings::default()
    }
}

fn client(server: &TestServer) -> OpenAi {
    OpenAi::new("sk-test-key")
        .base_url(format!("{}/v1/", server.url))
        .model("gpt-test")
        .settings(settings())
}

/// Every event of a stream, and the error that ended it, if any.
async fn collect(mut stream: ModelStream) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = next(&mut stream).await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

fn next(
    stream: &mut ModelStream,
) -> impl Future<Output = Option<<ModelStream as Stream>::Item>> + '_ {
    std::future::poll_fn(move |cx| Pin::new(&mut *stream).poll_next(cx))
}

fn user(text: &str) -> ModelRequest {
    {
        let mut req = ModelRequest::default();
        req.messages = vec![Message::user(text)].into();
        req
    }
}

/// A stream in OpenAI's exact format: text deltas (with multi-byte characters and escapes), a
/// reasoning delta (as compatible servers send it), two tool calls whose argument deltas
/// interleave, the finish reason, the usage chunk, then `[DONE]`.
const RECORDED: &str = concat!(
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"reasoning_content":"Le café? 🦀 needs weather"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":"Checking Paris "},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":"and Zürich 🦀 \"now\"\n"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_8ZcBr0d3Hg9vWb4QOyXmKqpT","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\": \"Zürich\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": \"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":41,"total_tokens":123,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":8,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

fn recorded_events() -> Vec<ModelEvent> {
    let (paris, zurich) = (
        "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        "call_8ZcBr0d3Hg9vWb4QOyXmKqpT",
    );
    // Each call's start comes before its first argument delta (the calls interleave).
    let start = |id: &str| ModelEvent::ToolCallStart {
        id: id.into(),
        name: "get_weather".into(),
    };
    let input = |id: &str, delta: &str| ModelEvent::ToolInputDelta {
        id: id.into(),
        delta: delta.into(),
    };
    vec![
        ModelEvent::ReasoningDelta("Le café? 🦀 needs weather".into()),
        ModelEvent::TextDelta("Checking Paris ".into()),
        ModelEvent::TextDelta("and Zürich 🦀 \"now\"\n".into()),
        start(paris),
        input(paris, "{\"city\""),
        start(zurich),
        input(zurich, "{\"city\": \"Zürich\"}"),
        input(paris, ": \"Paris\"}"),
        ModelEvent::ToolCall(ToolCall {
            id: paris.into(),
            name: "get_weather".into(),
            arguments: "{\"city\": \"Paris\"}".into(),
            metadata: None,
        }),
        ModelEvent::ToolCall(ToolCall {
            id: zurich.into(),
            name: "get_weather".into(),
            arguments: "{\"city\": \"Zürich\"}".into(),
            metadata: None,
        }),
        ModelEvent::Usage(Usage {
            input_tokens: 82,
            output_tokens: 41,
            reasoning_tokens: 8,
            cached_input_tokens: 64,
        }),
        ModelEvent::Finish(FinishReason::ToolCalls),
    ]
}

#[tokio::test]
async fn a_recorded_stream_decodes_identically_however_its_bytes_are_split() {
    let crlf = RECORDED.replace('\n', "\r\n");
    let mut replies = Vec::new();
    let mut cases = Vec::new();
    for size in [1, 3, 7, 64, RECORDED.len()] {
        replies.push(Reply::sse_split(RECORDED, size));
        cases.push(format!("LF, {size}-byte pieces"));
        replies.push(Reply::sse_split(&crlf, size));
        cases.push(format!("CRLF, {size}-byte pieces"));
    }
    // The pieces really do cut through multi-byte characters.
    assert!(
        crate::support::split(RECORDED.as_bytes(), 3)
            .iter()
            .any(|piece| std::str::from_utf8(piece).is_err())
    );
    let server = TestServer::start(replies).await;
    let openai = client(&server);
    for case in cases {
        let (events, error) = collect(openai.stream(user("weather?"))).await;
        assert_eq!(error, None, "{case}");
        assert_eq!(events, recorded_events(), "{case}");
    }
}

#[tokio::test]
async fn text_only_stream_finishes_with_stop_and_length() {
    let stop = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        "\n\n",
        "data: [DONE]\n\n",
    );
    let length = stop.replace(r#""finish_reason":"stop""#, r#""finish_reason":"length""#);
    let server = TestServer::start([Reply::sse_split(stop, 5), Reply::sse_split(&length, 5)]).await;
    let openai = client(&server);
    let (events, _) = collect(openai.stream(user("hi"))).await;
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("Hi".into()),
            ModelEvent::Finish(FinishReason::Stop)
        ]
    );
    let (events, _) = collect(openai.stream(user("hi"))).await;
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finish(FinishReason::Length))
    );
}

/// A token count past `f64` (`1e400`, which serde_json refuses as a number) is `u64::MAX`, as
/// one past `u64` is: the answer is complete, not a malformed chunk over its accounting.
#[tokio::test]
async fn a_token_count_past_f64_saturates_and_the_answer_is_whole() {
    let body = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
        "\n\n",
        r#"data: {"choices":[],"usage":{"prompt_tokens":1e400,"completion_tokens":3}}"#,
        "\n\n",
        "data: [DONE]\n\n",
    );
    let server = TestServer::start([Reply::sse_split(body, 7)]).await;
    let (events, error) = collect(client(&server).stream(user("hi"))).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("Hi".into()),
            ModelEvent::Usage(agent_core::Usage {
                input_tokens: u64::MAX,
                output_tokens: 3,
                ..Default::default()
            }),
            ModelEvent::Finish(FinishReason::Stop)
        ]
    );
}

const DONE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// A client writes each request body into the buffer of its last finished one: a short request
/// after a long one is sent whole and alone, nothing of the long one left after it.
#[tokio::test]
async fn a_short_request_after_a_long_one_is_sent_alone() {
    let server = TestServer::start([Reply::sse_split(DONE, 64), Reply::sse_split(DONE, 64)]).await;
    let model = client(&server);
    let ask = |text: String| {
        let mut request = ModelRequest::default();
        request.messages = vec![Message::user(text)].into();
        request
    };
    for text in ["a long question ".repeat(1_000), "short".to_owned()] {
        let (events, error) = collect(model.stream(ask(text))).await;
        assert!(error.is_none(), "{error:?} after {events:?}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.len() < requests[0].body.len() / 10);
    let messages = &requests[1].json()["messages"];
    assert_eq!(*messages, json!([{"role": "user", "content": "short"}]));
}

fn spec(name: &str, description: &str, parameters: Value) -> Arc<ToolSpec> {
    Arc::new(ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
    })
}

fn city_schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
}

#[tokio::test]
async fn the_request_body_maps_every_part_of_the_model_request() {
    let server = TestServer::start([Reply::sse_split(DONE, 64)]).await;
    let mut options = serde_json::Map::new();
    options.insert("reasoning_effort".to_owned(), json!("low"));
    options.insert("temperature".to_owned(), json!(0.9));
    options.insert("stream".to_owned(), json!(false));
    options.insert("parallel_tool_calls".to_owned(), json!(false));
    let request = {
        let mut req = ModelRequest::default();
        req.model = String::new();
        req.system = Some("You are terse.".to_owned());
        req.messages = vec![
            Message::user("Weather in Paris and Oslo?"),
            Message::Assistant {
                content: Default::default(),
                reasoning: "Two cities.".into(),
                tool_calls: vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"city":"Paris"}"#.into(),
                        metadata: None,
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "get_time".into(),
                        arguments: Default::default(),
                        metadata: None,
                    },
                ]
                .into(),
                reasoning_signature: None,
                provider_blocks: Vec::new(),
            },
            Message::Tool {
                call_id: "c1".into(),
                name: "get_weather".into(),
                content: r#"{"sky":"sunny"}"#.into(),
                is_error: false,
            },
            Message::Tool {
                call_id: "c2".into(),
                name: "get_time".into(),
                content: "no clock".into(),
                is_error: true,
            },
            Message::assistant("Sunny."),
            Message::user("Thanks"),
        ]
        .into();
        req.tools = vec![
            spec("get_weather", "Weather in a city.", city_schema()),
            spec("get_time", "", json!({"type": "object", "properties": {}})),
        ];
        req.tool_choice = ToolChoice::Tool("get_weather".to_owned());
        req.settings = CallSettings {
            temperature: Some(0.2),
            max_output_tokens: Some(256),
            top_p: Some(0.5),
            stop_sequences: Some(vec!["END".to_owned()]),
            seed: Some(7),
        };
        req.send_reasoning = false;
        req.provider_options = options;
        req.stall_timeout = None;
        req.output_schema = Some(OutputSchema {
            name: "answer".to_owned(),
            schema: city_schema().into(),
        });
        req
    };
    let (_, error) = collect(client(&server).stream(request)).await;
    assert_eq!(error, None);
    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Weather in Paris and Oslo?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "{\"sky\":\"sunny\"}"},
                {"role": "tool", "tool_call_id": "c2", "content": "no clock"},
                {"role": "assistant", "content": "Sunny."},
                {"role": "user", "content": "Thanks"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.", "parameters": city_schema()}},
                {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
            ],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            // The provider option replaced the setting.
            "temperature": 0.9,
            "max_completion_tokens": 256,
            "top_p": 0.5,
            "stop": ["END"],
            "seed": 7,
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "answer",
                    "strict": true,
                    "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}
                }
            },
            "reasoning_effort": "low",
            "parallel_tool_calls": false
        })
    );
}

#[tokio::test]
async fn tool_choice_variants_reasoning_model_override_and_removed_fields() {
    let server = TestServer::start((0..5).map(|_| Reply::sse_split(DONE, 64))).await;
    let openai = client(&server);
    for choice in [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required] {
        let request = {
            let mut req = user("hi");
            req.tools = vec![spec("get_weather", "Weather.", city_schema())];
            req.tool_choice = choice;
            req
        };
        let (_, error) = collect(openai.stream(request)).await;
        assert_eq!(error, None);
    }
    // No tools: neither `tools` nor `tool_choice`; earlier reasoning sent back when asked; the
    // request's model wins; a `null` option removes a field.
    let mut options = serde_json::Map::new();
    options.insert("stream_options".to_owned(), Value::Null);
    let request = {
        let mut req = ModelRequest::default();
        req.model = "gpt-override".to_owned();
        req.messages = vec![
            Message::user("hi"),
            Message::Assistant {
                content: "Hello".into(),
                reasoning: "greet".into(),
                tool_calls: Arc::default(),
                reasoning_signature: None,
                provider_blocks: Vec::new(),
            },
            Message::user("again"),
        ]
        .into();
        req.send_reasoning = true;
        req.provider_options = options;
        req.output_schema = Some(OutputSchema {
            name: "loose".to_owned(),
            schema: json!({"type": "object"}).into(),
        });
        req
    };
    let (_, error) = collect(openai.clone().strict_output(false).stream(request)).await;
    assert_eq!(error, None);
    let (_, error) = collect(openai.stream({
        let mut req = user("plain");
        req.system = Some(String::new());
        req
    }))
    .await;
    assert_eq!(error, None);

    let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    let choices: Vec<&Value> = bodies[..3]
        .iter()
        .map(|body| &body["tool_choice"])
        .collect();
    assert_eq!(
        choices,
        [&json!("auto"), &json!("none"), &json!("required")]
    );
    let body = &bodies[3];
    assert_eq!(body["model"], "gpt-override");
    assert!(
        body.get("tools").is_none() && body.get("tool_choice").is_none(),
        "{body}"
    );
    assert!(body.get("stream_options").is_none(), "{body}");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": "Hello", "reasoning_content": "greet"})
    );
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "loose", "strict": false, "schema": {"type": "object"}}})
    );
    // An empty system prompt is not sent; no settings, no settings fields.
    let body = &bodies[4];
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "plain"}])
    );
    for field in [
        "temperature",
        "max_completion_tokens",
        "top_p",
        "stop",
        "seed",
        "response_format",
    ] {
        assert!(body.get(field).is_none(), "{field}: {body}");
    }
}

/// Plan a trip.
#[tool]
fn plan_trip(
    /// Where to.
    city: String,
    /// How many nights.
    #[arg(default = 2)]
    nights: u32,
    /// Who travels.
    travellers: Vec<String>,
    /// Anything else.
    note: Option<String>,
) -> String {
    format!("{city} {nights} {travellers:?} {note:?}")
}

/// The parameters a strict-mode request sent for its first tool.
async fn strict_parameters(parameters: Value) -> (Value, Value) {
    let server = TestServer::start([Reply::sse_split(DONE, 64)]).await;
    let request = {
        let mut req = user("hi");
        req.tools = vec![spec("t", "T.", parameters)];
        req
    };
    let (_, error) = collect(client(&server).strict_tools(true).stream(request)).await;
    assert_eq!(error, None);
    let body = server.requests()[0].json();
    let function = body["tools"][0]["function"].clone();
    (function["parameters"].clone(), function["strict"].clone())
}

#[tokio::test]
async fn strict_mode_makes_optional_properties_required_and_nullable() {
    let (parameters, strict) = strict_parameters(plan_trip_tool::PlanTrip::schema().clone()).await;
    assert_eq!(strict, true);
    assert_eq!(
        parameters,
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "Where to."},
                "nights": {"type": ["integer", "null"], "minimum": 0, "description": "How many nights."},
                "note": {"type": ["string", "null"], "description": "Anything else."},
                "travellers": {"type": "array", "items": {"type": "string"}, "description": "Who travels."}
            },
            "required": ["city", "nights", "note", "travellers"],
            "additionalProperties": false
        })
    );
}

#[tokio::test]
async fn strict_mode_adapts_nested_objects_and_definitions() {
    let canonical = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "origin": {"$ref": "#/$defs/Place"},
            "stops": {"type": "array", "items": {"$ref": "#/$defs/Place"}},
            "return_leg": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
            "budget": {"type": "object", "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}}, "required": ["amount"]}
        },
        "required": ["origin", "stops", "budget"],
        "$defs": {
            "Place": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "days": {"type": "integer", "format": "uint8", "minimum": 0}},
                "required": ["name"]
            }
        }
    });
    let (parameters, _) = strict_parameters(canonical).await;
    assert_eq!(
        parameters,
        json!({
            "type": "object",
            "properties": {
                "origin": {"$ref": "#/$defs/Place"},
                "stops": {"type": "array", "items": {"$ref": "#/$defs/Place"}},
                "return_leg": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
                "budget": {
                    "type": "object",
                    "properties": {"amount": {"type": "number"}, "currency": {"type": ["string", "null"]}},
                    "required": ["amount", "currency"],
                    "additionalProperties": false
                }
            },
            "required": ["budget", "origin", "return_leg", "stops"],
            "additionalProperties": false,
            "$defs": {
                "Place": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "days": {"type": ["integer", "null"], "minimum": 0}},
                    "required": ["days", "name"],
                    "additionalProperties": false
                }
            }
        })
    );
}

#[tokio::test]
async fn strict_mode_names_the_json_path_of_a_keyword_it_cannot_express() {
    let server = TestServer::start([]).await;
    let openai = client(&server).strict_tools(true);
    let cases = [
        (
            json!({"type": "object", "properties": {"labels": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}}}}),
            "`patternProperties`",
            "#/properties/labels",
        ),
        (
            json!({"type": "object", "properties": {"rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}}},
                   "$defs": {"Row": {"type": "object", "properties": {"id": {"type": "string", "minLength": 3}}}}}),
            "`minLength`",
            "#/$defs/Row/properties/id",
        ),
        (
            json!({"type": "object", "properties": {"scores": {"type": "object", "additionalProperties": {"type": "number"}}}}),
            "free-form map",
            "#/properties/scores",
        ),
    ];
    for (schema, keyword, path) in cases {
        let request = {
            let mut req = user("hi");
            req.tools = vec![spec("report", "R.", schema)];
            req
        };
        let (events, error) = collect(openai.stream(request)).await;
        assert!(events.is_empty());
        let error = error.expect("the request is refused before it is sent");
        assert_eq!(error.kind, ModelErrorKind::BadRequest);
        assert!(error.message.contains("`report`"), "{}", error.message);
        assert!(error.message.contains(keyword), "{}", error.message);
        assert!(
            error.message.contains(&format!("`{path}`")),
            "{}",
            error.message
        );
    }
    assert!(server.requests().is_empty(), "nothing was sent");
    // Without strict mode the canonical schema goes as it is, but for the empty `properties`
    // OpenAI requires of an object schema.
    let request = {
        let mut req = user("hi");
        req.tools = vec![spec(
            "report",
            "R.",
            json!({"type": "object", "patternProperties": {"^x-": {}}}),
        )];
        req
    };
    let server = TestServer::start([Reply::sse_split(DONE, 64)]).await;
    let (_, error) = collect(client(&server).stream(request)).await;
    assert_eq!(error, None);
    let body = server.requests()[0].json();
    assert_eq!(
        body["tools"][0]["function"]["parameters"],
        json!({"type": "object", "patternProperties": {"^x-": {}}, "properties": {}})
    );
    assert!(body["tools"][0]["function"].get("strict").is_none());
}

/// One SSE body: the chunks as `data:` lines, then `[DONE]`.
fn sse(chunks: &[Value]) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// A server that sends a call's first argument piece before its name, and a call with no
/// arguments at all: each call still starts once, before its arguments. The pieces that came
/// before the name are held until it comes, then go out as one.
#[tokio::test]
async fn each_call_starts_once_before_its_arguments_even_when_its_name_comes_late() {
    let body = sse(&[
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "function": {"arguments": "{\"q\""}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "search", "arguments": ":\"rust"}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"}"}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "now", "arguments": ""}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let answer = sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]}),
    ]);
    let server = TestServer::start([
        Reply::sse_split(&body, 7),
        Reply::sse_split(&body, 7),
        Reply::sse_split(&answer, 7),
    ])
    .await;
    let start = |id: &str, name: &str| ModelEvent::ToolCallStart {
        id: id.into(),
        name: name.into(),
    };
    let input = |delta: &str| ModelEvent::ToolInputDelta {
        id: "call_a".into(),
        delta: delta.into(),
    };
    let (events, error) = collect(client(&server).stream(user("go"))).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        [
            start("call_a", "search"),
            input("{\"q\":\"rust"),
            input("\"}"),
            start("call_b", "now"),
            ModelEvent::ToolCall(ToolCall::new("call_a", "search", "{\"q\":\"rust\"}")),
            ModelEvent::ToolCall(ToolCall::new("call_b", "now", "")),
            ModelEvent::Finish(FinishReason::ToolCalls),
        ]
    );

    // The same stream through an agent: its on_chunk hook sees the same order.
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let seen = chunks.clone();
    let agent = AgentBuilder::new("starts")
        .model(client(&server))
        .hook(Hook::<event::OnChunk>::sync("chunks", move |ctx| {
            let entry = match &ctx.chunk {
                Chunk::ToolInputStart { id, name } => format!("start {id} {name}"),
                Chunk::ToolInputDelta { id, delta } => format!("input {id} {delta}"),
                Chunk::ToolCall(call) => format!("call {} {}", call.id, call.name),
                Chunk::ToolResult { id, .. } => format!("result {id}"),
                Chunk::TextDelta(text) => format!("text {text}"),
                other => format!("{other:?}"),
            };
            seen.lock().unwrap().push(entry);
        }))
        .build()
        .expect("the agent builds");
    let result = agent.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(
        *chunks.lock().unwrap(),
        [
            "start call_a search",
            "input call_a {\"q\":\"rust",
            "input call_a \"}",
            "start call_b now",
            "call call_a search",
            "call call_b now",
            "result call_a",
            "result call_b",
            "text Done.",
        ]
    );
}

#[tokio::test]
async fn a_full_agent_turn_calls_a_tool_then_answers() {
    let call = sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}),
    ]);
    let answer = sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "It is sunny "}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "in Paris."}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 80, "completion_tokens": 6, "total_tokens": 86}}),
    ]);
    let server =
        TestServer::start([Reply::sse_split(&call, 7), Reply::sse_split(&answer, 7)]).await;
    let cities = Arc::new(Mutex::new(Vec::new()));
    let seen = cities.clone();
    let agent = AgentBuilder::new("weather")
        .instructions("Answer with the tool's result.")
        .model(client(&server))
        .dyn_tool(FnTool::new(
            "get_weather",
            "Weather in a city.",
            city_schema(),
            move |args, _ctx| {
                seen.lock()
                    .unwrap()
                    .push(args["city"].as_str().unwrap_or_default().to_owned());
                async move { Ok(json!({"sky": "sunny"})) }
            },
        ))
        .build()
        .expect("the agent builds");
    let result = agent.run("Weather in Paris?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(result.text, "It is sunny in Paris.");
    assert_eq!(*cities.lock().unwrap(), ["Paris"]);
    assert_eq!(result.usage.input_tokens, 130);
    assert_eq!(result.steps.len(), 2);
    assert_eq!(result.steps[0].finish_reason, FinishReason::ToolCalls);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    assert_eq!(first["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(first["tool_choice"], "auto");
    let second = requests[1].json();
    let messages = second["messages"].as_array().expect("messages").clone();
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "Answer with the tool's result."})
    );
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "Weather in Paris?"})
    );
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
        ]})
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_1");
    let content: Value =
        serde_json::from_str(messages[3]["content"].as_str().expect("text content"))
            .expect("JSON result");
    assert_eq!(content, json!({"sky": "sunny"}));
}

#[test]
fn the_client_reports_its_model_and_hides_its_key() {
    let openai = OpenAi::new("sk-secret-0123456789").model("gpt-4o");
    assert_eq!(openai.id(), "gpt-4o");
    let debug = format!("{openai:?}");
    assert!(!debug.contains("sk-secret-0123456789"), "{debug}");
    assert!(
        debug.contains("redacted") && debug.contains("gpt-4o"),
        "{debug}"
    );
}
