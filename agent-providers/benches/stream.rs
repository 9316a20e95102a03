//! A streamed answer over loopback: µs per chunk through provider + engine (`OpenAi` driving an
//! `Agent` turn), beside the floor of reqwest plus the SSE parser plus parsing each chunk's
//! JSON into a minimal struct, on the same bytes from the same in-process server, which writes
//! each response in one large batch.
//!
//! Run with `cargo bench -p agent-providers`.

use std::hint::black_box;
use std::sync::Arc;

use agent_core::{AgentBuilder, TurnStatus};
use agent_providers::{HttpSettings, OpenAi};
use divan::counter::ItemsCount;
use divan::{AllocProfiler, Bencher};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

const CHUNKS: &[usize] = &[100, 1000, 10_000];

/// An OpenAI Chat Completions stream of `n` text chunks, a finish chunk, usage and `[DONE]`.
fn sse_body(n: usize) -> Vec<u8> {
    let mut body = String::new();
    for i in 0..n {
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{i} \"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    body.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5,\"total_tokens\":10}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// Serves `body` (one write, keep-alive) to every request; returns the base URL.
fn serve(runtime: &Runtime, body: Vec<u8>) -> String {
    serve_pair(runtime, body.clone(), body)
}

/// Serves `first` to a request without tool results and `after_tools` to one with them.
fn serve_pair(runtime: &Runtime, first: Vec<u8>, after_tools: Vec<u8>) -> String {
    let bodies = Arc::new((first, after_tools));
    runtime.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let bodies = bodies.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 1 << 16];
                    let mut pending = Vec::new();
                    loop {
                        // Read one request: its head, then `content-length` bytes of body.
                        let Some(end) = read_head(&mut socket, &mut buffer, &mut pending).await else { return };
                        let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        while pending.len() < end + 4 + length {
                            match socket.read(&mut buffer).await {
                                Ok(0) | Err(_) => return,
                                Ok(read) => pending.extend_from_slice(&buffer[..read]),
                            }
                        }
                        let request = &pending[end + 4..end + 4 + length];
                        let needle = br#""role":"tool""#;
                        let answered = request.windows(needle.len()).any(|w| w == needle);
                        let body = if answered { &bodies.1 } else { &bodies.0 };
                        pending.drain(..end + 4 + length);
                        let mut response = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        response.extend_from_slice(body);
                        if socket.write_all(&response).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        url
    })
}

async fn read_head(
    socket: &mut tokio::net::TcpStream,
    buffer: &mut [u8],
    pending: &mut Vec<u8>,
) -> Option<usize> {
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(end);
        }
        match socket.read(buffer).await {
            Ok(0) | Err(_) => return None,
            Ok(read) => pending.extend_from_slice(&buffer[..read]),
        }
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The whole stack: an agent turn through `OpenAi` (request, SSE, decoding, engine, history).
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn provider_and_engine(bencher: Bencher, n: usize) {
    let runtime = runtime();
    let url = serve(&runtime, sse_body(n));
    let model = OpenAi::new("bench-key")
        .base_url(format!("{url}/v1"))
        .model("bench")
        .settings(HttpSettings::default());
    let agent = AgentBuilder::new("bench")
        .model(model)
        .build()
        .expect("agent");
    bencher.counter(ItemsCount::new(n)).bench_local(|| {
        let result = runtime.block_on(agent.run("go"));
        assert_eq!(result.status, TurnStatus::Completed);
        black_box(result)
    });
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Delta<'a>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<std::borrow::Cow<'a, str>>,
}

/// The floor: reqwest plus the SSE parser plus parsing each chunk into a minimal struct and
/// appending its text, nothing else.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn floor_reqwest_sse_json(bencher: Bencher, n: usize) {
    let runtime = runtime();
    let url = serve(&runtime, sse_body(n));
    let client = reqwest::Client::new();
    let body =
        br#"{"model":"bench","stream":true,"messages":[{"role":"user","content":"go"}]}"#.to_vec();
    bencher.counter(ItemsCount::new(n)).bench_local(|| {
        runtime.block_on(async {
            let response = client
                .post(format!("{url}/v1/chat/completions"))
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .expect("response");
            let mut events = sse_stream::SseByteStream::new(response.bytes_stream());
            let mut text = String::new();
            while let Some(event) = std::future::poll_fn(|cx| {
                futures_core::Stream::poll_next(std::pin::Pin::new(&mut events), cx)
            })
            .await
            {
                let event = event.expect("event");
                let data = event.data.unwrap_or_default();
                if data == "[DONE]" {
                    break;
                }
                let chunk: Chunk<'_> = serde_json::from_str(&data).expect("chunk");
                if let Some(content) = chunk
                    .choices
                    .first()
                    .and_then(|c| c.delta.content.as_deref())
                {
                    text.push_str(content);
                }
            }
            black_box(text)
        })
    });
}

// ---- A whole turn (docs/design.md §9) -------------------------------------------------------------

/// Step one: two tool calls. Step two (after the tool results): fifty text chunks.
fn turn_bodies() -> (Vec<u8>, Vec<u8>) {
    let chunk = |delta: String| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
        )
    };
    let end = |reason: &str| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[],\"usage\":{{\"prompt_tokens\":20,\"completion_tokens\":20,\"total_tokens\":40}}}}\n\ndata: [DONE]\n\n"
        )
    };
    let mut first = String::new();
    for (index, (id, name)) in [("call_1", "get_weather"), ("call_2", "get_time")]
        .iter()
        .enumerate()
    {
        first.push_str(&chunk(format!(
            "{{\"tool_calls\":[{{\"index\":{index},\"id\":\"{id}\",\"type\":\"function\",\"function\":{{\"name\":\"{name}\",\"arguments\":\"\"}}}}]}}"
        )));
        first.push_str(&chunk(format!(
            "{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":\"{{\\\"city\\\":\\\"Oslo\\\"}}\"}}}}]}}"
        )));
    }
    first.push_str(&end("tool_calls"));
    let mut second = String::new();
    for i in 0..50 {
        second.push_str(&chunk(format!("{{\"content\":\"word{i} \"}}")));
    }
    second.push_str(&end("stop"));
    (first.into_bytes(), second.into_bytes())
}

/// The weather in a city.
#[agent_core::tool]
fn get_weather(city: String) -> String {
    format!("sunny in {city}")
}

/// The local time in a city.
#[agent_core::tool]
fn get_time(city: String) -> String {
    format!("14:05 in {city}")
}

/// The whole stack: an agent turn through `OpenAi` with two tool calls, fifty streamed text
/// chunks, a before/after tool hook pair and an on_chunk hook.
#[divan::bench(sample_count = 200)]
fn whole_turn_agent(bencher: Bencher) {
    use agent_core::{Hook, Matcher, event};
    let runtime = runtime();
    let (first, second) = turn_bodies();
    let url = serve_pair(&runtime, first, second);
    let model = OpenAi::new("bench-key")
        .base_url(format!("{url}/v1"))
        .model("bench");
    let agent = AgentBuilder::new("bench")
        .model(model)
        .tool(get_weather_tool::GetWeather)
        .tool(get_time_tool::GetTime)
        .before_tool_call(
            Matcher::all(),
            Hook::<event::BeforeToolCall<serde_json::Value>>::sync("gate", |ctx| {
                black_box(&ctx.tool_name);
            }),
        )
        .after_tool_call(
            Matcher::all(),
            Hook::<event::AfterToolCall<serde_json::Value>>::sync("audit", |ctx| {
                black_box(ctx.success());
            }),
        )
        .hook(Hook::<event::OnChunk>::sync("meter", |ctx| {
            black_box(&ctx.chunk);
        }))
        .build()
        .expect("agent");
    bencher.bench_local(|| {
        let result = runtime.block_on(agent.run("Weather and time in Oslo?"));
        assert_eq!(result.status, TurnStatus::Completed);
        black_box(result)
    });
}

#[derive(serde::Serialize)]
struct FloorMessage {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
}

#[derive(Deserialize)]
struct TurnChunk<'a> {
    #[serde(borrow)]
    choices: Vec<TurnChoice<'a>>,
}

#[derive(Deserialize)]
struct TurnChoice<'a> {
    #[serde(borrow)]
    delta: TurnDelta<'a>,
}

#[derive(Deserialize)]
struct TurnDelta<'a> {
    #[serde(borrow, default)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Vec<FloorCallDelta>,
}

#[derive(Deserialize)]
struct FloorCallDelta {
    index: usize,
    id: Option<String>,
    function: Option<FloorFunction>,
}

#[derive(Deserialize)]
struct FloorFunction {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct CityArgs {
    city: String,
}

/// One streamed call of the hand-written client: text and tool calls (id, name, arguments).
async fn floor_call(
    client: &reqwest::Client,
    url: &str,
    body: Vec<u8>,
) -> (String, Vec<(String, String, String)>) {
    let response = client
        .post(format!("{url}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("response");
    let mut events = sse_stream::SseByteStream::new(response.bytes_stream());
    let (mut text, mut calls) = (String::new(), Vec::<(String, String, String)>::new());
    while let Some(event) = std::future::poll_fn(|cx| {
        futures_core::Stream::poll_next(std::pin::Pin::new(&mut events), cx)
    })
    .await
    {
        let data = event.expect("event").data.unwrap_or_default();
        if data == "[DONE]" {
            break;
        }
        let chunk: TurnChunk<'_> = serde_json::from_str(&data).expect("chunk");
        for choice in chunk.choices {
            if let Some(content) = choice.delta.content {
                text.push_str(&content);
            }
            for delta in choice.delta.tool_calls {
                if calls.len() <= delta.index {
                    calls.resize(delta.index + 1, Default::default());
                }
                let call = &mut calls[delta.index];
                if let Some(id) = delta.id {
                    call.0 = id;
                }
                if let Some(function) = delta.function {
                    if let Some(name) = function.name {
                        call.1 = name;
                    }
                    if let Some(arguments) = function.arguments {
                        call.2.push_str(&arguments);
                    }
                }
            }
        }
    }
    (text, calls)
}

/// The floor: a hand-written client doing the same two HTTP exchanges with reqwest and serde,
/// calling the two tool functions directly.
#[divan::bench(sample_count = 200)]
fn whole_turn_floor(bencher: Bencher) {
    let runtime = runtime();
    let (first, second) = turn_bodies();
    let url = serve_pair(&runtime, first, second);
    let client = reqwest::Client::new();
    let tools = vec![
        serde_json::json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
        serde_json::json!({"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
    ];
    bencher.bench_local(|| {
        runtime.block_on(async {
            let mut messages = vec![FloorMessage {
                role: "user",
                content: Some("Weather and time in Oslo?".to_owned()),
                tool_calls: Vec::new(),
                tool_call_id: None,
            }];
            let request = serde_json::json!({"model": "bench", "stream": true, "messages": &messages, "tools": &tools});
            let (text, calls) = floor_call(&client, &url, serde_json::to_vec(&request).expect("json")).await;
            messages.push(FloorMessage {
                role: "assistant",
                content: Some(text),
                tool_calls: calls
                    .iter()
                    .map(|(id, name, arguments)| serde_json::json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}))
                    .collect(),
                tool_call_id: None,
            });
            for (id, name, arguments) in &calls {
                let args: CityArgs = serde_json::from_str(arguments).expect("arguments");
                let output = if name == "get_weather" { get_weather(args.city) } else { get_time(args.city) };
                messages.push(FloorMessage { role: "tool", content: Some(output), tool_calls: Vec::new(), tool_call_id: Some(id.clone()) });
            }
            let request = serde_json::json!({"model": "bench", "stream": true, "messages": &messages, "tools": &tools});
            let (text, _) = floor_call(&client, &url, serde_json::to_vec(&request).expect("json")).await;
            black_box(text)
        })
    });
}
