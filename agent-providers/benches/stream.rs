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
