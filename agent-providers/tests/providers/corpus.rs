//! Real provider streams, replayed: every stream in `tests/corpus` was recorded from a real
//! endpoint and published in a public SDK's test suite (see `tests/corpus/SOURCES.md`). Each is
//! served over a loopback socket in its provider's SSE framing and decoded by `OpenAi` or
//! `Anthropic`; the text, reasoning, tool calls (id, name, parsed arguments), usage and finish
//! reason must be exactly what the stream says (`tests/corpus/expected.json`, written from the
//! recordings), and the same stream cut short must fail, never decode as a shorter answer.

use std::path::{Path, PathBuf};

use crate::support::{Reply, TestServer, collect, request, settings};
use agent_core::{Model, ModelError, ModelEvent};
use agent_providers::{Anthropic, OpenAi};
use serde_json::{Map, Value, json};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// Every recording: (provider folder, file name).
fn recordings() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for provider in ["openai", "anthropic"] {
        let mut names: Vec<String> = std::fs::read_dir(corpus().join(provider))
            .expect("the corpus folder")
            .map(|entry| {
                entry
                    .expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.ends_with(".chunks.txt") || name.ends_with(".sse"))
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|name| (provider.to_owned(), name)));
    }
    out
}

/// The recording as its provider sends it, one body per response: OpenAI-compatible servers
/// send `data: JSON` frames and end with `data: [DONE]` (which the recordings leave out, so it
/// is added here); Anthropic names each event after its `type`, and a file holding
/// several responses (a multi-step exchange) is split after each `message_stop`, an
/// OpenAI-compatible one where a new completion `id` starts.
/// A `.sse` recording is a whole response body as the server sent it, replayed as is.
fn sse_bodies(provider: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(corpus().join(provider).join(name)).expect("a recording");
    if name.ends_with(".sse") {
        return vec![text];
    }
    let mut bodies = Vec::new();
    let mut body = String::new();
    let mut last_id = String::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let frame: Value = serde_json::from_str(line).expect("a JSON frame");
        if provider == "anthropic" {
            let event = frame["type"].as_str().unwrap_or("message");
            body.push_str(&format!("event: {event}\ndata: {line}\n\n"));
            if event == "message_stop" {
                bodies.push(std::mem::take(&mut body));
            }
        } else {
            let id = frame["id"].as_str().unwrap_or_default();
            if !id.is_empty() && !last_id.is_empty() && id != last_id {
                bodies.push(std::mem::take(&mut body) + "data: [DONE]\n\n");
            }
            if !id.is_empty() {
                last_id = id.to_owned();
            }
            body.push_str(&format!("data: {line}\n\n"));
        }
    }
    if !body.is_empty() {
        if provider == "openai" {
            body.push_str("data: [DONE]\n\n");
        }
        bodies.push(body);
    }
    bodies
}

fn model(provider: &str, url: &str) -> Box<dyn Model> {
    if provider == "anthropic" {
        Box::new(
            Anthropic::new("key")
                .base_url(url)
                .model("claude")
                .settings(settings(0)),
        )
    } else {
        Box::new(
            OpenAi::new("key")
                .base_url(format!("{url}/v1"))
                .model("gpt")
                .settings(settings(0)),
        )
    }
}

/// One call of `provider` against a server sending `body` in pieces of `piece` bytes.
/// One loopback server and a client of each provider, shared by a test's many replays.
struct Replayer {
    server: TestServer,
    openai: Box<dyn Model>,
    anthropic: Box<dyn Model>,
}

impl Replayer {
    async fn new() -> Replayer {
        let server = TestServer::start([]).await;
        let (openai, anthropic) = (
            model("openai", &server.url),
            model("anthropic", &server.url),
        );
        Replayer {
            server,
            openai,
            anthropic,
        }
    }

    /// One call of `provider` against the server sending `body`.
    async fn replay(&self, provider: &str, body: &str) -> (Vec<ModelEvent>, Option<ModelError>) {
        self.server.push(Reply::sse_split(body, 4096));
        let model = if provider == "anthropic" {
            &self.anthropic
        } else {
            &self.openai
        };
        collect(model.stream(request())).await
    }
}

/// What a decoded stream says, in the form `expected.json` holds.
fn summary(events: &[ModelEvent], error: Option<&ModelError>) -> Value {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    let mut usage = Value::Null;
    let mut finish = Value::Null;
    for event in events {
        match event {
            ModelEvent::TextDelta(delta) => text.push_str(delta),
            ModelEvent::ReasoningDelta(delta) => reasoning.push_str(delta),
            ModelEvent::ToolCall(call) => {
                let arguments: Value = serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.to_string()));
                calls.push(json!({"id": call.id, "name": call.name, "arguments": arguments}));
            }
            ModelEvent::Usage(u) => {
                usage = json!({
                    "input_tokens": u.input_tokens,
                    "output_tokens": u.output_tokens,
                    "reasoning_tokens": u.reasoning_tokens,
                    "cached_input_tokens": u.cached_input_tokens,
                })
            }
            ModelEvent::Finish(reason) => finish = Value::String(reason.to_string()),
            _ => {}
        }
    }
    let mut out = Map::new();
    out.insert("text".into(), Value::String(text));
    out.insert("reasoning".into(), Value::String(reasoning));
    out.insert("tool_calls".into(), Value::Array(calls));
    out.insert("usage".into(), usage);
    out.insert("finish_reason".into(), finish);
    if let Some(error) = error {
        out.insert("error".into(), json!(format!("{:?}", error.kind)));
    }
    Value::Object(out)
}

fn expected() -> Map<String, Value> {
    let text = std::fs::read_to_string(corpus().join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json is a JSON object")
}

#[tokio::test]
async fn every_recorded_stream_decodes_as_its_provider_meant_it() {
    let replayer = Replayer::new().await;
    let expected = expected();
    let mut failures = Vec::new();
    let mut responses = 0;
    let recordings = recordings();
    for (provider, name) in &recordings {
        let key = format!("{provider}/{name}");
        let mut got = Vec::new();
        for body in sse_bodies(provider, name) {
            let (events, error) = replayer.replay(provider, &body).await;
            got.push(summary(&events, error.as_ref()));
            responses += 1;
        }
        let got = Value::Array(got);
        match expected.get(&key) {
            Some(want) if *want == got => {}
            Some(want) => failures.push(format!("{key}\n  want {want}\n  got  {got}")),
            None => failures.push(format!("{key}: no expectation in expected.json")),
        }
    }
    assert_eq!(
        recordings.len(),
        expected.len(),
        "expected.json names a stream the corpus lacks"
    );
    assert!(
        failures.is_empty(),
        "{} of {} recordings differ:\n{}",
        failures.len(),
        recordings.len(),
        failures.join("\n")
    );
    assert!(recordings.len() >= 40 && responses > recordings.len());
}

/// A stream cut before its end marker must fail as truncated (or, cut inside a frame, as
/// malformed), whatever it held so far: never a shorter answer.
#[tokio::test]
async fn every_recorded_stream_cut_short_is_an_error() {
    let replayer = Replayer::new().await;
    for (provider, name) in recordings() {
        for body in sse_bodies(&provider, &name) {
            let end = match provider.as_str() {
                "openai" => body.rfind("data: [DONE]"),
                _ => body.rfind("event: message_stop"),
            }
            .expect("an end marker");
            // Cut points: the start, a third and two thirds in, inside the last frame before
            // the marker, and right before the marker.
            let cuts = [0, end / 3, 2 * end / 3, end.saturating_sub(3), end];
            for cut in cuts {
                let mut cut = cut;
                while !body.is_char_boundary(cut) {
                    cut -= 1;
                }
                let (events, error) = replayer.replay(&provider, &body[..cut]).await;
                let Some(error) = error else {
                    panic!(
                        "{provider}/{name} cut at {cut} of {} decoded as an answer: {events:?}",
                        body.len()
                    );
                };
                assert!(
                    matches!(
                        error.kind,
                        agent_core::ModelErrorKind::StreamTruncated
                            | agent_core::ModelErrorKind::StreamMalformed
                    ),
                    "{provider}/{name} cut at {cut}: {error:?}"
                );
                assert!(!events.iter().any(|e| matches!(e, ModelEvent::Finish(_))));
            }
        }
    }
}

/// The same recordings framed as a real OpenAI-compatible server (Anthropic's) ends them:
/// `data: [DONE]\n` and the connection closed, no final blank line. Complete, not retried.
#[tokio::test]
async fn recordings_ending_without_the_final_blank_line_are_complete() {
    let replayer = Replayer::new().await;
    let expected = expected();
    for (provider, name) in recordings().into_iter().filter(|(p, _)| p == "openai") {
        let mut got = Vec::new();
        for body in sse_bodies(&provider, &name) {
            let body = body.strip_suffix('\n').expect("a final blank line");
            let (events, error) = replayer.replay(&provider, body).await;
            got.push(summary(&events, error.as_ref()));
        }
        let got = Value::Array(got);
        assert_eq!(
            Some(&got),
            expected.get(&format!("{provider}/{name}")),
            "{name}"
        );
    }
}

/// `body` with each `data:` frame's choices renumbered by `map` (`None` drops the choice).
fn renumber_choices(body: &str, map: impl Fn(u64) -> Option<u64>) -> String {
    let mut out = String::new();
    for line in body.split_inclusive('\n') {
        let Some(data) = line.strip_prefix("data: ").filter(|d| d.starts_with('{')) else {
            out.push_str(line);
            continue;
        };
        let mut frame: Value = serde_json::from_str(data).expect("a JSON frame");
        if let Some(choices) = frame["choices"].as_array_mut() {
            choices.retain_mut(|choice| {
                let index = choice["index"].as_u64().unwrap_or(0);
                map(index).map(|new| choice["index"] = json!(new)).is_some()
            });
        }
        out.push_str(&format!("data: {frame}\n"));
    }
    out
}

/// Some OpenAI-compatible servers number a stream's only choice other than 0: every recorded
/// stream of one choice, renumbered 7, decodes to exactly the events it decodes to as
/// recorded. And a stream of several choices without index 0 is read from the first choice
/// it sends, the others skipped: the three-choice recording without choice 0 reads as its
/// choice 1 alone.
#[tokio::test]
async fn a_stream_whose_choice_is_not_index_0_decodes_as_recorded() {
    let replayer = Replayer::new().await;
    let mut renumbered = 0;
    for (provider, name) in recordings().into_iter().filter(|(p, _)| p == "openai") {
        for body in sse_bodies(&provider, &name) {
            let indices: std::collections::BTreeSet<u64> = body
                .lines()
                .filter_map(|l| l.strip_prefix("data: {"))
                .flat_map(|data| {
                    let frame: Value = serde_json::from_str(&format!("{{{data}")).expect("JSON");
                    let choices = frame["choices"].as_array().cloned().unwrap_or_default();
                    choices
                        .into_iter()
                        .map(|c| c["index"].as_u64().unwrap_or(0))
                })
                .collect();
            if indices.len() > 1 {
                continue;
            }
            let (events, error) = replayer.replay(&provider, &body).await;
            let (seven, seven_error) = replayer
                .replay(&provider, &renumber_choices(&body, |_| Some(7)))
                .await;
            assert_eq!(seven, events, "{name}");
            assert_eq!(seven_error.map(|e| e.kind), error.map(|e| e.kind), "{name}");
            renumbered += 1;
        }
    }
    assert!(renumbered >= 20, "{renumbered}");

    let body = &sse_bodies("openai", "openai-three-choices.sse")[0];
    let without_0 = renumber_choices(body, |index| (index != 0).then_some(index));
    let (events, error) = replayer.replay("openai", &without_0).await;
    let only_1 = renumber_choices(body, |index| (index == 1).then_some(0));
    let (want, want_error) = replayer.replay("openai", &only_1).await;
    assert!(
        error.is_none() && want_error.is_none(),
        "{error:?} {want_error:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ModelEvent::TextDelta(text) if !text.is_empty()))
    );
    assert_eq!(events, want);
}

/// What the engine has no event for is kept, in order: every Anthropic block that is not text,
/// thinking or a client tool call (server tools' uses and results, as sent, with their streamed
/// input) as a provider block, and as provider metadata the container, each citation, and
/// Perplexity's citations.
#[tokio::test]
async fn what_has_no_event_of_its_own_is_kept_as_provider_metadata() {
    let replayer = Replayer::new().await;
    for (provider, name) in recordings().into_iter().filter(|(p, _)| p == "anthropic") {
        for body in sse_bodies(&provider, &name) {
            // The kinds of the blocks the engine has no event for, as the recording sends them.
            let mut kinds = Vec::new();
            for data in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
                let frame: Value = serde_json::from_str(data).expect("JSON");
                let blocks = match frame["type"].as_str() {
                    Some("content_block_start") => vec![frame["content_block"].clone()],
                    Some("message_start") => frame["message"]["content"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                for block in blocks {
                    let kind = block["type"].as_str().unwrap_or_default().to_owned();
                    if !["text", "thinking", "tool_use"].contains(&kind.as_str()) {
                        kinds.push(kind);
                    }
                }
            }
            let (events, _) = replayer.replay(&provider, &body).await;
            let kept: Vec<String> = events
                .iter()
                .filter_map(|event| match event {
                    ModelEvent::ProviderBlock(block) => block["type"].as_str().map(str::to_owned),
                    _ => None,
                })
                .collect();
            assert_eq!(kept, kinds, "{name}");
        }
    }

    // A server tool's streamed input is kept parsed, and the container it ran in.
    let body = &sse_bodies(
        "anthropic",
        "anthropic-programmatic-tool-calling.1.chunks.txt",
    )[0];
    let (events, _) = replayer.replay("anthropic", body).await;
    let metadata: Vec<&Value> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ProviderBlock(value) | ModelEvent::ProviderMetadata(value) => Some(value),
            _ => None,
        })
        .collect();
    assert_eq!(metadata[0]["type"], "server_tool_use");
    assert!(
        metadata[0]["input"]["code"]
            .as_str()
            .is_some_and(|code| code.contains("asyncio"))
    );
    assert!(
        metadata
            .iter()
            .any(|m| m["container"]["id"] == "container_011CWHPPTDTn1XufeRB9uHeH")
    );

    // Web search: its citations, each kept.
    let body = &sse_bodies("anthropic", "anthropic-web-search-tool.1.chunks.txt")[0];
    let (events, _) = replayer.replay("anthropic", body).await;
    let citations = events
        .iter()
        .filter(|event| matches!(event, ModelEvent::ProviderMetadata(value) if value.get("citation").is_some()))
        .count();
    assert_eq!(citations, body.matches("\"citations_delta\"").count());

    // Perplexity repeats its citations in every chunk: kept once.
    let body = &sse_bodies("openai", "perplexity-citations.chunks.txt")[0];
    let (events, _) = replayer.replay("openai", body).await;
    let kept: Vec<&Value> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ProviderMetadata(value) => value.get("citations"),
            _ => None,
        })
        .collect();
    let first: Value = serde_json::from_str(
        body.lines()
            .next()
            .and_then(|l| l.strip_prefix("data: "))
            .expect("a frame"),
    )
    .expect("JSON");
    assert_eq!(kept, [&first["citations"]]);
}

/// A decoded stream's tool events in order: `start:ID NAME`, `input:ID` (a run of one call's
/// argument pieces as one entry) and `call:ID NAME`.
fn tool_trace(events: &[ModelEvent]) -> Vec<String> {
    let mut trace: Vec<String> = Vec::new();
    for event in events {
        let entry = match event {
            ModelEvent::ToolCallStart { id, name } => format!("start:{id} {name}"),
            ModelEvent::ToolInputDelta { id, .. } => format!("input:{id}"),
            ModelEvent::ToolCall(call) => format!("call:{} {}", call.id, call.name),
            _ => continue,
        };
        if !(entry.starts_with("input:") && trace.last() == Some(&entry)) {
            trace.push(entry);
        }
    }
    trace
}

/// Why a tool trace breaks the start rule, if it does: each call starts exactly once, under
/// its own name, before its first argument piece and its complete call.
fn start_rule(trace: &[String]) -> Option<String> {
    let of = |entry: &str| -> Option<String> {
        let (_, rest) = entry.split_once(':')?;
        Some(rest.split(' ').next()?.to_owned())
    };
    for call in trace.iter().filter_map(|entry| entry.strip_prefix("call:")) {
        let id = call.split(' ').next().unwrap_or_default();
        let starts: Vec<&String> = trace
            .iter()
            .filter(|entry| entry.starts_with("start:") && of(entry).as_deref() == Some(id))
            .collect();
        let first = trace.iter().find(|entry| of(entry).as_deref() == Some(id));
        if starts != [&format!("start:{call}")] || first != starts.first().copied() {
            return Some(format!("call {call}: {trace:?}"));
        }
    }
    None
}

#[tokio::test]
async fn every_recorded_tool_call_starts_once_before_its_arguments() {
    let replayer = Replayer::new().await;
    let mut failures = Vec::new();
    let mut traces = std::collections::BTreeMap::new();
    for (provider, name) in recordings() {
        for (at, body) in sse_bodies(&provider, &name).iter().enumerate() {
            let (events, _) = replayer.replay(&provider, body).await;
            let trace = tool_trace(&events);
            if let Some(broken) = start_rule(&trace) {
                failures.push(format!("{provider}/{name} response {at}: {broken}"));
            }
            traces.insert(format!("{provider}/{name} {at}"), trace);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let trace = |key: &str| traces.get(key).cloned().unwrap_or_default();
    // Parallel calls, each started as its first piece comes; a call whose id comes before
    // its name, started once the name comes; a call with no arguments, started all the same.
    assert_eq!(
        trace("openai/openai-parallel-tool-calls.sse 0"),
        [
            "start:call_JMW1whyEaYG438VE1OIflxA2 GetWeatherArgs",
            "input:call_JMW1whyEaYG438VE1OIflxA2",
            "start:call_DNYTawLBoN8fj3KN6qU9N1Ou get_stock_price",
            "input:call_DNYTawLBoN8fj3KN6qU9N1Ou",
            "call:call_JMW1whyEaYG438VE1OIflxA2 GetWeatherArgs",
            "call:call_DNYTawLBoN8fj3KN6qU9N1Ou get_stock_price",
        ]
    );
    assert_eq!(
        trace("openai/mistral-incremental-tool-call.chunks.txt 0"),
        [
            "start:chatcmpl-tool-9f149c74c42f265b webSearchTool",
            "input:chatcmpl-tool-9f149c74c42f265b",
            "call:chatcmpl-tool-9f149c74c42f265b webSearchTool",
        ]
    );
    assert_eq!(
        trace("anthropic/anthropic-tool-no-args.chunks.txt 0"),
        [
            "start:toolu_01QE1WLsSVp5hy5Q3GmGTmjP updateIssueList",
            "call:toolu_01QE1WLsSVp5hy5Q3GmGTmjP updateIssueList",
        ]
    );
}
