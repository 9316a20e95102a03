//! Conformance against a real third-party server: full agent turns with tool calls through
//! AIMock's OpenAI (`/v1/chat/completions`) and Anthropic (`/v1/messages`) endpoints, and its
//! chaos modes (429 with Retry-After, 500, a disconnect, a malformed reply), each hitting the
//! first request only, so the retry must recover.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::aimock::Aimock;
use agent_core::{
    Agent, AgentBuilder, ChatErrorClassification, FnTool, Model, ModelErrorKind, TurnErrorKind,
    TurnStatus,
};
use agent_providers::{Anthropic, HttpSettings, OpenAi};
use serde_json::json;

fn settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(5),
        first_byte_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_secs(2),
        ..HttpSettings::default()
    }
}

pub(crate) fn openai(mock: &Aimock) -> OpenAi {
    OpenAi::new("test-key")
        .base_url(format!("{}/v1", mock.url))
        .model("gpt-4o-mini")
        .settings(settings())
}

pub(crate) fn anthropic(mock: &Aimock) -> Anthropic {
    Anthropic::new("test-key")
        .base_url(&mock.url)
        .model("claude-sonnet-4-5")
        .settings(settings())
}

/// An agent with the two tools the fixtures call; `calls` records each run.
fn weather_agent(model: impl Model + 'static, calls: &Arc<Mutex<Vec<String>>>) -> Agent {
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let (weather_calls, time_calls) = (calls.clone(), calls.clone());
    AgentBuilder::new("weather")
        .instructions("Answer with the tools' results.")
        .model(model)
        .dyn_tool(FnTool::new(
            "get_weather",
            "Weather in a city.",
            schema.clone(),
            move |args, _| {
                weather_calls
                    .lock()
                    .unwrap()
                    .push(format!("get_weather({})", args["city"]));
                async move { Ok(json!({"sky": "sunny"})) }
            },
        ))
        .dyn_tool(FnTool::new(
            "get_time",
            "Local time in a city.",
            schema,
            move |args, _| {
                time_calls
                    .lock()
                    .unwrap()
                    .push(format!("get_time({})", args["city"]));
                async move { Ok(json!("14:05")) }
            },
        ))
        .build()
        .expect("the agent builds")
}

async fn two_tool_turn(model: impl Model + 'static, mock: &Aimock, path: &str) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let agent = weather_agent(model, &calls);
    let result = agent.run("What is the weather in Paris?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "It is sunny in Paris, and 14:05 there.");
    assert_eq!(
        *calls.lock().unwrap(),
        ["get_weather(\"Paris\")", "get_time(\"Paris\")"]
    );
    let first = &result.steps[0];
    assert_eq!(first.text, "Let me check.");
    let ids: Vec<&str> = first.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_paris", "call_time"]);
    assert_eq!(mock.journal_paths(), [path, path]);
}

#[tokio::test]
async fn openai_turn_with_two_tool_calls() {
    let mock = Aimock::start();
    two_tool_turn(openai(&mock), &mock, "/v1/chat/completions").await;
}

#[tokio::test]
async fn anthropic_turn_with_two_tool_calls() {
    let mock = Aimock::start();
    two_tool_turn(anthropic(&mock), &mock, "/v1/messages").await;
}

/// Each chaos fixture breaks the first request only: the retry answers.
async fn recovers(
    model: impl Model + 'static,
    mock: &Aimock,
    path: &str,
    prompt: &str,
    answer: &str,
) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let agent = weather_agent(model, &calls);
    let result = agent.run(prompt).await;
    assert_eq!(result.status, TurnStatus::Completed, "{prompt}: {result:?}");
    assert_eq!(result.text, answer, "{prompt}");
    assert_eq!(
        mock.journal_paths(),
        [path, path],
        "{prompt}: one failed request, one retry"
    );
}

const CHAOS: [(&str, &str); 4] = [
    ("rate limited once", "Recovered from a rate limit."),
    ("server error once", "Recovered from a server error."),
    ("disconnect once", "Recovered from a disconnect."),
    ("malformed once", "Recovered from a malformed chunk."),
];

#[tokio::test]
async fn openai_recovers_from_each_chaos_mode() {
    for (prompt, answer) in CHAOS {
        let mock = Aimock::start();
        recovers(openai(&mock), &mock, "/v1/chat/completions", prompt, answer).await;
    }
}

#[tokio::test]
async fn anthropic_recovers_from_each_chaos_mode() {
    for (prompt, answer) in CHAOS {
        let mock = Aimock::start();
        recovers(anthropic(&mock), &mock, "/v1/messages", prompt, answer).await;
    }
}

#[tokio::test]
async fn a_lasting_rate_limit_ends_the_turn_after_the_retries() {
    let mock = Aimock::start();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let agent = weather_agent(openai(&mock), &calls);
    let result = agent.run("always rate limited").await;
    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    let error = result.error.expect("an error");
    assert_eq!(
        error.kind,
        TurnErrorKind::Model(ModelErrorKind::RateLimited),
        "{error}"
    );
    assert!(
        error.message.contains("rate limit exceeded"),
        "the provider's body is kept: {error}"
    );
    assert_eq!(
        result.classification,
        Some(ChatErrorClassification::RateLimit)
    );
    let path = "/v1/chat/completions";
    assert_eq!(
        mock.journal_paths(),
        [path, path, path],
        "the first try and two retries"
    );
}

/// A folder holding fake `node` (printing `node_version`) and, if asked, `npm` programs.
fn fake_path(name: &str, node_version: Option<&str>, npm: bool) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-path-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut programs = Vec::new();
    if let Some(version) = node_version {
        programs.push(("node", version.to_owned()));
    }
    if npm {
        programs.push(("npm", "11.0.0".to_owned()));
    }
    for (program, version) in programs {
        let file = dir.join(program);
        std::fs::write(&file, format!("#!/bin/sh\necho {version}\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

#[test]
fn missing_or_old_node_and_npm_are_named_in_one_message() {
    let check = |dir: &std::path::Path| crate::aimock::check_prerequisites(dir.as_os_str());
    let nothing = check(&fake_path("nothing", None, false)).unwrap_err();
    assert!(
        nothing.starts_with(
            "`node` was not found: the AIMock conformance tests need Node.js >= 20.15 and npm"
        ),
        "{nothing}"
    );
    assert!(nothing.contains("apt-get install nodejs npm"), "{nothing}");

    let old = check(&fake_path("old", Some("v18.19.0"), true)).unwrap_err();
    assert!(
        old.starts_with("node reports version `v18.19.0`, too old: "),
        "{old}"
    );
    let just_below = check(&fake_path("below", Some("v20.14.9"), true)).unwrap_err();
    assert!(just_below.contains("too old"), "{just_below}");

    let no_npm = check(&fake_path("no-npm", Some("v20.15.0"), false)).unwrap_err();
    assert!(no_npm.starts_with("`npm` was not found: "), "{no_npm}");

    assert_eq!(check(&fake_path("ok", Some("v22.3.1"), true)), Ok(()));
}
