//! The hook index (`agent-core/docs/hooks.md`, shown on the `agent_core::event` rustdoc page) is
//! the README's hook table, lists every event, and names functions that exist and fire the event.

use std::path::{Path, PathBuf};

use agent_core::Event;
use agent_core::event::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The index without its heading and introduction: the table and the order of a turn.
fn index_body() -> String {
    let index = read("agent-core/docs/hooks.md");
    let start = index.find("| event |").expect("the index has its table");
    index[start..].to_owned()
}

/// The table's rows as (events named in the first cell, fired-by cell).
fn rows() -> Vec<(Vec<String>, String)> {
    index_body()
        .lines()
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            let events = cells[0]
                .split(" / ")
                .map(|name| name.trim().trim_matches('`').to_owned())
                .collect();
            (events, cells.last().unwrap().trim().to_owned())
        })
        .collect()
}

#[test]
fn the_readme_holds_the_index_word_for_word() {
    let readme = read("README.md");
    let body = index_body();
    for block in body.split("\n\n") {
        assert!(
            readme.contains(block.trim_end()),
            "the README lacks this part of agent-core/docs/hooks.md:\n{block}"
        );
    }
}

#[test]
fn every_event_has_one_row() {
    let names = [
        BeforeRun::NAME,
        BeforeTurn::NAME,
        BeforeStep::NAME,
        OnLlmStart::NAME,
        OnChunk::NAME,
        OnLlmEnd::NAME,
        BeforeToolCall::<serde_json::Value>::NAME,
        AfterToolCall::<serde_json::Value>::NAME,
        OnStepFinish::NAME,
        OnStop::NAME,
        AfterRun::NAME,
        OnChatResponse::NAME,
        ClassifyChatError::NAME,
        OnChatError::NAME,
        OnSessionStart::NAME,
        OnSessionEnd::NAME,
        FilterMessages::NAME,
        PrefilterLlmHistory::NAME,
        PostProcessMessage::NAME,
        BeforeCreateMessage::NAME,
        AfterCreateMessage::NAME,
        BeforeUpdateMessage::NAME,
        AfterUpdateMessage::NAME,
        AfterToolCallSuccess::NAME,
        AfterToolCallFailure::NAME,
        BeforeStoreToolResult::NAME,
        BeforeHandoff::NAME,
        OnSubagentStart::NAME,
        OnSubagentStop::NAME,
        ValidateOutput::<serde_json::Value>::NAME,
    ];
    let mut listed: Vec<String> = rows().into_iter().flat_map(|(events, _)| events).collect();
    listed.sort();
    let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    expected.sort();
    assert_eq!(listed, expected);
}

#[test]
fn each_fired_by_function_exists_and_fires_its_event() {
    for (events, fired_by) in rows() {
        // "`Turn::drive` (engine/turn.rs)"
        let (function, file) = fired_by
            .split_once(" (")
            .unwrap_or_else(|| panic!("no file in {fired_by:?}"));
        let function = function.trim_matches('`').rsplit("::").next().unwrap();
        let file = file.trim_end_matches(')');
        let source = read(&format!("agent-core/src/{file}"));
        let start = source
            .find(&format!("fn {function}"))
            .unwrap_or_else(|| panic!("{file} has no fn {function} (named for {events:?})"));
        // The function's body runs to the next item at its own indentation or less.
        let body = &source[start..];
        let end = body[1..]
            .find("\n    pub")
            .into_iter()
            .chain(body[1..].find("\n    async fn"))
            .chain(body[1..].find("\n    fn "))
            .chain(body[1..].find("\npub"))
            .chain(body[1..].find("\nfn "))
            .chain(body[1..].find("\nasync fn"))
            .min()
            .unwrap_or(body.len() - 1);
        let body = &body[..end + 1];
        for event in &events {
            let tool_event = matches!(event.as_str(), "before_tool_call" | "after_tool_call");
            // validate_output hooks are held type-erased, as the output spec's validators.
            let fires = if tool_event {
                body.contains(&format!("\"{event}\""))
            } else if event == "validate_output" {
                body.contains(".validators")
            } else {
                body.contains(&format!("hooks.{event}"))
            };
            assert!(fires, "{file}: fn {function} does not fire {event}");
        }
    }
}

/// Each event's marker in `agent-core/src/hooks/mod.rs` says in its doc comment where the event
/// fires ("Fired by `F` in `P`."): the function and file of the index's row, so the rustdoc page
/// of a marker never sends a reader to a file that no longer fires it.
#[test]
fn each_markers_fired_by_line_names_the_index_row() {
    let source = read("agent-core/src/hooks/mod.rs");
    let rows = rows();
    let mut fired_by: Option<String> = None;
    let mut checked = Vec::new();
    for line in source.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("/// Fired by ") {
            // "`Turn::prepare` in `engine/step.rs`." -> "`Turn::prepare` (engine/step.rs)"
            let (function, file) = rest
                .trim_end_matches('.')
                .split_once(" in ")
                .unwrap_or_else(|| panic!("no file in {line:?}"));
            fired_by = Some(format!("{function} ({})", file.trim_matches('`')));
            continue;
        }
        let Some(said) = &fired_by else { continue };
        // The event the line before documents: `Marker = "name" / ...` in the events table,
        // `const NAME: &'static str = "name";` in a generic marker's impl.
        let Some(name) = line.split('"').nth(1) else {
            continue;
        };
        if !(line.contains(" = \"") && (line.contains(" / ") || line.starts_with("const NAME"))) {
            continue;
        }
        let row = rows
            .iter()
            .find(|(events, _)| events.iter().any(|event| event == name))
            .unwrap_or_else(|| panic!("the index has no row for `{name}`"));
        assert_eq!(
            said, &row.1,
            "the doc comment of `{name}`'s marker names another place than the index"
        );
        checked.push(name.to_owned());
        fired_by = None;
    }
    assert_eq!(checked.len(), 29, "{checked:?}");
}

/// The short name of a type without its generics: `ToolCallContext` for
/// `agent_core::hooks::tool_context::ToolCallContext<serde_json::Value>`.
fn short_name(full: &str) -> String {
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}

/// `(name, marker, context)` of every event agent-core defines.
fn agent_core_events() -> Vec<(String, String, String)> {
    fn entry<E: Event>(marker: &str) -> (String, String, String) {
        (
            E::NAME.to_owned(),
            short_name(marker),
            short_name(std::any::type_name::<E::Ctx>()),
        )
    }
    macro_rules! entries {
        ($($marker:ty),* $(,)?) => {
            vec![$(entry::<$marker>(stringify!($marker))),*]
        };
    }
    entries![
        BeforeRun,
        BeforeTurn,
        BeforeStep,
        OnLlmStart,
        OnChunk,
        OnLlmEnd,
        BeforeToolCall<serde_json::Value>,
        AfterToolCall<serde_json::Value>,
        OnStepFinish,
        OnStop,
        AfterRun,
        OnChatResponse,
        ClassifyChatError,
        OnChatError,
        OnSessionStart,
        OnSessionEnd,
        FilterMessages,
        PrefilterLlmHistory,
        PostProcessMessage,
        BeforeCreateMessage,
        AfterCreateMessage,
        BeforeUpdateMessage,
        AfterUpdateMessage,
        AfterToolCallSuccess,
        AfterToolCallFailure,
        BeforeStoreToolResult,
        BeforeHandoff,
        OnSubagentStart,
        OnSubagentStop,
        ValidateOutput<serde_json::Value>,
    ]
}

/// `(name, marker, context)` of every event `#[hook]` knows, read from the macro crate's
/// catalogue (`agent-macros/src/hook/events.rs`, entries `event("name", "Marker", "Context", tool)`).
fn macro_events() -> Vec<(String, String, String)> {
    let source = read("agent-macros/src/hook/events.rs");
    let table = &source[source
        .find("pub(crate) const EVENTS")
        .expect("the EVENTS table")..];
    let table = &table[..table.find("];").expect("the end of EVENTS")];
    let compact: String = table.chars().filter(|c| !c.is_whitespace()).collect();
    compact
        .split("event(")
        .skip(1)
        .map(|entry| {
            let fields: Vec<&str> = entry.split(',').collect();
            let field = |i: usize| short_name(fields[i].trim_matches('"'));
            (field(0), field(1), field(2))
        })
        .collect()
}

#[test]
fn the_macro_event_catalogue_is_agent_cores() {
    let mut from_core = agent_core_events();
    from_core.sort();
    let mut from_macro = macro_events();
    from_macro.sort();
    assert_eq!(
        from_macro, from_core,
        "agent-macros/src/hook/events.rs must list agent-core's events, markers and contexts"
    );
    // And agent-core's list here is the hook index's.
    let mut indexed: Vec<String> = rows().into_iter().flat_map(|(events, _)| events).collect();
    indexed.sort();
    let mut names: Vec<String> = from_core.into_iter().map(|(name, _, _)| name).collect();
    names.sort();
    assert_eq!(names, indexed);
}
