//! A streamed answer over loopback: µs per chunk through provider + engine (`OpenAi` driving an
//! `Agent` turn), beside the floor of reqwest plus the SSE parser plus parsing each chunk's
//! JSON into a minimal struct, on the same bytes from the same in-process server, which writes
//! each response in one large batch.
//!
//! Run with `cargo bench -p agent-providers`. `WHOLE_TURN_RSS=agent` (or `floor`) instead runs
//! 10,000 whole turns in one process and prints its resident memory every 1,000 turns.

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

/// The store that keeps nothing, shared with agent-core's store benchmark.
#[path = "../../agent-core/benches/common/no_store.rs"]
mod no_store;

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    match std::env::var("WHOLE_TURN_RSS").as_deref() {
        Ok(side) => rss_over_turns(side == "agent", 10_000),
        Err(_) => divan::main(),
    }
}

/// Runs `turns` whole turns (the agent's or the floor's) on one runtime and prints the
/// process's resident and peak resident memory before the first and after every thousandth.
fn rss_over_turns(agent: bool, turns: usize) {
    let runtime = runtime();
    let (first, second) = turn_bodies(TWO_CALLS);
    let url = serve_pair(&runtime, first, second);
    let side = if agent { "agent" } else { "floor" };
    // Only the side measured is built: each holds an HTTP client with its own TLS roots and
    // session cache (about 80 KB of heap), which the other side's process would carry unused.
    let (agent, floor) = if agent {
        (Some(turn_agent(&url, None)), None)
    } else {
        (None, Some(Floor::new(url)))
    };
    let status = |key: &str| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .map(|kb| kb.trim().to_owned())
            .unwrap_or_default()
    };
    println!("{side}: turn 0: VmRSS {}", status("VmRSS:"));
    for turn in 1..=turns {
        if let Some(agent) = &agent {
            let result = runtime.block_on(agent.run(INPUT));
            assert_eq!(result.status, TurnStatus::Completed);
        } else if let Some(floor) = &floor {
            black_box(runtime.block_on(floor.turn(Vec::new())));
        }
        if turn.is_multiple_of(1000) {
            // Resident memory, split into the heap and stacks (`RssAnon`) and the pages of
            // the binary and libraries the process touched (`RssFile`).
            println!(
                "{side}: turn {turn}: VmRSS {}, VmHWM {}, RssAnon {}, RssFile {}",
                status("VmRSS:"),
                status("VmHWM:"),
                status("RssAnon:"),
                status("RssFile:")
            );
        }
    }
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
    serve_by(runtime, first, after_tools, |request| {
        let needle = br#""role":"tool""#;
        request.windows(needle.len()).any(|w| w == needle)
    })
}

/// Serves `first` to a request whose last message is not a tool result and `after_tools` to
/// one whose last message is: each turn of a conversation whose history holds earlier turns'
/// results.
fn serve_turns(runtime: &Runtime, first: Vec<u8>, after_tools: Vec<u8>) -> String {
    serve_by(runtime, first, after_tools, |request| {
        let role = br#""role":""#;
        let last = request.windows(role.len()).rposition(|w| w == role);
        last.is_some_and(|at| request[at + role.len()..].starts_with(b"tool\""))
    })
}

/// Serves `after_tools` to a request `answered` says has its tool results, `first` to others.
fn serve_by(
    runtime: &Runtime,
    first: Vec<u8>,
    after_tools: Vec<u8>,
    answered: fn(&[u8]) -> bool,
) -> String {
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
                        let body = if answered(request) { &bodies.1 } else { &bodies.0 };
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

/// The tool calls of the standard whole turn.
const TWO_CALLS: usize = 2;
/// Tool calls in step one, for the per-call cost (the slope between the rows; the same noise in
/// a turn's time moves a slope over the 30 calls from 2 to 32 five times less than one over the
/// 6 from 2 to 8).
const CALLS: &[usize] = &[1, 2, 4, 8, 32];
/// Messages of history before the turn, for the growth curve.
const HISTORY: &[usize] = &[10, 100, 1000];
/// Messages of a long conversation before its first timed turn.
const CONVERSATION: usize = 1000;

/// Step one: `calls` tool calls (weather and time in turn). Step two (after the tool results):
/// fifty text chunks.
fn turn_bodies(calls: usize) -> (Vec<u8>, Vec<u8>) {
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
    for index in 0..calls {
        let name = if index.is_multiple_of(2) {
            "get_weather"
        } else {
            "get_time"
        };
        let id = format!("call_{}", index + 1);
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

/// The turn's user input.
const INPUT: &str = "Weather and time in Oslo?";

/// Message `i` of an earlier conversation: questions and answers in turn, about 60 bytes each.
fn earlier(i: usize) -> (&'static str, String) {
    if i.is_multiple_of(2) {
        (
            "user",
            format!("Question {i}: what should I pack for a trip to Oslo?"),
        )
    } else {
        (
            "assistant",
            format!("Answer {i}: a warm coat, good shoes and an umbrella."),
        )
    }
}

/// Stores the first `n` messages of [`earlier`] in `session` of `store`.
async fn seed(store: &dyn agent_core::SessionStore, session: &str, n: usize) {
    use agent_core::{Message, NewMessage};
    for i in 0..n {
        let message = match earlier(i) {
            ("user", text) => Message::user(text),
            (_, text) => Message::assistant(text),
        };
        let row = NewMessage::completed(message);
        store.insert(session, row).await.expect("seed");
    }
}

/// The first `n` messages of [`earlier`], as the floor keeps them.
fn floor_history(n: usize) -> Vec<FloorMessage> {
    (0..n)
        .map(|i| {
            let (role, text) = earlier(i);
            FloorMessage::text(role, text)
        })
        .collect()
}

/// The agent of a whole turn: `OpenAi` against `url`, the two tools, a before/after tool hook
/// pair and an on_chunk hook.
fn turn_agent(url: &str, store: Option<Arc<dyn agent_core::SessionStore>>) -> agent_core::Agent {
    use agent_core::{Hook, Matcher, event};
    let mut builder = bare_builder(url)
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
        }));
    if let Some(store) = store {
        builder = builder.store(store);
    }
    builder.build().expect("agent")
}

/// The bench agent's model and tools, without hooks or a store.
fn bare_builder(url: &str) -> AgentBuilder {
    let model = OpenAi::new("bench-key")
        .base_url(format!("{url}/v1"))
        .model("bench");
    AgentBuilder::new("bench")
        .model(model)
        .tool(get_weather_tool::GetWeather)
        .tool(get_time_tool::GetTime)
}

/// The whole stack: an agent turn through `OpenAi` with two tool calls, fifty streamed text
/// chunks, a before/after tool hook pair and an on_chunk hook.
#[divan::bench(sample_count = 200)]
fn whole_turn_agent(bencher: Bencher) {
    whole_turn_calls_agent(bencher, TWO_CALLS);
}

/// The floor: a hand-written client doing the same two HTTP exchanges with reqwest and serde,
/// calling the two tool functions directly; each request body is built as a JSON tree
/// (`serde_json::json!`) and then written, as this benchmark's floor always did.
#[divan::bench(sample_count = 200)]
fn whole_turn_floor(bencher: Bencher) {
    let runtime = runtime();
    let (first, second) = turn_bodies(TWO_CALLS);
    let url = serve_pair(&runtime, first, second);
    let floor = Floor::new(url).json_tree();
    bencher.bench_local(|| black_box(runtime.block_on(floor.turn(Vec::new()))));
}

/// The tighter floor: [`whole_turn_floor`] with each request body serialized straight from
/// typed structs, as the calls and history variants do.
#[divan::bench(sample_count = 200)]
fn whole_turn_floor_typed(bencher: Bencher) {
    whole_turn_calls_floor(bencher, TWO_CALLS);
}

/// [`whole_turn_agent`] with `calls` tool calls in step one: the slope is the cost of one more
/// call with its before/after hooks.
#[divan::bench(args = CALLS, sample_count = 200)]
fn whole_turn_calls_agent(bencher: Bencher, calls: usize) {
    agent_turns(bencher, calls, |url| turn_agent(url, None));
}

/// [`whole_turn_agent`] on a store that keeps nothing ([`no_store::NoStore`]): set beside
/// `whole_turn_agent`, which runs on the default store (`MemoryStore`), what that store adds
/// to a whole turn.
#[divan::bench(sample_count = 200)]
fn whole_turn_agent_no_store(bencher: Bencher) {
    agent_turns(bencher, TWO_CALLS, |url| {
        turn_agent(url, Some(Arc::new(no_store::NoStore::default())))
    });
}

/// The engine's skeleton: [`whole_turn_agent`]'s turn with neither hooks nor a store (on
/// [`no_store::NoStore`]). Set beside `whole_turn_agent` and `whole_turn_floor_typed`, it
/// splits the agent's cost over the floor between the engine's own path and what its hooks
/// and its store add (docs/performance.md, twentieth pass).
#[divan::bench(sample_count = 200)]
fn whole_turn_agent_bare(bencher: Bencher) {
    agent_turns(bencher, TWO_CALLS, |url| {
        bare_builder(url)
            .store(Arc::new(no_store::NoStore::default()))
            .build()
            .expect("agent")
    });
}

/// Whole turns of the agent `make` builds for the mock server's address, with `calls` tool
/// calls in step one.
fn agent_turns(bencher: Bencher, calls: usize, make: impl FnOnce(&str) -> agent_core::Agent) {
    let runtime = runtime();
    let (first, second) = turn_bodies(calls);
    let url = serve_pair(&runtime, first, second);
    let agent = make(&url);
    bencher.bench_local(|| {
        let result = runtime.block_on(agent.run(INPUT));
        assert_eq!(result.status, TurnStatus::Completed);
        black_box(result)
    });
}

/// [`whole_turn_calls_agent`] with typed hooks instead of untyped ones: a before/after pair on
/// each tool, reading its own arguments type (the form `#[agent]` resolves a matcher to), so
/// no call's input or output is turned into JSON for a hook. The slope against
/// [`whole_turn_calls_agent`]'s is what the untyped hooks' JSON costs per call.
#[divan::bench(args = CALLS, sample_count = 200)]
fn whole_turn_calls_agent_typed(bencher: Bencher, calls: usize) {
    use agent_core::{Hook, Matcher, event};
    use get_time_tool::GetTimeArgs;
    use get_weather_tool::GetWeatherArgs;
    agent_turns(bencher, calls, |url| {
        bare_builder(url)
            .before_tool_call(
                Matcher::tool("get_weather"),
                Hook::<event::BeforeToolCall<GetWeatherArgs>>::sync("gate weather", |ctx| {
                    black_box(&ctx.input.city);
                }),
            )
            .before_tool_call(
                Matcher::tool("get_time"),
                Hook::<event::BeforeToolCall<GetTimeArgs>>::sync("gate time", |ctx| {
                    black_box(&ctx.input.city);
                }),
            )
            .after_tool_call(
                Matcher::tool("get_weather"),
                Hook::<event::AfterToolCall<GetWeatherArgs, String>>::sync(
                    "audit weather",
                    |ctx| {
                        black_box(ctx.success());
                    },
                ),
            )
            .after_tool_call(
                Matcher::tool("get_time"),
                Hook::<event::AfterToolCall<GetTimeArgs, String>>::sync("audit time", |ctx| {
                    black_box(ctx.success());
                }),
            )
            .hook(Hook::<event::OnChunk>::sync("meter", |ctx| {
                black_box(&ctx.chunk);
            }))
            .build()
            .expect("agent")
    });
}

/// [`whole_turn_floor`] with `calls` tool calls in step one.
#[divan::bench(args = CALLS, sample_count = 200)]
fn whole_turn_calls_floor(bencher: Bencher, calls: usize) {
    let runtime = runtime();
    let (first, second) = turn_bodies(calls);
    let url = serve_pair(&runtime, first, second);
    let floor = Floor::new(url);
    bencher.bench_local(|| black_box(runtime.block_on(floor.turn(Vec::new()))));
}

/// [`whole_turn_agent`] in a session that already holds `history` messages (stored, untimed,
/// in a fresh session of a `MemoryStore` for each turn): the engine loads them, and sends them
/// in both requests.
#[divan::bench(args = HISTORY, sample_count = 100)]
fn whole_turn_history_agent(bencher: Bencher, history: usize) {
    use agent_core::MemoryStore;
    let runtime = runtime();
    let (first, second) = turn_bodies(TWO_CALLS);
    let url = serve_pair(&runtime, first, second);
    let store = Arc::new(MemoryStore::new());
    let agent = turn_agent(&url, Some(store.clone()));
    let mut sessions = 0;
    bencher
        .with_inputs(|| {
            sessions += 1;
            let session = format!("s{sessions}");
            runtime.block_on(seed(&*store, &session, history));
            agent.session(session)
        })
        .bench_local_values(|conversation| {
            let result = runtime.block_on(conversation.run(INPUT));
            assert_eq!(result.status, TurnStatus::Completed);
            black_box(result)
        });
}

/// [`whole_turn_floor`] over a conversation of `history` messages (held in memory, handed over
/// untimed), sent in both requests.
#[divan::bench(args = HISTORY, sample_count = 100)]
fn whole_turn_history_floor(bencher: Bencher, history: usize) {
    let runtime = runtime();
    let (first, second) = turn_bodies(TWO_CALLS);
    let url = serve_pair(&runtime, first, second);
    let floor = Floor::new(url);
    let messages = floor_history(history);
    bencher
        .with_inputs(|| messages.clone())
        .bench_local_values(|history| black_box(runtime.block_on(floor.turn(history))));
}

/// Turns of one conversation that began with 1,000 messages and keeps every turn's (five a
/// turn: the input, the call, its two results, the answer), as a long-lived session does: its
/// history is neither loaded from scratch nor freed per turn. The agent's session is in a
/// `MemoryStore`, which lends its history to each turn and takes it back; one turn a sample,
/// so both sides' histories grow alike (from 1,000 to 1,500 messages over the samples).
#[divan::bench(sample_count = 100, sample_size = 1)]
fn whole_turn_conversation_agent(bencher: Bencher) {
    use agent_core::MemoryStore;
    let runtime = runtime();
    let (first, second) = turn_bodies(TWO_CALLS);
    let url = serve_turns(&runtime, first, second);
    let store = Arc::new(MemoryStore::new());
    let agent = turn_agent(&url, Some(store.clone()));
    let conversation = agent.session("conversation");
    runtime.block_on(seed(&*store, "conversation", CONVERSATION));
    bencher.bench_local(|| {
        let result = runtime.block_on(conversation.run(INPUT));
        assert_eq!(result.status, TurnStatus::Completed);
        black_box(result)
    });
}

/// [`whole_turn_conversation_agent`] for the floor: its conversation in its own vector.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn whole_turn_conversation_floor(bencher: Bencher) {
    let runtime = runtime();
    let (first, second) = turn_bodies(TWO_CALLS);
    let url = serve_turns(&runtime, first, second);
    let floor = Floor::new(url);
    let mut messages = floor_history(CONVERSATION);
    bencher.bench_local(|| black_box(runtime.block_on(floor.converse(&mut messages))));
}

#[derive(Clone, serde::Serialize)]
struct FloorMessage {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<FloorToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
}

#[derive(Clone, serde::Serialize)]
struct FloorToolCall {
    id: String,
    r#type: &'static str,
    function: FloorCalled,
}

#[derive(Clone, serde::Serialize)]
struct FloorCalled {
    name: String,
    arguments: String,
}

/// The request body, serialized straight from the history (no JSON tree in between).
#[derive(serde::Serialize)]
struct FloorRequest<'a> {
    model: &'a str,
    messages: &'a [FloorMessage],
    stream: bool,
    stream_options: IncludeUsage,
    tools: &'a [serde_json::Value],
    tool_choice: &'a str,
}

/// `stream_options`: usage in the stream's last chunk, as `OpenAi` asks for it.
#[derive(serde::Serialize)]
struct IncludeUsage {
    include_usage: bool,
}

impl FloorMessage {
    fn text(role: &'static str, content: String) -> Self {
        FloorMessage {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
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

/// The hand-written client: reqwest, sse-stream and serde, the tool functions called directly.
struct Floor {
    client: reqwest::Client,
    url: String,
    tools: Vec<serde_json::Value>,
    /// Builds each request body as a JSON tree first (`serde_json::json!`).
    tree: bool,
}

impl Floor {
    fn new(url: String) -> Self {
        // The tools as `OpenAi` declares them (description, schema with `required` and
        // `additionalProperties`): both sides send the same bytes.
        let tool = |name: &str, description: &str| serde_json::json!({"type": "function", "function": {"name": name, "description": description, "parameters": {"additionalProperties": false, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}}});
        let tools = vec![
            tool("get_weather", "The weather in a city."),
            tool("get_time", "The local time in a city."),
        ];
        Floor {
            client: reqwest::Client::new(),
            url,
            tools,
            tree: false,
        }
    }

    /// Builds each request body as a JSON tree, then writes it.
    fn json_tree(self) -> Self {
        Floor { tree: true, ..self }
    }

    /// One turn after `messages`: the input, a call whose tool calls it runs, a second call
    /// with the whole history; gives the answer's text.
    async fn turn(&self, mut messages: Vec<FloorMessage>) -> String {
        self.steps(&mut messages).await
    }

    /// [`Floor::turn`] in a conversation that goes on: the turn's messages, its answer too,
    /// stay in `messages`.
    async fn converse(&self, messages: &mut Vec<FloorMessage>) -> String {
        let answer = self.steps(messages).await;
        messages.push(FloorMessage::text("assistant", answer.clone()));
        answer
    }

    /// The turn's two calls, its messages pushed onto `messages` up to its answer; gives the
    /// answer's text.
    async fn steps(&self, messages: &mut Vec<FloorMessage>) -> String {
        messages.push(FloorMessage::text("user", INPUT.to_owned()));
        let (text, calls) = self.call(messages).await;
        messages.push(FloorMessage {
            role: "assistant",
            content: Some(text),
            tool_calls: calls
                .iter()
                .map(|(id, name, arguments)| FloorToolCall {
                    id: id.clone(),
                    r#type: "function",
                    function: FloorCalled {
                        name: name.clone(),
                        arguments: arguments.clone(),
                    },
                })
                .collect(),
            tool_call_id: None,
        });
        for (id, name, arguments) in &calls {
            let args: CityArgs = serde_json::from_str(arguments).expect("arguments");
            let output = if name == "get_weather" {
                get_weather(args.city)
            } else {
                get_time(args.city)
            };
            messages.push(FloorMessage {
                role: "tool",
                content: Some(output),
                tool_calls: Vec::new(),
                tool_call_id: Some(id.clone()),
            });
        }
        self.call(messages).await.0
    }

    /// One streamed call: text and tool calls (id, name, arguments).
    async fn call(&self, messages: &[FloorMessage]) -> (String, Vec<(String, String, String)>) {
        let request = FloorRequest {
            model: "bench",
            messages,
            stream: true,
            stream_options: IncludeUsage {
                include_usage: true,
            },
            tools: &self.tools,
            tool_choice: "auto",
        };
        let body = if self.tree {
            let tree = serde_json::json!({"model": "bench", "messages": messages, "stream": true, "stream_options": {"include_usage": true}, "tools": &self.tools, "tool_choice": "auto"});
            serde_json::to_vec(&tree)
        } else {
            serde_json::to_vec(&request)
        };
        let body = body.expect("json");
        // The headers `OpenAi` sends.
        let response = self
            .client
            .post(format!("{}/v1/chat/completions", self.url))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .bearer_auth("bench-key")
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
}
