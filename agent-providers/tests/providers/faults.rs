//! What real APIs do, one fault per test, over real sockets in OpenAI's format: rate limits,
//! outages, errors never worth retrying, refused connections, silence, and streams that end
//! early, carry corrupt chunks, break or stall. Transient faults are retried (a broken stream as
//! a whole step, its partial output discarded); the rest fail at once with a typed error that
//! keeps the provider's body and never the API key.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Reply, TestServer, collect, request, settings, split};
use agent_core::{
    Agent, AgentBuilder, Chunk, ErrorStage, FnTool, Hook, Model, ModelErrorKind, ModelEvent,
    TurnConfig, TurnErrorKind, TurnEvent, TurnStatus, event,
};
use agent_providers::{HttpSettings, OpenAi};
use futures_core::Stream;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KEY: &str = "sk-proj-SECRET-0123456789abcdef";

fn client_at(url: &str, settings: HttpSettings) -> OpenAi {
    OpenAi::new(KEY)
        .base_url(format!("{url}/v1"))
        .model("gpt-test")
        .settings(settings)
}

fn client(server: &TestServer, max_retries: u32) -> OpenAi {
    client_at(&server.url, settings(max_retries))
}

/// A chunk with a text delta.
fn text(delta: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": null}]})
    )
}

/// The end of a stream: finish reason, usage, `[DONE]`.
fn end(reason: &str) -> String {
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]});
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}});
    format!("data: {finish}\n\ndata: {usage}\n\ndata: [DONE]\n\n")
}

/// A complete answer.
fn answer(words: &str) -> String {
    format!("{}{}", text(words), end("stop"))
}

fn ok(words: &str) -> Reply {
    Reply::sse_split(&answer(words), 16)
}

/// The visible text of some events, after the last discard (what a reader keeps).
fn text_of(events: &[ModelEvent]) -> String {
    let kept = events
        .iter()
        .rposition(|event| matches!(event, ModelEvent::Discard { .. }))
        .map_or(0, |i| i + 1);
    events[kept..]
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta(delta) => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn status(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Status {
        status,
        headers: headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
        body: body.to_owned(),
    }
}

/// The model call succeeds after one failed request.
async fn recovers_from(first: Reply) -> (Vec<ModelEvent>, TestServer) {
    let server = TestServer::start([first, ok("Recovered.")]).await;
    let (events, error) = collect(client(&server, 2).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Recovered.");
    assert_eq!(server.requests().len(), 2);
    (events, server)
}

#[tokio::test]
async fn rate_limit_with_retry_after_zero_is_retried() {
    let body = r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}"#;
    let (events, _) = recovers_from(status(429, &[("retry-after", "0")], body)).await;
    // Nothing had streamed: nothing to discard.
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ModelEvent::Discard { .. }))
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_ms_is_retried_and_long_delays_are_capped() {
    let body = r#"{"error":{"message":"Rate limit reached","type":"tokens","code":"rate_limit_exceeded"}}"#;
    recovers_from(status(429, &[("retry-after-ms", "5")], body)).await;
    // An hour asked for is capped at max_backoff (20 ms here), so the test returns.
    recovers_from(status(429, &[("retry-after", "3600")], body)).await;
}

#[tokio::test]
async fn server_error_500_is_retried() {
    recovers_from(Reply::status(
        500,
        r#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
    ))
    .await;
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    recovers_from(Reply::status(
        529,
        r#"{"error":{"message":"Overloaded","type":"overloaded_error"}}"#,
    ))
    .await;
}

/// A status never worth retrying fails at once, with its kind, status and body.
async fn fails_once(code: u16, body: &str, kind: ModelErrorKind) {
    let server = TestServer::start([Reply::status(code, body), ok("never")]).await;
    let (events, error) = collect(client(&server, 2).stream(request())).await;
    assert!(events.is_empty(), "{events:?}");
    let error = error.expect("the call fails");
    assert_eq!(error.kind, kind, "{error:?}");
    assert_eq!(error.status, Some(code));
    assert!(
        error.message.contains(body),
        "the provider's body is kept: {}",
        error.message
    );
    assert_eq!(server.requests().len(), 1, "never retried");
}

#[tokio::test]
async fn bad_request_400_is_not_retried() {
    let body = r#"{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}"#;
    fails_once(400, body, ModelErrorKind::BadRequest).await;
}

#[tokio::test]
async fn unauthorized_401_is_not_retried() {
    let body = r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    fails_once(401, body, ModelErrorKind::Authentication).await;
}

#[tokio::test]
async fn not_found_404_is_not_retried() {
    let body = r#"{"error":{"message":"The model `gpt-9` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#;
    fails_once(404, body, ModelErrorKind::BadRequest).await;
}

/// A 404 is as often a base URL that misses its path (Ollama's `/v1`) as a model the server
/// lacks, and a server's own page may not say which: the error names where the request went
/// (its query left out, which may carry a key), so a wrong base URL shows.
#[tokio::test]
async fn not_found_404_names_the_url_it_was_sent_to() {
    let server = TestServer::start([Reply::status(404, "404 page not found")]).await;
    let client = OpenAi::new(KEY)
        .base_url(format!("{}/api?key=hunter2", server.url))
        .model("gpt-test")
        .settings(settings(0));
    let (_, error) = collect(client.stream(request())).await;
    let error = error.expect("the call fails");
    assert_eq!(
        error.message,
        format!(
            "openai: HTTP 404 Not Found: 404 page not found (sent to `{}/api/chat/completions`)",
            server.url
        )
    );
}

#[tokio::test]
async fn unprocessable_422_is_not_retried() {
    fails_once(
        422,
        r#"{"object":"error","message":"tools[0] is invalid","type":"BadRequestError","code":422}"#,
        ModelErrorKind::BadRequest,
    )
    .await;
}

#[tokio::test]
async fn context_overflow_is_its_own_kind_and_not_retried() {
    let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    fails_once(400, body, ModelErrorKind::ContextOverflow).await;
}

/// Some proxies send an error as a JSON body with status 200: its body is kept whole (up to
/// 8 KiB, as an error status's), and a context overflow in it is not sent again.
#[tokio::test]
async fn a_context_overflow_sent_as_json_with_status_200_is_one_and_not_retried() {
    let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    fails_once(200, body, ModelErrorKind::ContextOverflow).await;
}

#[tokio::test]
async fn retries_are_bounded() {
    let server =
        TestServer::start((0..4).map(|_| Reply::status(500, r#"{"error":{"message":"down"}}"#)))
            .await;
    let (_, error) = collect(client(&server, 2).stream(request())).await;
    let error = error.expect("the call fails once retries are spent");
    assert_eq!(
        (error.kind, error.status),
        (ModelErrorKind::Server, Some(500))
    );
    assert_eq!(server.requests().len(), 3, "the request and two retries");
}

/// A server may report any token count: one past `u64` is read as `u64::MAX`, and a run's
/// token budget still counts it (saturating), ending the run past its budget rather than
/// overflowing the sum of input and output tokens.
#[tokio::test]
async fn a_usage_past_u64_ends_a_budgeted_run_without_overflowing() {
    let finish =
        json!({"choices": [{"index": 0, "delta": {"content": "Hi."}, "finish_reason": "stop"}]});
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 1e30, "completion_tokens": 3}});
    let body = format!("data: {finish}\n\ndata: {usage}\n\ndata: [DONE]\n\n");
    let server = TestServer::start([Reply::sse_split(&body, 16)]).await;
    let agent = AgentBuilder::new("budgeted")
        .model(client(&server, 0))
        .build()
        .unwrap();
    let result = agent
        .run(agent_core::TurnRequest::new("hi").budget(agent_core::Budget::tokens(1_000)))
        .await;
    assert_eq!(result.usage.input_tokens, u64::MAX);
    assert_eq!(result.usage.total_tokens(), u64::MAX);
    let error = result.error.expect("the run is past its budget");
    assert_eq!(
        error.kind,
        TurnErrorKind::Limit(agent_core::StopReason::MaxBudget),
        "{error:?}"
    );
    assert_eq!(
        error.message,
        format!("the run spent {} tokens, past its budget of 1000", u64::MAX)
    );
}

/// Counts the warnings providers log (one per retry) while it is the thread's subscriber.
struct RetryCounter(Arc<AtomicUsize>);

impl tracing::Subscriber for RetryCounter {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() == tracing::Level::WARN
            && metadata.target().starts_with("agent_providers")
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// A base URL may carry a gateway's key in its query (`?key=...`): a call that cannot reach
/// the server names where it went without it, as the API key is never shown.
#[tokio::test]
async fn a_transport_error_leaves_the_query_of_the_url_out() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    drop(listener);
    let client = OpenAi::new(KEY)
        .base_url(format!("{url}/v1?key=hunter2"))
        .model("gpt-test")
        .settings(settings(0));
    let (_, error) = collect(client.stream(request())).await;
    let error = error.expect("the call fails");
    assert_eq!(error.kind, ModelErrorKind::Transport, "{error:?}");
    assert!(!error.message.contains("hunter2"), "{}", error.message);
    assert!(
        error
            .message
            .contains(&format!("{url}/v1/chat/completions")),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn connection_refused_is_a_transport_error_and_retried() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    drop(listener);
    let retries = Arc::new(AtomicUsize::new(0));
    let _guard = tracing::subscriber::set_default(RetryCounter(retries.clone()));
    // tracing caches each callsite's interest process-wide: a test on another thread that
    // reaches the retry warning first, with no subscriber, may cache it as off while this
    // subscriber registers (a registration that began before this subscriber did and ends
    // after a recomputation keeps "off": seen once in CI). So the warning is reached once
    // first, which finishes its registration whoever began it, and its interest recomputed
    // after: then every retry of the counted run reaches this subscriber.
    let _ = collect(client_at(&url, settings(2)).stream(request())).await;
    tracing::callsite::rebuild_interest_cache();
    retries.store(0, Ordering::SeqCst);
    let (events, error) = collect(client_at(&url, settings(2)).stream(request())).await;
    assert!(events.is_empty());
    let error = error.expect("nothing listens there");
    assert_eq!(error.kind, ModelErrorKind::Transport, "{error:?}");
    assert_eq!(error.status, None);
    assert_eq!(
        retries.load(Ordering::SeqCst),
        2,
        "retried twice before giving up"
    );
}

#[tokio::test]
async fn no_first_byte_is_a_timeout_and_retried() {
    let server = TestServer::start([
        Reply::Silence(Duration::from_secs(30)),
        ok("Late but here."),
    ])
    .await;
    let openai = client_at(
        &server.url,
        HttpSettings {
            first_byte_timeout: Duration::from_millis(300),
            ..settings(1)
        },
    );
    let (events, error) = collect(openai.stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Late but here.");
    assert_eq!(server.requests().len(), 2);
    // Without a retry left, the silence is a timeout.
    let server = TestServer::start([Reply::Silence(Duration::from_secs(30))]).await;
    let openai = client_at(
        &server.url,
        HttpSettings {
            first_byte_timeout: Duration::from_millis(300),
            ..settings(0)
        },
    );
    let (_, error) = collect(openai.stream(request())).await;
    assert_eq!(error.map(|error| error.kind), Some(ModelErrorKind::Timeout));
}

#[tokio::test]
async fn a_stream_without_done_is_truncated_even_with_a_finish_reason() {
    let cut = format!(
        "{}data: {}\n\n",
        text("Half an answer"),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    );
    let server = TestServer::start([Reply::sse_split(&cut, 16)]).await;
    let (events, error) = collect(client(&server, 0).stream(request())).await;
    assert_eq!(text_of(&events), "Half an answer");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ModelEvent::Finish(_))),
        "{events:?}"
    );
    assert_eq!(
        error.map(|error| error.kind),
        Some(ModelErrorKind::StreamTruncated)
    );
}

/// Chunks as the engine's observers describe them.
fn describe(chunk: &Chunk) -> String {
    match chunk {
        Chunk::TextDelta(delta) => format!("text:{delta}"),
        Chunk::ReasoningDelta(delta) => format!("reasoning:{delta}"),
        Chunk::Discarded { .. } => "discarded".to_owned(),
        Chunk::ToolInputStart { id, name } => format!("tool_start:{id} {name}"),
        Chunk::ToolInputDelta { id, .. } => format!("tool_input:{id}"),
        Chunk::ToolCall(call) => format!("tool_call:{} {}", call.id, call.name),
        Chunk::ToolResult { id, .. } => format!("tool_result:{id}"),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn a_truncated_stream_is_retried_as_a_whole_step_and_its_tool_never_runs() {
    // The broken attempt streams a complete tool call, its finish reason and usage, then ends
    // without `[DONE]`.
    let call = [
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_boom", "type": "function", "function": {"name": "launch", "arguments": ""}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"target\":\"moon\"}"}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
    ];
    let truncated: String = call
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    let server = TestServer::start([Reply::sse_split(&truncated, 16), ok("Not launching.")]).await;
    let launches = Arc::new(AtomicUsize::new(0));
    let counter = launches.clone();
    let observed = Arc::new(Mutex::new(Vec::new()));
    let seen = observed.clone();
    let agent = AgentBuilder::new("launcher")
        .model(client(&server, 2))
        .dyn_tool(FnTool::new(
            "launch",
            "Launch.",
            json!({"type": "object", "properties": {}}),
            move |_, _| {
                counter.fetch_add(1, Ordering::SeqCst);
                async move { Ok(json!("launched")) }
            },
        ))
        .hook(Hook::<event::OnChunk>::sync("observe", move |ctx| {
            seen.lock().unwrap().push(describe(&ctx.chunk))
        }))
        .build()
        .expect("the agent builds");
    let mut stream = agent.conversation().stream("launch?");
    let mut streamed = Vec::new();
    let mut result = None;
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::Chunk { chunk, .. } => streamed.push(describe(&chunk)),
            TurnEvent::Finished(finished) => result = Some(finished),
            _ => {}
        }
    }
    let result = result.expect("the stream ends with Finished");
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(result.text, "Not launching.");
    assert_eq!(
        launches.load(Ordering::SeqCst),
        0,
        "a tool never runs from a broken stream"
    );
    assert_eq!(result.steps.len(), 1);
    assert!(result.steps[0].tool_calls.is_empty());
    let expected = [
        "tool_start:call_boom launch",
        "tool_input:call_boom",
        "tool_call:call_boom launch",
        "discarded",
        "text:Not launching.",
    ];
    assert_eq!(*observed.lock().unwrap(), expected, "on_chunk");
    assert_eq!(streamed, expected, "the stream API");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_malformed_chunk_is_retried() {
    let corrupt = format!(
        "{}{}",
        text("Partial "),
        "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"x\"}\n\n"
    );
    // The bad frame in a later read than the good one, and in the same read: either way the
    // good frame's event is handed out, then the discard, and nothing of the bad frame.
    for read in [16, corrupt.len()] {
        let (events, _) = recovers_from(Reply::sse_split(&corrupt, read)).await;
        let ModelEvent::Discard { reason } = &events[1] else {
            panic!("a discard after the partial text: {events:?}")
        };
        assert!(reason.contains("malformed"), "{reason}");
        assert_eq!(events[0], ModelEvent::TextDelta("Partial ".into()));
    }
    // Without a retry left, the kind shows.
    let server = TestServer::start([Reply::sse_split(&corrupt, 16)]).await;
    let (_, error) = collect(client(&server, 0).stream(request())).await;
    assert_eq!(
        error.map(|error| error.kind),
        Some(ModelErrorKind::StreamMalformed)
    );
}

#[tokio::test]
async fn a_disconnect_mid_stream_is_retried() {
    let partial = split(text("Hello wor").as_bytes(), 4);
    let (events, _) = recovers_from(Reply::SseThenDisconnect(partial.clone())).await;
    assert!(
        matches!(&events[1], ModelEvent::Discard { .. }),
        "{events:?}"
    );
    let server = TestServer::start([Reply::SseThenDisconnect(partial)]).await;
    let (events, error) = collect(client(&server, 0).stream(request())).await;
    assert_eq!(text_of(&events), "Hello wor");
    assert_eq!(
        error.map(|error| error.kind),
        Some(ModelErrorKind::Disconnected)
    );
}

#[tokio::test]
async fn a_stalled_stream_is_a_timeout_and_retried() {
    let stall = || Reply::SseThenStall(split(text("Hmm").as_bytes(), 8), Duration::from_secs(30));
    let fast_idle = |retries| HttpSettings {
        idle_timeout: Duration::from_millis(200),
        ..settings(retries)
    };
    let server = TestServer::start([stall(), ok("Unstuck.")]).await;
    let (events, error) = collect(client_at(&server.url, fast_idle(1)).stream(request())).await;
    assert_eq!(error, None);
    assert!(
        matches!(&events[1], ModelEvent::Discard { reason } if reason.contains("stalled")),
        "{events:?}"
    );
    assert_eq!(text_of(&events), "Unstuck.");
    assert_eq!(server.requests().len(), 2);
    let server = TestServer::start([stall()]).await;
    let (_, error) = collect(client_at(&server.url, fast_idle(0)).stream(request())).await;
    assert_eq!(error.map(|error| error.kind), Some(ModelErrorKind::Timeout));
}

/// An answer of 40 text chunks ("0 ", "1 ", ...) `every` so long apart, after `wait`, ended
/// properly: 2 s in all at 50 ms apart.
fn trickle(wait: Duration, every: Duration) -> Reply {
    let mut pieces: Vec<Vec<u8>> = (0..40)
        .map(|i| text(&format!("{i} ")).into_bytes())
        .collect();
    pieces.push(end("stop").into_bytes());
    Reply::Trickle {
        wait,
        pieces,
        every,
    }
}

/// What a call of `total` total timeout ends with when it runs out of it.
fn overran(total: &str) -> String {
    format!(
        "openai: the call ran past its total timeout of {total}, from its request to the end \
         of its stream"
    )
}

/// Chunks that come faster than the idle timeout do not hold a call past its total timeout:
/// the attempt ends as a timeout naming it, retried as a stall is, and the call's last error
/// when no retry is left.
#[tokio::test]
async fn a_trickle_past_the_total_timeout_is_a_timeout_and_retried() {
    let settings = |retries| HttpSettings {
        idle_timeout: Duration::from_millis(500),
        total_timeout: Duration::from_millis(600),
        ..settings(retries)
    };
    let every = Duration::from_millis(50);
    let server = TestServer::start([trickle(Duration::ZERO, every), ok("Done.")]).await;
    let (events, error) = collect(client_at(&server.url, settings(1)).stream(request())).await;
    assert_eq!(error, None);
    // The chunks that came in time, in order, then the discard, then the retry's answer.
    let discard = events
        .iter()
        .position(|event| matches!(event, ModelEvent::Discard { .. }))
        .expect("the attempt is discarded");
    assert!((1..40).contains(&discard), "{events:?}");
    let came: Vec<ModelEvent> = (0..discard)
        .map(|i| ModelEvent::TextDelta(format!("{i} ").into()))
        .collect();
    assert_eq!(events[..discard], came);
    let reason = overran("600 ms");
    assert_eq!(events[discard], ModelEvent::Discard { reason });
    let clean = TestServer::start([ok("Done.")]).await;
    let (answer, _) = collect(client(&clean, 0).stream(request())).await;
    assert_eq!(events[discard + 1..], answer);
    assert_eq!(server.requests().len(), 2);
    // Without a retry left, it ends the call.
    let server = TestServer::start([trickle(Duration::ZERO, every)]).await;
    let (_, error) = collect(client_at(&server.url, settings(0)).stream(request())).await;
    let error = error.expect("the call fails");
    assert_eq!(
        (error.kind, error.message),
        (ModelErrorKind::Timeout, overran("600 ms"))
    );
}

/// An error body trickled a byte at a time does not hold a call past its total timeout
/// (nor does the body of a success that is not a stream): what came by then is kept, cut, in
/// the status's error. The whole body would take 4.5 s; the first-byte timeout is 10 s.
#[tokio::test]
async fn a_trickled_error_body_is_cut_at_the_total_timeout() {
    let settings = HttpSettings {
        total_timeout: Duration::from_millis(600),
        ..settings(0)
    };
    let body = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x".repeat(200));
    for (status, kind, start) in [
        (
            500,
            ModelErrorKind::Server,
            "openai: HTTP 500 Internal Server Error: {\"error\"",
        ),
        (
            200,
            ModelErrorKind::StreamMalformed,
            "openai: expected an event stream, got `application/json`: {\"error\"",
        ),
    ] {
        let every = Duration::from_millis(20);
        let reply = Reply::StatusTrickle {
            status,
            body: body.clone(),
            every,
        };
        let server = TestServer::start([reply]).await;
        let began = std::time::Instant::now();
        let (events, error) =
            collect(client_at(&server.url, settings.clone()).stream(request())).await;
        let elapsed = began.elapsed();
        assert_eq!(events, []);
        let error = error.expect("the call fails");
        assert_eq!(error.kind, kind, "{}", error.message);
        assert!(error.message.starts_with(start), "{}", error.message);
        assert!(
            error.message.ends_with("… [truncated]"),
            "{}",
            error.message
        );
        assert!(
            error.message.len() < start.len() + body.len(),
            "{}",
            error.message
        );
        assert!(elapsed < Duration::from_secs(3), "{status}: {elapsed:?}");
    }
}

/// A zero total timeout is none: a trickle that would run out of a short one ends complete.
#[tokio::test]
async fn a_zero_total_timeout_turns_it_off() {
    let every = Duration::from_millis(10);
    for (total, fails) in [(Duration::from_millis(150), true), (Duration::ZERO, false)] {
        let server = TestServer::start([trickle(Duration::ZERO, every)]).await;
        let settings = HttpSettings {
            total_timeout: total,
            ..settings(0)
        };
        let (events, error) = collect(client_at(&server.url, settings).stream(request())).await;
        assert_eq!(error.is_some(), fails, "{total:?}: {error:?}");
        if !fails {
            let words: String = (0..40).map(|i| format!("{i} ")).collect();
            assert_eq!(text_of(&events), words);
        }
    }
}

/// The total timeout counts from the request: it runs out about `total` after the call
/// starts, whether the response's head came late (not `total` after the head) or not at all
/// (before the first-byte timeout). The bounds are loose: the one a count from the head would
/// break lies 900 ms past the deadline.
#[tokio::test]
async fn the_total_timeout_counts_from_the_request() {
    let total = Duration::from_secs(1);
    let settings = HttpSettings {
        total_timeout: total,
        ..settings(0)
    };
    for wait in [Duration::from_millis(900), Duration::from_secs(5)] {
        let server = TestServer::start([trickle(wait, Duration::from_millis(50))]).await;
        let start = std::time::Instant::now();
        let (_, error) = collect(client_at(&server.url, settings.clone()).stream(request())).await;
        let elapsed = start.elapsed();
        let error = error.expect("the call fails");
        assert_eq!(
            (error.kind, error.message),
            (ModelErrorKind::Timeout, overran("1000 ms")),
            "{wait:?}"
        );
        assert!(
            elapsed >= total && elapsed < total + Duration::from_millis(900),
            "{wait:?}: {elapsed:?}"
        );
    }
}

/// A one-request server whose SSE answer pauses between `before` and `after`.
async fn pausing_server(before: String, pause: Duration, after: String) -> String {
    timed_server(vec![(Duration::ZERO, before), (pause, after)]).await
}

/// A one-request server writing each piece of its SSE answer after its delay.
async fn timed_server(pieces: Vec<(Duration, String)>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut received = Vec::new();
        let mut buffer = [0u8; 4096];
        // The head, then as much body as it announced.
        loop {
            let Ok(read) = socket.read(&mut buffer).await else {
                return;
            };
            if read == 0 {
                return;
            }
            received.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&received).to_ascii_lowercase();
            if let Some(head) = text.find("\r\n\r\n") {
                let length = text
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|value| value.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if received.len() >= head + 4 + length {
                    break;
                }
            }
        }
        let chunk = |body: &str| format!("{:x}\r\n{body}\r\n", body.len());
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = socket.write_all(head.as_bytes()).await;
        for (delay, piece) in pieces {
            tokio::time::sleep(delay).await;
            let _ = socket.write_all(chunk(&piece).as_bytes()).await;
            let _ = socket.flush().await;
        }
        let _ = socket.write_all(b"0\r\n\r\n").await;
        let _ = socket.flush().await;
    });
    url
}

/// An agent on a client whose idle timeout is 100 ms, with a before_turn hook setting
/// `TurnConfig::stall_timeout`.
fn stalling_agent(url: &str, stall_timeout: Option<Duration>) -> Agent {
    let settings = HttpSettings {
        idle_timeout: Duration::from_millis(100),
        ..settings(0)
    };
    AgentBuilder::new("patient")
        .model(client_at(url, settings))
        .hook(Hook::<event::BeforeTurn>::sync("stall", move |_ctx| {
            let mut cfg = TurnConfig::default();
            cfg.stall_timeout = stall_timeout;
            cfg
        }))
        .build()
        .expect("the agent builds")
}

#[tokio::test]
async fn a_turn_stall_timeout_overrides_the_idle_timeout() {
    let pause = Duration::from_millis(400);
    // The client alone gives up on a 400 ms pause...
    let url = pausing_server(text("Slow "), pause, answer("but sure.")).await;
    let result = stalling_agent(&url, None).run("hi").await;
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(
        result.error.map(|error| error.kind),
        Some(TurnErrorKind::Model(ModelErrorKind::Timeout))
    );
    // ...a turn allowing 10 s between chunks waits it out.
    let url = pausing_server(text("Slow "), pause, answer("but sure.")).await;
    let result = stalling_agent(&url, Some(Duration::from_secs(10)))
        .run("hi")
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(result.text, "Slow but sure.");
}

#[tokio::test]
async fn keep_alive_comments_count_as_activity_for_the_idle_timeout() {
    // Fifteen `: keep-alive` comments 40 ms apart: 600 ms without an event, but never the
    // 250 ms idle timeout without a byte (a wide margin for a loaded machine).
    let mut pieces = vec![(Duration::ZERO, text("Thinking, "))];
    pieces.extend((0..15).map(|_| (Duration::from_millis(40), ": keep-alive\n\n".to_owned())));
    pieces.push((Duration::from_millis(40), answer("done.")));
    let url = timed_server(pieces).await;
    let settings = HttpSettings {
        idle_timeout: Duration::from_millis(250),
        ..settings(0)
    };
    let agent = AgentBuilder::new("patient")
        .model(client_at(&url, settings))
        .build()
        .expect("the agent builds");
    let result = agent.run("hi").await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(result.text, "Thinking, done.");
}

#[tokio::test]
async fn a_zero_turn_stall_timeout_turns_the_idle_timeout_off() {
    let url = pausing_server(
        text("Slow "),
        Duration::from_millis(400),
        answer("but sure."),
    )
    .await;
    let result = stalling_agent(&url, Some(Duration::ZERO)).run("hi").await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(result.text, "Slow but sure.");
}

#[tokio::test]
async fn a_timeout_of_duration_max_means_never_and_does_not_panic() {
    // `Duration::MAX` is past what an instant can hold: "never", not an overflow.
    let url = pausing_server(
        text("Slow "),
        Duration::from_millis(200),
        answer("but sure."),
    )
    .await;
    let result = stalling_agent(&url, Some(Duration::MAX)).run("hi").await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(result.text, "Slow but sure.");
    let settings = HttpSettings {
        idle_timeout: Duration::MAX,
        first_byte_timeout: Duration::MAX,
        ..settings(0)
    };
    let url = pausing_server(
        text("Slow "),
        Duration::from_millis(200),
        answer("but sure."),
    )
    .await;
    let (events, error) = collect(client_at(&url, settings).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Slow but sure.");
}

#[tokio::test]
async fn a_broken_stream_past_its_retries_ends_the_turn_in_error_keeping_partial_text() {
    let partial = || {
        Reply::SseThenDisconnect(split(
            format!("{}{}", text("Hello "), text("wor")).as_bytes(),
            8,
        ))
    };
    let server = TestServer::start([partial(), partial()]).await;
    let stages = Arc::new(Mutex::new(Vec::new()));
    let seen = stages.clone();
    let agent = AgentBuilder::new("fragile")
        .model(client(&server, 1))
        .hook(Hook::<event::OnChatError>::sync("record", move |ctx| {
            seen.lock().unwrap().push((
                ctx.stage,
                ctx.error.kind.clone(),
                ctx.partial_text.clone(),
            ));
        }))
        .build()
        .expect("the agent builds");
    let result = agent.run("hi").await;
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(
        result.text, "Hello wor",
        "the last attempt's partial text, once"
    );
    assert_eq!(
        *stages.lock().unwrap(),
        [(
            ErrorStage::Stream,
            TurnErrorKind::Model(ModelErrorKind::Disconnected),
            "Hello wor".to_owned()
        )]
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_error_inside_the_stream_gets_a_fitting_kind() {
    // A server error mid-stream is retried...
    let overloaded = format!(
        "{}data: {}\n\n",
        text("Hal"),
        json!({"error": {"message": "The server is overloaded", "type": "server_error"}})
    );
    let (events, _) = recovers_from(Reply::sse_split(&overloaded, 16)).await;
    assert!(
        matches!(&events[1], ModelEvent::Discard { reason } if reason.contains("overloaded")),
        "{events:?}"
    );
    // ...a context overflow is not.
    let overflow = format!(
        "data: {}\n\n",
        json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}})
    );
    let server = TestServer::start([Reply::sse_split(&overflow, 16), ok("never")]).await;
    let (_, error) = collect(client(&server, 2).stream(request())).await;
    let error = error.expect("the call fails");
    assert_eq!(error.kind, ModelErrorKind::ContextOverflow);
    assert!(
        error.message.contains("maximum context length"),
        "{}",
        error.message
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_api_key_never_appears_in_debug_output_or_errors() {
    let openai = OpenAi::new(KEY);
    assert!(!format!("{openai:?}").contains(KEY));
    assert!(
        !format!(
            "{:?}",
            openai
                .clone()
                .base_url("http://localhost:1")
                .settings(settings(0))
        )
        .contains(KEY)
    );

    // A server echoing the key in an error body, in a status error and inside a stream whose
    // retry is announced with a discard.
    let echo = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","type":"invalid_request_error"}}}}"#
    );
    let in_stream = format!(
        "{}data: {}\n\n",
        text("a"),
        json!({"error": {"message": format!("bad key {KEY}"), "type": "server_error"}})
    );
    let server = TestServer::start([
        Reply::status(401, &echo),
        Reply::sse_split(&in_stream, 16),
        Reply::sse_split(&in_stream, 16),
    ])
    .await;
    let openai = client(&server, 1);
    let (_, error) = collect(openai.stream(request())).await;
    let error = error.expect("401");
    assert_eq!(error.kind, ModelErrorKind::Authentication);
    assert!(
        error
            .message
            .contains("Incorrect API key provided: [redacted]"),
        "{}",
        error.message
    );
    let (events, error) = collect(openai.stream(request())).await;
    let error = error.expect("the in-stream error, twice");
    let texts = events
        .iter()
        .map(|event| format!("{event:?}"))
        .chain([error.message.clone(), format!("{error:?}")]);
    for text in texts {
        assert!(!text.contains(KEY), "the key leaked: {text}");
    }
    assert!(
        events
            .iter()
            .any(|event| matches!(event, ModelEvent::Discard { .. })),
        "{events:?}"
    );
    // The server did receive the key, as a bearer token.
    let expected = format!("Bearer {KEY}");
    assert!(
        server
            .requests()
            .iter()
            .all(|request| request.header("authorization") == Some(expected.as_str()))
    );
    // The model's id is all a client shows of itself through the trait.
    assert_eq!(openai.id(), "gpt-test");
}

#[tokio::test]
async fn a_stall_right_after_the_first_events_ends_the_attempt_within_the_idle_timeout() {
    // Two events, then a pause far longer than the idle timeout, on a real socket.
    let first_events = format!("{}{}", text("Two "), text("events"));
    let stall = Reply::SseThenStall(vec![first_events.into_bytes()], Duration::from_secs(60));
    let server = TestServer::start([stall, ok("Resumed.")]).await;
    let idle = Duration::from_secs(2);
    let settings = HttpSettings {
        idle_timeout: idle,
        ..settings(1)
    };
    let mut stream = client_at(&server.url, settings).stream(request());
    let mut last_byte = None;
    let mut discarded_after = None;
    let mut events = Vec::new();
    while let Some(item) = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)).await {
        let event = item.expect("the retry succeeds");
        match &event {
            ModelEvent::TextDelta(_) if discarded_after.is_none() => {
                last_byte = Some(std::time::Instant::now())
            }
            ModelEvent::Discard { .. } => {
                discarded_after = last_byte.map(|at| at.elapsed());
            }
            _ => {}
        }
        events.push(event);
    }
    let waited = discarded_after.expect("the stalled attempt was discarded");
    // The relation, with room for a busy machine: at the limit, and well before twice it.
    assert!(waited >= idle - Duration::from_millis(50), "{waited:?}");
    assert!(
        waited < idle + idle / 2,
        "waited {waited:?} for an idle timeout of {idle:?}"
    );
    assert_eq!(text_of(&events), "Resumed.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_after_of_infinity_or_1e30_waits_max_backoff_and_retries() {
    for (name, value) in [
        ("retry-after", "inf"),
        ("retry-after", "1e30"),
        ("retry-after-ms", "inf"),
        ("retry-after-ms", "1e30"),
        ("retry-after", "NaN"),
    ] {
        let limited = Reply::Status {
            status: 429,
            headers: vec![(name.to_owned(), value.to_owned())],
            body: r#"{"error":{"message":"slow down"}}"#.to_owned(),
        };
        let server = TestServer::start([limited, ok("Fine.")]).await;
        let (events, error) = collect(client(&server, 1).stream(request())).await;
        assert_eq!(error, None, "{name}: {value}");
        assert_eq!(text_of(&events), "Fine.", "{name}: {value}");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn a_huge_error_body_is_cut_to_eight_kib() {
    let huge = format!(
        r#"{{"error":{{"message":"{}"}}}}"#,
        "é".repeat(3 * 1024 * 1024)
    );
    let server = TestServer::start([Reply::status(500, &huge)]).await;
    let (_, error) = collect(client(&server, 0).stream(request())).await;
    let error = error.expect("a server error");
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert!(
        error.message.ends_with("… [truncated]"),
        "{}",
        &error.message[..100]
    );
    assert!(
        error.message.len() < 8 * 1024 + 100,
        "kept {} bytes",
        error.message.len()
    );
    assert!(
        error
            .message
            .starts_with("openai: HTTP 500 Internal Server Error: {\"error\"")
    );
}

/// A server that sends an event without end (here one `data:` line of 40 MiB with no line
/// end, in 1 MiB reads) fails the attempt as malformed once the event passes 32 MiB, rather
/// than growing the client's buffer for as long as it sends.
#[tokio::test]
async fn an_event_without_end_past_32_mib_is_malformed() {
    let endless = format!("data: {}", "x".repeat(40 * 1024 * 1024));
    let server = TestServer::start([Reply::sse_split(&endless, 1024 * 1024)]).await;
    let (_, error) = collect(client(&server, 0).stream(request())).await;
    let error = error.expect("an error");
    assert_eq!(error.kind, ModelErrorKind::StreamMalformed);
    assert!(
        error
            .message
            .starts_with("openai: malformed stream: an event ran past 32 MiB ("),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_stream_ending_done_without_its_blank_line_is_complete_and_not_retried() {
    // Anthropic's OpenAI-compatible endpoint closes right after `data: [DONE]\n`.
    let whole = answer("Complete.");
    let body = whole.strip_suffix('\n').expect("ends with a blank line");
    let server = TestServer::start([Reply::sse_split(body, 5), ok("never sent")]).await;
    let (events, error) = collect(client(&server, 2).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Complete.");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ModelEvent::Discard { .. }))
    );
    assert_eq!(server.requests().len(), 1);

    // Cut inside the marker's line, or before the finish, it is still truncated.
    for cut in [
        body.len() - 3,
        whole.find("data: [DONE]").expect("a marker"),
    ] {
        let server = TestServer::start([Reply::sse_split(&whole[..cut], 5)]).await;
        let (_, error) = collect(client(&server, 0).stream(request())).await;
        assert_eq!(
            error.map(|error| error.kind),
            Some(ModelErrorKind::StreamTruncated),
            "cut at {cut}"
        );
    }
}

/// A base URL that cannot be sent to (not a URL, or not http or https) fails the call as a bad
/// request, which is not retried, saying what to give instead.
#[tokio::test]
async fn an_invalid_base_url_is_a_bad_request_not_retried() {
    for url in ["notaurl", "ftp://models.example/v1"] {
        let (events, error) = collect(client_at(url, settings(2)).stream(request())).await;
        assert!(events.is_empty());
        let error = error.expect("no request is made");
        assert_eq!(error.kind, ModelErrorKind::BadRequest, "{url}: {error:?}");
        assert!(
            error
                .message
                .contains("give the client an http or https base URL"),
            "{error}"
        );
    }
}

/// A temperature or top_p that is not a finite number fails the call as a bad request before
/// anything is sent, in both providers: JSON has no NaN nor infinity, and it went out as
/// `null`, which a server reads as unset and samples with its own default. A provider option
/// of that name replaces the setting, and the call goes.
#[tokio::test]
async fn a_temperature_or_top_p_that_is_not_finite_is_a_bad_request_never_sent() {
    let server = TestServer::start([]).await;
    let anthropic = agent_providers::Anthropic::new(KEY)
        .base_url(&server.url)
        .settings(settings(2));
    let models: [&dyn Model; 2] = [&client(&server, 2), &anthropic];
    for model in models {
        for (name, value) in [
            ("temperature", f64::NAN),
            ("top_p", f64::INFINITY),
            ("temperature", f64::NEG_INFINITY),
        ] {
            let mut call = request();
            match name {
                "temperature" => call.settings.temperature = Some(value),
                _ => call.settings.top_p = Some(value),
            }
            let (events, error) = collect(model.stream(call)).await;
            assert!(events.is_empty());
            let error = error.expect("the call is refused");
            assert_eq!(error.kind, ModelErrorKind::BadRequest, "{error:?}");
            assert!(
                error.message.contains(&format!("`{name}` is {value}")),
                "{error}"
            );
        }
    }
    assert!(server.requests().is_empty(), "nothing was sent");

    server.push(ok("hi"));
    let mut call = request();
    call.settings.temperature = Some(f64::NAN);
    call.provider_options
        .insert("temperature".to_owned(), json!(0.5));
    let (_, error) = collect(client(&server, 0).stream(call)).await;
    assert_eq!(error, None);
    assert_eq!(server.requests()[0].json()["temperature"], json!(0.5));
}

/// A call that names no model, neither the client (`model("")`, or spaces) nor the request, is
/// a bad request before anything is sent, saying where a model is named; a request's own model
/// still goes with the client's left empty.
#[tokio::test]
async fn a_call_that_names_no_model_is_a_bad_request_never_sent() {
    let server = TestServer::start([]).await;
    for blank in ["", "  "] {
        let openai = client(&server, 2).model(blank);
        let anthropic = agent_providers::Anthropic::new(KEY)
            .base_url(&server.url)
            .settings(settings(2))
            .model(blank);
        let models: [(&dyn Model, &str); 2] = [(&openai, "openai"), (&anthropic, "anthropic")];
        for (model, provider) in models {
            let (events, error) = collect(model.stream(request())).await;
            assert!(events.is_empty());
            let error = error.expect("the call is refused");
            assert_eq!(
                (error.kind, error.message),
                (
                    ModelErrorKind::BadRequest,
                    format!(
                        "{provider}: the call names no model (`{blank}`): give the client one \
                         with `.model(...)`, or the call a non-empty `ModelRequest::model`"
                    )
                )
            );
        }
    }
    assert!(server.requests().is_empty(), "nothing was sent");

    server.push(ok("hi"));
    let mut call = request();
    call.model = "gpt-named".to_owned();
    let (_, error) = collect(client(&server, 0).model("").stream(call)).await;
    assert_eq!(error, None);
    assert_eq!(server.requests()[0].json()["model"], json!("gpt-named"));
}

/// A redirect to another server is not followed: it would take the conversation there, and
/// Anthropic's `x-api-key` too (reqwest strips only `authorization` on such a redirect). The
/// call fails, not retried, naming where the redirect pointed. A redirect within the endpoint's
/// server is still followed.
#[tokio::test]
async fn a_redirect_to_another_server_is_not_followed_and_takes_no_key_there() {
    const ANTHROPIC_KEY: &str = "sk-ant-SECRET-0123456789abcdef";
    let elsewhere = TestServer::start([]).await;
    let to_elsewhere = |path: &str| {
        status(
            307,
            &[("location", &format!("{}{path}", elsewhere.url))],
            "",
        )
    };
    let server = TestServer::start([
        to_elsewhere("/v1/chat/completions"),
        to_elsewhere("/v1/messages"),
    ])
    .await;
    let anthropic = agent_providers::Anthropic::new(ANTHROPIC_KEY)
        .base_url(server.url.clone())
        .settings(settings(2));
    for model in [
        Box::new(client(&server, 2)) as Box<dyn Model>,
        Box::new(anthropic),
    ] {
        let (events, error) = collect(model.stream(request())).await;
        assert!(events.is_empty());
        let error = error.expect("the redirect fails the call");
        assert_eq!(error.kind, ModelErrorKind::Provider, "{error:?}");
        assert_eq!(error.status, Some(307));
        assert!(
            error.message.contains(&elsewhere.url) && error.message.contains("not followed"),
            "{error}"
        );
    }
    assert_eq!(server.requests().len(), 2, "neither call was retried");
    let leaked: Vec<_> = elsewhere
        .requests()
        .iter()
        .map(|request| {
            (
                request.path.clone(),
                request.header("x-api-key").map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(leaked, [], "nothing reached the other server");

    // Within the endpoint's server, a redirect is followed.
    let server = TestServer::start([]).await;
    server.push(status(
        307,
        &[("location", &format!("{}/v2/chat/completions", server.url))],
        "",
    ));
    server.push(ok("Moved."));
    let (events, error) = collect(client(&server, 0).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Moved.");
    let paths: Vec<_> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/v2/chat/completions"]);
}
