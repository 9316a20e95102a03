//! The cost of one streamed chunk (issue 16, target 2): a text answer of N chunks over loopback
//! HTTP, through a provider alone (its `Model::stream` read to the end), through the provider
//! and the engine (an `Agent` turn with an on_chunk hook), and through the floor, a hand-written
//! client (reqwest, the SSE parser, serde_json of each chunk into a minimal borrowed struct,
//! appending the text), on the same bytes from the same in-process server. Each provider is
//! measured against a floor reading its own wire format: OpenAI Chat Completions and Anthropic
//! Messages.
//!
//! Per extra chunk is the slope between two chunk counts; divan's `AllocProfiler` (a counting
//! global allocator) gives the allocations of each iteration, so the allocations per extra
//! chunk are the slope of those: the provider alone (`*_model`), the provider and the engine
//! (`*_agent`), the engine being their difference.
//!
//! `*_call_*` streams one tool call whose arguments come in N chunks (as models stream them, a
//! few characters at a time, half of them ending a line with an escaped newline) instead of text: per extra argument chunk, the same three against
//! a floor appending `arguments`, with the agent's on_chunk hook seeing each delta.
//!
//! `*_history` measures the other end of a call: a request carrying `n` messages of history
//! (a question, an answer calling a tool, the tool's result, in turn) answered with one chunk,
//! through each provider alone: what writing a long conversation costs a call, in allocations
//! and instructions per message.
//!
//! Run with `cargo bench -p agent-providers --bench chunks`.

use std::borrow::Cow;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;

use agent_core::{
    Agent, AgentBuilder, FnTool, Hook, Message, Model, ModelEvent, ModelRequest, ToolCall,
    TurnStatus, event,
};
use agent_providers::{Anthropic, OpenAi};
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
/// Messages of history in a request.
const HISTORY: &[usize] = &[10, 1000];

/// An OpenAI Chat Completions stream of `n` text chunks, a finish chunk, usage and `[DONE]`,
/// each chunk with every field OpenAI sends.
fn openai_body(n: usize) -> Vec<u8> {
    let head = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"bench","system_fingerprint":"fp_1","choices":"#;
    let mut body = String::new();
    for i in 0..n {
        body.push_str(&format!(
            "data: {head}[{{\"index\":0,\"delta\":{{\"content\":\"tok{i} \"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str(&format!("data: {head}[{{\"index\":0,\"delta\":{{}},\"logprobs\":null,\"finish_reason\":\"stop\"}}]}}\n\n"));
    body.push_str(&format!("data: {head}[],\"usage\":{{\"prompt_tokens\":5,\"completion_tokens\":5,\"total_tokens\":10}}}}\n\n"));
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// An Anthropic Messages stream of `n` text deltas in one text block.
fn anthropic_body(n: usize) -> Vec<u8> {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"bench\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    for i in 0..n {
        body.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"tok{i} \"}}}}\n\n"
        ));
    }
    body.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    body.into_bytes()
}

/// The argument text of chunk `i` of `n` of a streamed call: together `{"q":"..."}`, a file's
/// text, say, a few characters a piece, every other piece ending its line with an escaped
/// newline (`\n`, escaped once more in the chunk's JSON), as models stream such arguments.
fn argument_piece(i: usize, n: usize) -> String {
    match i {
        0 => r#"{"q":""#.to_owned(),
        _ if i + 1 == n => r#""}"#.to_owned(),
        _ if i % 2 == 1 => format!(r"line{i}\n"),
        _ => format!("tok{i} "),
    }
}

/// An OpenAI Chat Completions stream of one `lookup` call whose arguments come in `n` chunks,
/// then its finish chunk, usage and `[DONE]`.
fn openai_call_body(n: usize) -> Vec<u8> {
    let head = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"bench","system_fingerprint":"fp_1","choices":"#;
    let mut body = format!(
        "data: {head}[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{{\"name\":\"lookup\",\"arguments\":\"\"}}}}]}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
    );
    for i in 0..n {
        let piece = serde_json::to_string(&argument_piece(i, n)).expect("piece");
        body.push_str(&format!(
            "data: {head}[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":{piece}}}}}]}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str(&format!("data: {head}[{{\"index\":0,\"delta\":{{}},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}}]}}\n\n"));
    body.push_str(&format!("data: {head}[],\"usage\":{{\"prompt_tokens\":5,\"completion_tokens\":5,\"total_tokens\":10}}}}\n\n"));
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// An Anthropic Messages stream of one `lookup` tool use whose input comes in `n`
/// `input_json_delta`s.
fn anthropic_call_body(n: usize) -> Vec<u8> {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"bench\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"lookup\",\"input\":{}}}\n\n",
    );
    for i in 0..n {
        let piece = serde_json::to_string(&argument_piece(i, n)).expect("piece");
        body.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{piece}}}}}\n\n"
        ));
    }
    body.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    body.into_bytes()
}

/// Serves `body` (one write, keep-alive) to every request; returns the base URL.
fn serve(runtime: &Runtime, body: Vec<u8>) -> String {
    let body = Arc::new(body);
    runtime.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 1 << 16];
                    let mut pending = Vec::new();
                    loop {
                        // One request: its head, then `content-length` bytes of body.
                        let end = loop {
                            if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                                break end;
                            }
                            match socket.read(&mut buffer).await {
                                Ok(0) | Err(_) => return,
                                Ok(read) => pending.extend_from_slice(&buffer[..read]),
                            }
                        };
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
                        pending.drain(..end + 4 + length);
                        let mut response = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        response.extend_from_slice(&body);
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

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn openai(url: &str) -> OpenAi {
    OpenAi::new("bench-key")
        .base_url(format!("{url}/v1"))
        .model("bench")
}

fn anthropic(url: &str) -> Anthropic {
    Anthropic::new("bench-key").base_url(url).model("bench")
}

/// An agent on `model` with one sync on_chunk hook.
fn agent(model: impl Model + 'static) -> Agent {
    AgentBuilder::new("bench")
        .model(model)
        .hook(Hook::<event::OnChunk>::sync("meter", |ctx| {
            black_box(&ctx.chunk);
        }))
        .build()
        .expect("agent")
}

/// An agent on `model` with one sync on_chunk hook, a `lookup` tool run on the spot and one
/// step: the turn streams the call, runs it and ends at its step limit.
fn call_agent(model: impl Model + 'static) -> Agent {
    let lookup = FnTool::sync(
        "lookup",
        "Looks a query up.",
        serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        |args, _| {
            Ok(serde_json::Value::from(
                args["q"].as_str().map_or(0, str::len),
            ))
        },
    );
    AgentBuilder::new("bench")
        .model(model)
        .dyn_tool(lookup)
        .max_steps(1)
        .hook(Hook::<event::OnChunk>::sync("meter", |ctx| {
            black_box(&ctx.chunk);
        }))
        .build()
        .expect("agent")
}

/// Runs one turn of `agent` and checks that it ran its call.
fn call_turn(runtime: &Runtime, agent: &Agent) -> agent_core::TurnResult {
    let result = runtime.block_on(agent.run("go"));
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(result.steps[0].tool_results.len(), 1);
    result
}

/// Reads a provider's stream to its end, appending the text as the engine would.
async fn read_model(model: &dyn Model) -> String {
    read_reply(model, ModelRequest::new("bench")).await
}

/// Reads the stream of `request` to its end, appending the text as the engine would.
async fn read_reply(model: &dyn Model, request: ModelRequest) -> String {
    let mut stream = model.stream(request);
    let mut text = String::new();
    while let Some(event) =
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut stream), cx)).await
    {
        match event.expect("event") {
            ModelEvent::TextDelta(delta) => text.push_str(&delta),
            other => {
                black_box(other);
            }
        }
    }
    text
}

/// The floor's loop: POST `body` to `url`, parse the SSE stream and give each event's data to
/// `chunk` until it says the stream ended.
async fn floor(
    client: &reqwest::Client,
    url: String,
    body: &'static [u8],
    mut chunk: impl FnMut(&str) -> bool,
) {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("response");
    let mut events = sse_stream::SseByteStream::new(response.bytes_stream());
    while let Some(event) =
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut events), cx)).await
    {
        let data = event.expect("event").data.unwrap_or_default();
        if !chunk(&data) {
            break;
        }
    }
}

/// Where the floors post: each provider's path under the server's URL.
const OPENAI_PATH: &str = "/v1/chat/completions";
const ANTHROPIC_PATH: &str = "/v1/messages";
/// The request bodies the floors post.
const OPENAI_REQUEST: &[u8] =
    br#"{"model":"bench","stream":true,"messages":[{"role":"user","content":"go"}]}"#;
const ANTHROPIC_REQUEST: &[u8] = br#"{"model":"bench","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":"go"}]}"#;

/// A floor against a server answering `reply`: each chunk's data given to `read`, with the text
/// it gathered so far, until `read` says the stream ended.
fn floor_bench(
    bencher: Bencher,
    n: usize,
    reply: Vec<u8>,
    path: &str,
    request: &'static [u8],
    read: impl Fn(&str, &mut String) -> bool,
) {
    let runtime = runtime();
    let url = format!("{}{path}", serve(&runtime, reply));
    let client = reqwest::Client::new();
    bencher.counter(ItemsCount::new(n)).bench_local(|| {
        let mut text = String::new();
        runtime.block_on(floor(&client, url.clone(), request, |data| {
            read(data, &mut text)
        }));
        black_box(text)
    });
}

/// The stream of the model `make` builds for a server answering `reply`, read to its end, no
/// engine.
fn model_bench<M: Model>(bencher: Bencher, n: usize, reply: Vec<u8>, make: fn(&str) -> M) {
    let runtime = runtime();
    let model = make(&serve(&runtime, reply));
    bencher
        .counter(ItemsCount::new(n))
        .bench_local(|| black_box(runtime.block_on(read_model(&model))));
}

/// Turns of the agent `make` builds for a server answering `reply`, each run by `turn`.
fn agent_bench(
    bencher: Bencher,
    n: usize,
    reply: Vec<u8>,
    make: impl FnOnce(&str) -> Agent,
    turn: fn(&Runtime, &Agent) -> agent_core::TurnResult,
) {
    let runtime = runtime();
    let agent = make(&serve(&runtime, reply));
    bencher
        .counter(ItemsCount::new(n))
        .bench_local(|| black_box(turn(&runtime, &agent)));
}

/// Runs one turn of `agent`, a text answer.
fn text_turn(runtime: &Runtime, agent: &Agent) -> agent_core::TurnResult {
    let result = runtime.block_on(agent.run("go"));
    assert_eq!(result.status, TurnStatus::Completed);
    result
}

#[derive(Deserialize)]
struct OpenAiChunk<'a> {
    #[serde(borrow)]
    choices: Vec<OpenAiChoice<'a>>,
}

#[derive(Deserialize)]
struct OpenAiChoice<'a> {
    #[serde(borrow)]
    delta: OpenAiDelta<'a>,
}

#[derive(Deserialize)]
struct OpenAiDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct OpenAiCallChunk<'a> {
    #[serde(borrow)]
    choices: Vec<OpenAiCallChoice<'a>>,
}

#[derive(Deserialize)]
struct OpenAiCallChoice<'a> {
    #[serde(borrow)]
    delta: OpenAiCallDelta<'a>,
}

#[derive(Deserialize)]
struct OpenAiCallDelta<'a> {
    #[serde(borrow, default)]
    tool_calls: Vec<OpenAiCallPart<'a>>,
}

#[derive(Deserialize)]
struct OpenAiCallPart<'a> {
    #[serde(borrow)]
    function: OpenAiFunctionPart<'a>,
}

#[derive(Deserialize)]
struct OpenAiFunctionPart<'a> {
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct AnthropicInputFrame<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    delta: Option<AnthropicInputDelta<'a>>,
}

#[derive(Deserialize)]
struct AnthropicInputDelta<'a> {
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct AnthropicFrame<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    delta: Option<AnthropicDelta<'a>>,
}

#[derive(Deserialize)]
struct AnthropicDelta<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// The OpenAI floor: only `choices[0].delta.content` is read.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn openai_floor(bencher: Bencher, n: usize) {
    floor_bench(
        bencher,
        n,
        openai_body(n),
        OPENAI_PATH,
        OPENAI_REQUEST,
        |data, text| {
            if data == "[DONE]" {
                return false;
            }
            let chunk: OpenAiChunk<'_> = serde_json::from_str(data).expect("chunk");
            if let Some(content) = chunk
                .choices
                .first()
                .and_then(|c| c.delta.content.as_deref())
            {
                text.push_str(content);
            }
            true
        },
    );
}

/// `OpenAi`'s stream read to its end, no engine.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn openai_model(bencher: Bencher, n: usize) {
    model_bench(bencher, n, openai_body(n), openai);
}

/// An agent turn through `OpenAi` and the engine, with an on_chunk hook.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn openai_agent(bencher: Bencher, n: usize) {
    agent_bench(
        bencher,
        n,
        openai_body(n),
        |url| agent(openai(url)),
        text_turn,
    );
}

/// The Anthropic floor: the frame's `type` and its `delta.text` are read.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn anthropic_floor(bencher: Bencher, n: usize) {
    floor_bench(
        bencher,
        n,
        anthropic_body(n),
        ANTHROPIC_PATH,
        ANTHROPIC_REQUEST,
        |data, text| {
            let frame: AnthropicFrame<'_> = serde_json::from_str(data).expect("frame");
            if let Some(delta) = frame.delta.as_ref().and_then(|d| d.text.as_deref()) {
                text.push_str(delta);
            }
            frame.kind != "message_stop"
        },
    );
}

/// A request of `n` messages: a question, an answer calling a tool, the tool's result, in turn.
fn history_request(n: usize) -> ModelRequest {
    let messages = (0..n)
        .map(|i| match i % 3 {
            0 => Message::user(format!("Question {i}: what should I pack for Oslo?")),
            1 => Message::Assistant {
                content: format!("Answer {i}: let me check the weather.").into(),
                reasoning: "".into(),
                tool_calls: vec![ToolCall::new(
                    format!("call_{i}"),
                    "get_weather",
                    r#"{"city":"Oslo","unit":"c"}"#,
                )]
                .into(),
                reasoning_signature: None,
                provider_blocks: Vec::new(),
            },
            _ => Message::Tool {
                call_id: format!("call_{}", i - 1).into(),
                name: "get_weather".into(),
                content: "Rain, 7 degrees.".into(),
                is_error: false,
            },
        })
        .collect::<Vec<_>>();
    let mut request = ModelRequest::new("bench");
    request.messages = Arc::new(messages);
    request
}

/// Sends a request of `n` messages through the model `make` builds for a server answering
/// `reply`, once an iteration.
fn history_bench<M: Model>(bencher: Bencher, n: usize, reply: Vec<u8>, make: fn(&str) -> M) {
    let runtime = runtime();
    let model = make(&serve(&runtime, reply));
    let request = history_request(n);
    bencher
        .counter(ItemsCount::new(n))
        .bench_local(|| black_box(runtime.block_on(read_reply(&model, request.clone()))));
}

/// `OpenAi` sending a request of `n` messages, answered with one chunk.
#[divan::bench(args = HISTORY, sample_count = 100)]
fn openai_history(bencher: Bencher, n: usize) {
    history_bench(bencher, n, openai_body(1), openai);
}

/// `Anthropic` sending a request of `n` messages, answered with one chunk.
#[divan::bench(args = HISTORY, sample_count = 100)]
fn anthropic_history(bencher: Bencher, n: usize) {
    history_bench(bencher, n, anthropic_body(1), anthropic);
}

/// `Anthropic`'s stream read to its end, no engine.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn anthropic_model(bencher: Bencher, n: usize) {
    model_bench(bencher, n, anthropic_body(n), anthropic);
}

/// An agent turn through `Anthropic` and the engine, with an on_chunk hook.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn anthropic_agent(bencher: Bencher, n: usize) {
    agent_bench(
        bencher,
        n,
        anthropic_body(n),
        |url| agent(anthropic(url)),
        text_turn,
    );
}

/// The OpenAI floor of a streamed call: `choices[0].delta.tool_calls[0].function.arguments`
/// appended.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn openai_call_floor(bencher: Bencher, n: usize) {
    floor_bench(
        bencher,
        n,
        openai_call_body(n),
        OPENAI_PATH,
        OPENAI_REQUEST,
        |data, arguments| {
            if data == "[DONE]" {
                return false;
            }
            let chunk: OpenAiCallChunk<'_> = serde_json::from_str(data).expect("chunk");
            let part = chunk
                .choices
                .first()
                .and_then(|c| c.delta.tool_calls.first());
            if let Some(piece) = part.and_then(|p| p.function.arguments.as_deref()) {
                arguments.push_str(piece);
            }
            true
        },
    );
}

/// `OpenAi`'s stream of a call read to its end, no engine.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn openai_call_model(bencher: Bencher, n: usize) {
    model_bench(bencher, n, openai_call_body(n), openai);
}

/// An agent turn through `OpenAi` and the engine streaming a call, with an on_chunk hook.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn openai_call_agent(bencher: Bencher, n: usize) {
    agent_bench(
        bencher,
        n,
        openai_call_body(n),
        |url| call_agent(openai(url)),
        call_turn,
    );
}

/// The Anthropic floor of a streamed call: the frame's `type` and its `delta.partial_json`.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn anthropic_call_floor(bencher: Bencher, n: usize) {
    let reply = anthropic_call_body(n);
    floor_bench(
        bencher,
        n,
        reply,
        ANTHROPIC_PATH,
        ANTHROPIC_REQUEST,
        |data, input| {
            let frame: AnthropicInputFrame<'_> = serde_json::from_str(data).expect("frame");
            if let Some(piece) = frame.delta.as_ref().and_then(|d| d.partial_json.as_deref()) {
                input.push_str(piece);
            }
            frame.kind != "message_stop"
        },
    );
}

/// `Anthropic`'s stream of a tool use read to its end, no engine.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn anthropic_call_model(bencher: Bencher, n: usize) {
    model_bench(bencher, n, anthropic_call_body(n), anthropic);
}

/// An agent turn through `Anthropic` and the engine streaming a tool use, with an on_chunk
/// hook.
#[divan::bench(args = CHUNKS, sample_count = 100)]
fn anthropic_call_agent(bencher: Bencher, n: usize) {
    agent_bench(
        bencher,
        n,
        anthropic_call_body(n),
        |url| call_agent(anthropic(url)),
        call_turn,
    );
}
