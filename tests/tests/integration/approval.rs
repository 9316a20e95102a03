//! Suspended turns (issue 11): a call that needs approval (the tool's own rule, or a
//! before_tool_call `Ask`) suspends its turn while the step's other calls run; the waiting
//! calls are kept with the session (across a reopen of a SQLite file; for every store, from
//! another handle: the conformance suite), answered by call id (approve, approve with edited
//! arguments, deny), and run once when the turn resumes, even when the process running the
//! approved call is killed (on SQLite and on PostgreSQL).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{
    Agent, AgentBuilder, AnswerError, CallAnswer, ChatResponse, ClientTool, Continued,
    Conversation, FnTool, Hook, Matcher, MemoryStore, Message, MessageStatus, PendingCall,
    PendingKind, ScriptedModel, ScriptedStep, SessionStore, SqliteStore, StoredMessage, Tool,
    ToolCallDecision, ToolError, TurnErrorKind, TurnEvent, TurnRequest, TurnStatus, event, tool,
};
use serde_json::{Value, json};
use tests::{
    Add, AddArgs, Recorded, Seen, Trace, assert_paired, assert_whole, describe_chunk, lines, within,
};

/// `delete`: every call waits for approval; records `delete(PATH)` when it runs.
fn delete_tool(trace: &Trace) -> FnTool {
    let trace = trace.clone();
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    });
    FnTool::new("delete", "Delete a file.", schema, move |args, _| {
        let trace = trace.clone();
        async move {
            let path = args["path"].as_str().unwrap_or_default().to_owned();
            trace.push(format!("delete({path})"));
            Ok::<Value, ToolError>(json!(format!("deleted {path}")))
        }
    })
    .needs_approval(|_| true)
}

/// A step calling `add` and `delete`, then a step that answers.
fn mixed_script() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
            .tool_call("c2", "delete", r#"{"path":"a.txt"}"#),
        ScriptedStep::new().text("Done."),
    ])
}

fn mixed_builder(
    model: &ScriptedModel,
    trace: &Trace,
    store: Arc<dyn SessionStore>,
) -> AgentBuilder {
    AgentBuilder::new("files")
        .model(model.clone())
        .tool(Add::traced(trace))
        .dyn_tool(delete_tool(trace))
        .store(store)
        .record_all(trace)
}

fn mixed_agent(model: &ScriptedModel, trace: &Trace, store: Arc<dyn SessionStore>) -> Agent {
    mixed_builder(model, trace, store)
        .build()
        .expect("the agent builds")
}

/// Panics unless the stored session is whole but for the waiting calls: no pending row, every
/// other call of the history paired with one result, and no result for a waiting call.
fn assert_suspended(rows: &[StoredMessage], waiting: &[&str]) {
    let pending: Vec<i64> = rows
        .iter()
        .filter(|row| row.status == MessageStatus::Pending)
        .map(|row| row.id)
        .collect();
    assert!(pending.is_empty(), "pending rows {pending:?}: {rows:#?}");
    let history: Vec<Message> = rows
        .iter()
        .filter(|row| row.status == MessageStatus::Completed && !row.silent)
        .map(|row| match &row.message {
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
                reasoning_signature,
                provider_blocks,
            } => Message::Assistant {
                content: content.clone(),
                reasoning: reasoning.clone(),
                tool_calls: tool_calls
                    .iter()
                    .filter(|call| !waiting.contains(&call.id.as_str()))
                    .cloned()
                    .collect(),
                reasoning_signature: reasoning_signature.clone(),
                provider_blocks: provider_blocks.clone(),
            },
            other => other.clone(),
        })
        .collect();
    assert_paired(&history);
    let answered: Vec<&str> = rows
        .iter()
        .filter_map(|row| match &row.message {
            Message::Tool { call_id, .. } if waiting.contains(&call_id.as_str()) => {
                Some(call_id.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(
        answered.is_empty(),
        "waiting calls {answered:?} have results"
    );
}

/// The session's rows as `role:text` (tool rows as `tool:ID:content`).
fn described(rows: &[StoredMessage]) -> Vec<String> {
    rows.iter()
        .map(|row| match &row.message {
            Message::Tool {
                call_id, content, ..
            } => format!("tool:{call_id}:{content}"),
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                let ids: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
                format!("assistant:calls {}", ids.join(","))
            }
            message => format!("{}:{}", message.role(), message.text()),
        })
        .collect()
}

fn delete_pending() -> PendingCall {
    PendingCall {
        id: "c2".to_owned(),
        tool: "delete".to_owned(),
        arguments: json!({"path": "a.txt"}),
        modified_arguments: None,
        reason: "tool `delete` needs approval".to_owned(),
        kind: PendingKind::Approval,
        // SHA-256 of `delete`, a zero byte and `{"path":"a.txt"}` (sha256sum).
        fingerprint: "d31b2f9baff97c7df44018ce6a5e7b81ea8811b53d7ffc2de17b2467ffc25817".to_owned(),
        token: None,
        path: Vec::new(),
    }
}

#[tokio::test]
async fn a_call_needing_approval_suspends_the_turn_while_the_other_call_of_its_step_runs() {
    let trace = Trace::new();
    let model = mixed_script();
    let responses = Seen::<ChatResponse>::new();
    let agent = mixed_builder(&model, &trace, Arc::new(agent_core::MemoryStore::new()))
        .hook(responses.hook::<event::OnChatResponse>("responses"))
        .build()
        .expect("the agent builds");
    let conversation = agent.conversation();

    let result = conversation.run("Add, then delete a.txt").await;

    assert_eq!(result.status, TurnStatus::Suspended, "{result:?}");
    assert_eq!(result.status.as_str(), "suspended");
    assert_eq!(result.pending, [delete_pending()]);
    assert_eq!(result.error, None);
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(Add, then delete a.txt)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c1 add)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 add)",
            "on_chunk(tool_start:c2 delete)",
            "on_chunk(tool_input:c2)",
            "on_chunk(tool_call:c2 delete)",
            "on_llm_end(0)",
            "before_tool_call(add c1)",
            "add(2,3)",
            "after_tool_call(add c1 executed)",
            "before_tool_call(delete c2)",
            "on_chunk(tool_result:c1 add ok)",
            "on_step_finish(0)",
            "on_chat_response(suspended)",
        ])
    );
    // The step is recorded with the result of the call that ran; the waiting call has none.
    assert_eq!(result.steps.len(), 1);
    let outcomes: Vec<(&str, &str)> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| (r.call_id.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(outcomes, [("c1", "executed")]);
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(
        described(&rows),
        [
            "user:Add, then delete a.txt",
            "assistant:calls c1,c2",
            "tool:c1:5"
        ]
    );
    assert_suspended(&rows, &["c2"]);
    let waiting = conversation.waiting_calls().await.expect("waiting");
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].call, delete_pending());
    assert_eq!(waiting[0].answer, None);

    // Approved, the turn resumes: the gate runs again, the tool once, then the model goes on.
    assert_eq!(conversation.approve("c2").await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.text, "Done.");
    assert!(resumed.pending.is_empty());
    let outcomes: Vec<(&str, &str)> = resumed
        .resumed
        .iter()
        .map(|r| (r.call_id.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(outcomes, [("c2", "executed")]);
    // on_chat_response fired once per turn: suspended (with the calls in its message and the
    // waiting one in its pending list), then completed, for a continuation.
    let seen: Vec<(TurnStatus, bool, usize, Vec<PendingCall>)> = responses
        .take()
        .iter()
        .map(|r| {
            let calls = match &r.message {
                Message::Assistant { tool_calls, .. } => tool_calls.len(),
                _ => 0,
            };
            (r.status, r.continuation, calls, r.pending.clone())
        })
        .collect();
    assert_eq!(
        seen,
        [
            (TurnStatus::Suspended, false, 2, vec![delete_pending()]),
            (TurnStatus::Completed, true, 0, Vec::new())
        ]
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run()",
            "before_turn",
            "before_tool_call(delete c2)",
            "delete(a.txt)",
            "after_tool_call(delete c2 executed)",
            "on_chunk(tool_result:c2 delete ok)",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:Done.)",
            "on_llm_end(0)",
            "on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(
        described(&rows),
        [
            "user:Add, then delete a.txt",
            "assistant:calls c1,c2",
            "tool:c1:5",
            "tool:c2:deleted a.txt",
            "assistant:Done.",
        ]
    );
    assert_whole(&rows);
    assert!(conversation.waiting_calls().await.expect("none").is_empty());
    // The model read both calls, each with its result.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let sent: Vec<(&str, &str)> = requests[1]
        .messages
        .iter()
        .map(|m| (m.role(), m.text()))
        .collect();
    assert_eq!(
        sent,
        [
            ("user", "Add, then delete a.txt"),
            ("assistant", ""),
            ("tool", "5"),
            ("tool", "deleted a.txt"),
        ]
    );
    assert_paired(&requests[1].messages);
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_reads_the_reason() {
    let trace = Trace::new();
    let model = mixed_script();
    let agent = mixed_agent(&model, &trace, Arc::new(agent_core::MemoryStore::new()));
    let conversation = agent.conversation();
    let suspended = conversation.run("Add, then delete a.txt").await;
    assert_eq!(suspended.status, TurnStatus::Suspended);
    trace.take();

    assert_eq!(conversation.deny("c2", "keep it").await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.resumed[0].outcome.as_str(), "blocked");
    // No tool-call hook runs for a denied call, and the tool never does.
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run()",
            "before_turn",
            "on_chunk(tool_result:c2 delete ok)",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:Done.)",
            "on_llm_end(0)",
            "on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(
        described(&rows)[3],
        "tool:c2:tool `delete` was denied: keep it"
    );
    assert_whole(&rows);
}

/// An agent whose gate asks before every `add`, records what it sees (`gate(add approval)`),
/// and blocks an approved call of `a = 13`.
fn asking_agent(model: &ScriptedModel, trace: &Trace) -> Agent {
    let t = trace.clone();
    AgentBuilder::new("calc")
        .model(model.clone())
        .tool(Add::traced(trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<event::BeforeToolCall<AddArgs>>::sync("ask", move |ctx| {
                let approval = ctx
                    .approval
                    .as_ref()
                    .map_or("none".to_owned(), ToString::to_string);
                t.push(format!(
                    "gate(add {},{} {approval})",
                    ctx.input.a, ctx.input.b
                ));
                match &ctx.approval {
                    None => ToolCallDecision::ask("adding needs a second look"),
                    Some(_) if ctx.input.a == 13 => ToolCallDecision::block("13 is unlucky"),
                    Some(_) => ToolCallDecision::Allow,
                }
            }),
        )
        .after_tool_call(
            Matcher::tool("add"),
            Hook::<event::AfterToolCall<AddArgs, i64>>::sync("after", {
                let t = trace.clone();
                move |ctx| {
                    t.push(format!(
                        "after(add {} {})",
                        ctx.outcome.kind(),
                        ctx.approval
                            .as_ref()
                            .map_or("none".to_owned(), ToString::to_string)
                    ))
                }
            }),
        )
        .build()
        .expect("the agent builds")
}

fn add_once(a: i64) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", format!(r#"{{"a":{a},"b":3}}"#)),
        ScriptedStep::new().text("ok"),
    ])
}

#[tokio::test]
async fn a_gate_s_ask_suspends_and_hooks_see_the_approval_that_let_the_call_run() {
    let trace = Trace::new();
    let model = add_once(2);
    let agent = asking_agent(&model, &trace);
    let conversation = agent.conversation();

    let suspended = conversation.run("2+3").await;

    assert_eq!(suspended.status, TurnStatus::Suspended);
    assert_eq!(suspended.pending.len(), 1);
    assert_eq!(suspended.pending[0].reason, "adding needs a second look");
    assert_eq!(suspended.pending[0].arguments, json!({"a": 2, "b": 3}));
    assert_eq!(trace.take(), lines(&["gate(add 2,3 none)"]));

    // An edit that does not fit the tool's arguments is refused, and nothing is lost.
    let refused = conversation
        .approve_with("c1", json!({"a": "nine", "b": 3}))
        .await;
    let Err(AnswerError::InvalidArguments { call_id, error }) = refused else {
        panic!("expected invalid arguments, got {refused:?}");
    };
    assert_eq!(call_id, "c1");
    assert_eq!(error.path, "a");
    // So is an edit that is no object: serde would read the arguments from an array too.
    let refused = conversation.approve_with("c1", json!([4, 3])).await;
    let Err(AnswerError::InvalidArguments { error, .. }) = refused else {
        panic!("expected invalid arguments, got {refused:?}");
    };
    assert_eq!(error.message, "expected a JSON object, found [4,3]");
    assert_eq!(
        conversation.waiting_calls().await.expect("waiting")[0].answer,
        None
    );
    let edited = json!({"a": 4, "b": 3});
    assert_eq!(conversation.approve_with("c1", edited.clone()).await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    let approval = r#"approved with {"a":4,"b":3}"#;
    assert_eq!(
        trace.take(),
        vec![
            format!("gate(add 4,3 {approval})"),
            "add(4,3)".to_owned(),
            format!("after(add executed {approval})"),
        ]
    );
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(described(&rows)[2], "tool:c1:7");
    assert_whole(&rows);
}

/// A gate that modifies the call's input before another asks: the waiting call shows both the
/// model's arguments (what the fingerprint covers) and the modified ones, which are what runs
/// once approved, since the gates run again on resume.
#[tokio::test]
async fn a_call_a_gate_modified_before_another_asked_shows_what_would_run() {
    let trace = Trace::new();
    let model = add_once(2);
    let t = trace.clone();
    let agent = AgentBuilder::new("calc")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<event::BeforeToolCall<AddArgs>>::sync("tenfold", move |ctx| {
                t.push(format!("tenfold(add {},{})", ctx.input.a, ctx.input.b));
                ToolCallDecision::Modify(AddArgs {
                    a: ctx.input.a * 10,
                    b: ctx.input.b,
                })
            }),
        )
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<event::BeforeToolCall<AddArgs>>::sync("ask", {
                let t = trace.clone();
                move |ctx| {
                    t.push(format!("ask(add {},{})", ctx.input.a, ctx.input.b));
                    match ctx.approval {
                        None => ToolCallDecision::ask("check the sum"),
                        Some(_) => ToolCallDecision::Allow,
                    }
                }
            }),
        )
        .build()
        .expect("the agent builds");
    let conversation = agent.conversation();

    let suspended = conversation.run("2+3").await;

    assert_eq!(suspended.status, TurnStatus::Suspended);
    let waiting = &suspended.pending[0];
    assert_eq!(waiting.arguments, json!({"a": 2, "b": 3}));
    assert_eq!(waiting.modified_arguments, Some(json!({"a": 20, "b": 3})));
    assert_eq!(
        conversation.waiting_calls().await.expect("waiting")[0]
            .call
            .modified_arguments,
        Some(json!({"a": 20, "b": 3})),
        "the stored waiting call keeps them"
    );
    assert_eq!(trace.take(), lines(&["tenfold(add 2,3)", "ask(add 20,3)"]));

    assert_eq!(conversation.approve("c1").await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(
        trace.take(),
        lines(&["tenfold(add 2,3)", "ask(add 20,3)", "add(20,3)"])
    );
}

#[tokio::test]
async fn a_gate_blocking_after_the_approval_gives_its_reason() {
    let trace = Trace::new();
    let model = add_once(13);
    let agent = asking_agent(&model, &trace);
    let conversation = agent.conversation();
    assert_eq!(conversation.run("13+3").await.status, TurnStatus::Suspended);

    conversation.approve("c1").await.expect("approved");
    let resumed = conversation.resume().await.expect("resumes");

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "gate(add 13,3 none)",
            "gate(add 13,3 approved)",
            "after(add blocked approved)",
        ])
    );
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(described(&rows)[2], "tool:c1:13 is unlucky");
    assert_whole(&rows);
}

#[tokio::test]
async fn answers_are_checked_and_the_same_answer_twice_is_one_answer() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "delete", r#"{"path":"a"}"#)
            .tool_call("c2", "delete", r#"{"path":"b"}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = mixed_agent(&model, &trace, Arc::new(agent_core::MemoryStore::new()));
    let conversation = agent.conversation();
    assert_eq!(
        conversation.resume().await.err(),
        Some(AnswerError::NotSuspended)
    );
    let suspended = conversation.run("delete a and b").await;
    assert_eq!(suspended.status, TurnStatus::Suspended);
    let ids: Vec<&str> = suspended.pending.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);

    assert_eq!(
        conversation.approve("nope").await,
        Err(AnswerError::UnknownCall {
            call_id: "nope".to_owned()
        })
    );
    assert_eq!(conversation.approve("c1").await, Ok(1));
    assert_eq!(
        conversation.approve("c1").await,
        Ok(1),
        "the same answer again"
    );
    let changed = conversation.deny("c1", "changed my mind").await;
    assert_eq!(
        changed,
        Err(AnswerError::AlreadyAnswered {
            call_id: "c1".to_owned(),
            answer: CallAnswer::Approve
        })
    );
    assert_eq!(
        changed.unwrap_err().to_string(),
        "tool call `c1` is already answered (approved); an answer cannot be changed"
    );
    // Partial answers are kept; the turn resumes only once every call has one.
    assert_eq!(
        conversation.resume().await.err(),
        Some(AnswerError::Unanswered {
            call_ids: vec!["c2".to_owned()]
        })
    );
    // Another turn is refused while the session is suspended; nothing is written or repaired.
    let rows_before = conversation.rows().await.expect("rows");
    let refused = conversation.run("something else").await;
    assert_eq!(refused.status, TurnStatus::Error);
    let error = refused.error.expect("an error");
    assert_eq!(error.kind, TurnErrorKind::Suspended);
    assert!(error.message.contains("c1, c2"), "{}", error.message);
    let continued = conversation.continue_last_turn().await.expect("store");
    assert_eq!(continued.map(|r| r.status), Some(TurnStatus::Error));
    let injected = conversation.inject_message(Message::user("psst")).await;
    assert!(
        injected
            .as_ref()
            .is_err_and(|e| e.message().contains("is suspended")),
        "{injected:?}"
    );
    assert_eq!(conversation.rows().await.expect("rows"), rows_before);

    assert_eq!(conversation.deny("c2", "not b").await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    let runs: Vec<String> = trace
        .take()
        .into_iter()
        .filter(|entry| entry.starts_with("delete("))
        .collect();
    assert_eq!(runs, ["delete(a)"]);
    // Answered and resumed: the call is no longer waiting, and a second resume is refused.
    assert_eq!(
        conversation.approve("c1").await,
        Err(AnswerError::UnknownCall {
            call_id: "c1".to_owned()
        })
    );
    assert_eq!(
        conversation.resume().await.err(),
        Some(AnswerError::NotSuspended)
    );
    assert_whole(&conversation.rows().await.expect("rows"));
}

/// A directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("agent-approval-{}-{name}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn a_suspension_survives_reopening_the_sqlite_file() {
    let dir = TempDir::new("reopen");
    let path = dir.0.join("approval.db");
    let trace = Trace::new();
    {
        let store = SqliteStore::open(&path).expect("open");
        let agent = mixed_agent(&mixed_script(), &trace, Arc::new(store));
        let suspended = agent.session("s1").run("Add, then delete a.txt").await;
        assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    }
    trace.take();

    // Another store on the file (as another process would open it) sees the waiting call.
    let store = SqliteStore::open(&path).expect("reopen");
    let model = ScriptedModel::new([ScriptedStep::new().text("Done.")]);
    let agent = mixed_agent(&model, &trace, Arc::new(store));
    let conversation = agent.session("s1");
    let waiting = conversation.waiting_calls().await.expect("waiting");
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].call, delete_pending());
    assert_suspended(&conversation.rows().await.expect("rows"), &["c2"]);

    assert_eq!(conversation.approve("c2").await, Ok(0));
    let reopened = SqliteStore::open(&path).expect("a third store");
    assert_eq!(
        reopened.suspended("s1").await.expect("kept")[0].answer,
        Some(CallAnswer::Approve)
    );
    let resumed = conversation.resume().await.expect("resumes");

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    let runs: Vec<String> = trace
        .take()
        .into_iter()
        .filter(|entry| entry.starts_with("delete(") || entry.starts_with("add("))
        .collect();
    assert_eq!(runs, ["delete(a.txt)"]);
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(
        described(&rows),
        [
            "user:Add, then delete a.txt",
            "assistant:calls c1,c2",
            "tool:c1:5",
            "tool:c2:deleted a.txt",
            "assistant:Done.",
        ]
    );
    assert_whole(&rows);
    assert!(reopened.suspended("s1").await.expect("none").is_empty());
}

/// Transfers money; a transfer over 1000 needs approval.
#[tool(needs_approval = over_a_thousand)]
fn transfer(amount: u32) -> String {
    format!("sent {amount}")
}

fn over_a_thousand(args: &transfer_tool::TransferArgs) -> bool {
    args.amount > 1000
}

/// Wipes the disk.
#[tool(needs_approval)]
fn wipe() -> String {
    "wiped".to_owned()
}

#[tokio::test]
async fn tool_attribute_needs_approval_always_or_by_a_predicate() {
    use transfer_tool::{Transfer, TransferArgs};
    assert!(!Transfer.needs_approval(&TransferArgs { amount: 10 }));
    assert!(Transfer.needs_approval(&TransferArgs { amount: 5000 }));
    assert!(wipe_tool::Wipe.needs_approval(&wipe_tool::WipeArgs {}));
    assert!(!Add::default().needs_approval(&AddArgs { a: 1, b: 2 }));

    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("small", "transfer", r#"{"amount":10}"#)
            .tool_call("large", "transfer", r#"{"amount":5000}"#),
        ScriptedStep::new().text("ok"),
    ]);
    let agent = AgentBuilder::new("bank")
        .model(model)
        .tool(transfer_tool::Transfer)
        .build()
        .expect("builds");
    let conversation = agent.conversation();
    let suspended = conversation.run("pay").await;
    assert_eq!(suspended.status, TurnStatus::Suspended);
    let ids: Vec<&str> = suspended.pending.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["large"]);
    assert_suspended(&conversation.rows().await.expect("rows"), &["large"]);
}

/// `wait`, needing approval: records `wait` in `trace` when it runs; idempotent when asked.
fn wait_tool(trace: &Trace, idempotent: bool) -> FnTool {
    let trace = trace.clone();
    let tool = FnTool::new(
        "wait",
        "Waits a long time.",
        json!({"type": "object"}),
        move |_, _| {
            trace.push("wait");
            async { Ok::<Value, ToolError>(json!("waited")) }
        },
    )
    .needs_approval(|_| true);
    if idempotent { tool.idempotent() } else { tool }
}

/// Suspends a turn on `wait` in the session `durable` of `db` (a SQLite file or a PostgreSQL
/// database) and approves the call; then another process resumes it and is killed with SIGKILL
/// while the approved tool runs (its lease is 300 ms); then this process resumes again, with
/// `wait` idempotent or not. Returns that last resume's
/// result, what ran here and the session's rows.
async fn killed_during_the_approved_tool(
    db: &crate::durability::Db,
    idempotent: bool,
) -> (agent_core::TurnResult, Vec<String>, Vec<StoredMessage>) {
    let trace = Trace::new();
    {
        let model = ScriptedModel::new([ScriptedStep::new().tool_call("call_1", "wait", "{}")]);
        let agent = AgentBuilder::new("doomed")
            .model(model)
            .store(db.open().await)
            .dyn_tool(wait_tool(&trace, idempotent))
            .build()
            .expect("builds");
        let session = agent.session("durable");
        let suspended = session.run("Please answer.").await;
        assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
        assert_eq!(session.approve("call_1").await, Ok(0));
    }
    let mut child = crate::durability::doomed_turn(db, "approved", 300);
    child.kill().expect("SIGKILL the child");
    assert!(!child.wait().expect("reap the child").success());

    let model = ScriptedModel::new([ScriptedStep::new().text("Sorry about that.")]);
    let agent = AgentBuilder::new("doomed")
        .model(model)
        .store(db.open().await)
        .dyn_tool(wait_tool(&trace, idempotent))
        .build()
        .expect("builds");
    let session = agent.session("durable");
    let waiting = session.waiting_calls().await.expect("waiting");
    assert_eq!(waiting.len(), 1, "the call still waits: {waiting:?}");
    assert_eq!(waiting[0].answer, Some(CallAnswer::Approve));
    assert!(
        waiting[0].started_at.is_some(),
        "its execution record says it started"
    );
    let resumed = session.resume().await.expect("resumes");
    let rows = session.rows().await.expect("rows");
    (resumed, trace.take(), rows)
}

#[tokio::test]
async fn an_approved_call_killed_mid_run_is_reported_interrupted_and_never_run_again() {
    killed_and_not_run_again(crate::durability::Db::sqlite("approved-interrupted")).await;
}

#[tokio::test]
async fn an_approved_postgres_call_killed_mid_run_is_reported_interrupted_and_never_run_again() {
    killed_and_not_run_again(crate::durability::Db::postgres("approved-interrupted").await).await;
}

async fn killed_and_not_run_again(db: crate::durability::Db) {
    let (resumed, ran, rows) = killed_during_the_approved_tool(&db, false).await;

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    let outcomes: Vec<&str> = resumed.resumed.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, ["interrupted"]);
    assert!(ran.is_empty(), "the tool did not run again: {ran:?}");
    assert_eq!(
        described(&rows),
        [
            "user:Please answer.",
            "assistant:calls call_1",
            "tool:call_1:tool `wait` was interrupted: it started after its approval and its \
             process stopped before it finished; it may have taken effect, and was not run again",
            "assistant:Sorry about that.",
        ]
    );
    assert!(matches!(
        &rows[2].message,
        Message::Tool { is_error: true, .. }
    ));
    assert_whole(&rows);
}

#[tokio::test]
async fn an_idempotent_approved_call_killed_mid_run_runs_again_once() {
    killed_and_run_again_once(crate::durability::Db::sqlite("approved-idempotent")).await;
}

#[tokio::test]
async fn an_idempotent_approved_postgres_call_killed_mid_run_runs_again_once() {
    killed_and_run_again_once(crate::durability::Db::postgres("approved-idempotent").await).await;
}

async fn killed_and_run_again_once(db: crate::durability::Db) {
    let (resumed, ran, rows) = killed_during_the_approved_tool(&db, true).await;

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    let outcomes: Vec<&str> = resumed.resumed.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, ["executed"]);
    assert_eq!(ran, ["wait"]);
    assert_eq!(described(&rows)[2], "tool:call_1:waited");
    assert_whole(&rows);
}

#[tokio::test]
async fn an_answer_given_with_a_fingerprint_must_match_the_waiting_call() {
    let trace = Trace::new();
    let agent = mixed_agent(
        &mixed_script(),
        &trace,
        Arc::new(agent_core::MemoryStore::new()),
    );
    let conversation = agent.conversation();
    let suspended = conversation.run("Add, then delete a.txt").await;
    let print = suspended.pending[0].fingerprint.clone();
    // A fingerprint of other arguments (a stale view of the call) answers nothing.
    let stale = "d31b2f9baff97c7df44018ce6a5e7b81ea8811b53d7ffc2de17b2467ffc25818";

    let refused = conversation
        .answer("c2", CallAnswer::Approve, Some(stale))
        .await;

    assert_eq!(
        refused,
        Err(AnswerError::BadToken {
            call_id: "c2".to_owned()
        })
    );
    assert_eq!(
        conversation.waiting_calls().await.expect("waiting")[0].answer,
        None
    );
    assert_eq!(
        conversation
            .answer("c2", CallAnswer::Approve, Some(&print))
            .await,
        Ok(0)
    );
    let resumed = conversation.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
}

/// The approval key changed while a turn was suspended (a rotated secret, a restart with
/// another configuration): the tokens given out under the old key no longer answer, and the
/// waiting calls listed by the agent with the new key carry the tokens that do, so the session
/// is not stuck.
#[tokio::test]
async fn after_the_approval_key_changed_the_listed_waiting_calls_carry_tokens_that_answer() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(agent_core::MemoryStore::new());
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c2", "delete", r#"{"path":"a.txt"}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = |key: &[u8]| {
        AgentBuilder::new("files")
            .model(model.clone())
            .store(store.clone())
            .dyn_tool(delete_tool(&trace))
            .approval_key(key.to_vec())
            .build()
            .expect("builds")
    };
    // Kept open: a memory store lets go of a session no handle holds.
    let first = agent(b"the old key").session("s");
    let suspended = first.run("delete a.txt").await;
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    let old_token = suspended.pending[0].token.clone().expect("a token");

    let rotated = agent(b"the new key").session("s");
    assert_eq!(
        rotated
            .answer("c2", CallAnswer::Approve, Some(&old_token))
            .await,
        Err(AnswerError::BadToken {
            call_id: "c2".to_owned()
        })
    );
    let waiting = rotated.waiting_calls().await.expect("waiting");
    let new_token = waiting[0].call.token.clone().expect("a token");
    assert_ne!(new_token, old_token);
    assert_eq!(
        rotated
            .answer("c2", CallAnswer::Approve, Some(&new_token))
            .await,
        Ok(0)
    );
    let resumed = rotated.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(trace.take(), ["delete(a.txt)"]);
}

#[tokio::test]
async fn with_an_approval_key_only_the_call_s_own_token_answers_it() {
    let trace = Trace::new();
    // In call order: the first session's turn, the second's, the first's resume and next turn.
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c2", "delete", r#"{"path":"a.txt"}"#),
        ScriptedStep::new().tool_call("c2", "delete", r#"{"path":"a.txt"}"#),
        ScriptedStep::new().text("Done."),
        ScriptedStep::new().tool_call("c2", "delete", r#"{"path":"a.txt"}"#),
    ]);
    let agent = AgentBuilder::new("files")
        .model(model)
        .dyn_tool(delete_tool(&trace))
        .approval_key(b"0123456789abcdef0123456789abcdef".to_vec())
        .build()
        .expect("builds");
    let first = agent.session("first");
    let suspended = first.run("delete a.txt").await;
    let token = suspended.pending[0].token.clone().expect("a token");
    assert_eq!(token.len(), 64);
    let c2 = || "c2".to_owned();

    // Without a token, or with a forged one, nothing is answered.
    assert_eq!(
        first.approve("c2").await,
        Err(AnswerError::TokenRequired { call_id: c2() })
    );
    let forged = "0".repeat(64);
    assert_eq!(
        first.answer("c2", CallAnswer::Approve, Some(&forged)).await,
        Err(AnswerError::BadToken { call_id: c2() })
    );
    // The same call id, tool and arguments in another session have another token.
    let second = agent.session("second");
    let other = second.run("delete a.txt").await;
    let other_token = other.pending[0].token.clone().expect("a token");
    assert_ne!(other_token, token);
    assert_eq!(
        second.answer("c2", CallAnswer::Approve, Some(&token)).await,
        Err(AnswerError::BadToken { call_id: c2() })
    );

    assert_eq!(
        first.answer("c2", CallAnswer::Approve, Some(&token)).await,
        Ok(0)
    );
    let resumed = first.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    // Replayed against a later suspension of the same call id in the same session: refused.
    let again = first.run("delete a.txt again").await;
    assert_eq!(again.status, TurnStatus::Suspended, "{again:?}");
    assert_ne!(again.pending[0].token.as_deref(), Some(token.as_str()));
    let replayed = first.answer("c2", CallAnswer::Approve, Some(&token)).await;
    assert_eq!(replayed, Err(AnswerError::BadToken { call_id: c2() }));
    assert_eq!(
        replayed.unwrap_err().to_string(),
        "the answer's token does not match waiting tool call `c2`: it was forged, or made for \
         another call or an earlier suspension of it; nothing was answered"
    );
    let runs: Vec<String> = trace.take();
    assert_eq!(runs, ["delete(a.txt)"]);
}

#[tokio::test]
async fn a_client_tool_s_call_waits_for_the_result_the_client_submits() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "get_location", "{}"),
        ScriptedStep::new().text("You are in Oslo."),
    ]);
    let location = ClientTool::new(
        "get_location",
        "The user's location, from their device.",
        json!({"type": "object", "properties": {}}),
    );
    let agent = AgentBuilder::new("guide")
        .model(model.clone())
        .dyn_tool(location)
        .record_tool_calls(&trace)
        .build()
        .expect("builds");
    let conversation = agent.conversation();

    let suspended = conversation.run("Where am I?").await;

    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    let pending = &suspended.pending[0];
    assert_eq!(pending.kind, PendingKind::Client);
    assert_eq!(pending.reason, "tool `get_location` runs on the client");
    // The gates ran; the tool is the client's.
    assert_eq!(trace.take(), lines(&["before_tool_call(get_location c1)"]));
    let wrong = conversation.approve("c1").await;
    assert_eq!(
        wrong,
        Err(AnswerError::WrongKind {
            call_id: "c1".to_owned(),
            kind: PendingKind::Client
        })
    );
    assert_eq!(
        wrong.unwrap_err().to_string(),
        "tool call `c1` waits for a result (kind `client`), not an approval: submit it with \
         `submit_result`, or deny it"
    );

    assert_eq!(
        conversation
            .submit_result("c1", json!({"city": "Oslo"}))
            .await,
        Ok(0)
    );
    let resumed = conversation.resume().await.expect("resumes");

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.text, "You are in Oslo.");
    assert!(
        trace.take().is_empty(),
        "no tool-call hook runs for a submitted result"
    );
    let requests = model.requests();
    assert_eq!(
        requests[1].messages.last(),
        Some(&Message::Tool {
            call_id: "c1".into(),
            name: "get_location".into(),
            content: r#"{"city":"Oslo"}"#.into(),
            is_error: false,
        })
    );
    assert_whole(&conversation.rows().await.expect("rows"));
}

#[tokio::test]
async fn a_deferred_call_takes_a_submitted_result_and_an_approval_does_not_fit_it() {
    let trace = Trace::new();
    let model = add_once(2);
    let agent = AgentBuilder::new("calc")
        .model(model)
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<event::BeforeToolCall<AddArgs>>::sync("ledger", |_| {
                ToolCallDecision::defer("the ledger adds it")
            }),
        )
        .build()
        .expect("builds");
    let conversation = agent.conversation();

    let suspended = conversation.run("2+3").await;

    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    assert_eq!(suspended.pending[0].kind, PendingKind::Deferred);
    assert_eq!(suspended.pending[0].reason, "the ledger adds it");
    assert!(matches!(
        conversation.approve("c1").await,
        Err(AnswerError::WrongKind { .. })
    ));
    assert_eq!(conversation.submit_result("c1", json!(5)).await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert!(trace.take().is_empty(), "the tool never ran here");
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(described(&rows)[2], "tool:c1:5");
    assert_whole(&rows);
}

#[tokio::test]
async fn a_result_does_not_answer_a_call_waiting_for_approval() {
    let trace = Trace::new();
    let agent = mixed_agent(
        &mixed_script(),
        &trace,
        Arc::new(agent_core::MemoryStore::new()),
    );
    let conversation = agent.conversation();
    assert_eq!(
        conversation.run("Add, then delete a.txt").await.status,
        TurnStatus::Suspended
    );

    let refused = conversation.submit_result("c2", json!("deleted")).await;

    assert_eq!(
        refused,
        Err(AnswerError::WrongKind {
            call_id: "c2".to_owned(),
            kind: PendingKind::Approval
        })
    );
}

#[tokio::test]
async fn an_approved_call_a_gate_defers_when_it_runs_waits_again() {
    let trace = Trace::new();
    let model = add_once(2);
    let agent = AgentBuilder::new("calc")
        .model(model)
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<event::BeforeToolCall<AddArgs>>::sync("ask, then defer", |ctx| {
                match ctx.approval {
                    None => ToolCallDecision::ask("check first"),
                    Some(_) => ToolCallDecision::defer("the ledger adds it"),
                }
            }),
        )
        .build()
        .expect("builds");
    let conversation = agent.conversation();
    assert_eq!(conversation.run("2+3").await.status, TurnStatus::Suspended);
    assert_eq!(conversation.approve("c1").await, Ok(0));

    let again = conversation.resume().await.expect("resumes");

    assert_eq!(again.status, TurnStatus::Suspended, "{again:?}");
    assert_eq!(again.pending.len(), 1);
    assert_eq!(again.pending[0].kind, PendingKind::Deferred);
    assert_eq!(again.pending[0].reason, "the ledger adds it");
    assert_suspended(&conversation.rows().await.expect("rows"), &["c1"]);
    let waiting = conversation.waiting_calls().await.expect("waiting");
    assert_eq!(
        (waiting[0].answer.clone(), waiting[0].started_at),
        (None, None)
    );
    assert_eq!(conversation.submit_result("c1", json!(5)).await, Ok(0));
    let done = conversation.resume().await.expect("resumes");
    assert_eq!(done.status, TurnStatus::Completed, "{done:?}");
    assert!(trace.take().is_empty(), "the tool never ran");
    assert_whole(&conversation.rows().await.expect("rows"));
}

#[tokio::test]
async fn a_tool_approved_for_good_runs_without_asking_until_revoked() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "delete", r#"{"path":"a"}"#)
            .tool_call("c2", "delete", r#"{"path":"b"}"#),
        ScriptedStep::new().text("Deleted both."),
        ScriptedStep::new().tool_call("c3", "delete", r#"{"path":"c"}"#),
        ScriptedStep::new().text("Deleted c."),
        ScriptedStep::new().tool_call("c4", "delete", r#"{"path":"d"}"#),
    ]);
    let t = trace.clone();
    let agent = AgentBuilder::new("files")
        .model(model)
        .dyn_tool(delete_tool(&trace))
        .before_tool_call(
            Matcher::tool("delete").dynamic(),
            Hook::<event::BeforeToolCall<Value>>::sync("gate", move |ctx| {
                let approval = ctx
                    .approval
                    .as_ref()
                    .map_or("none".to_owned(), ToString::to_string);
                t.push(format!("gate({} {approval})", ctx.call_id));
            }),
        )
        .build()
        .expect("builds");
    let conversation = agent.conversation();
    assert_eq!(
        conversation.run("delete a and b").await.status,
        TurnStatus::Suspended
    );
    trace.take();

    // One answer approves both waiting calls of the tool, and the tool for the session.
    assert_eq!(conversation.approve_always("c1").await, Ok(0));
    assert_eq!(
        conversation.approved_tools().await.expect("tools"),
        ["delete"]
    );
    let waiting = conversation.waiting_calls().await.expect("waiting");
    let answers: Vec<Option<CallAnswer>> = waiting.iter().map(|w| w.answer.clone()).collect();
    assert_eq!(
        answers,
        [
            Some(CallAnswer::ApproveAlways),
            Some(CallAnswer::ApproveAlways)
        ]
    );
    let resumed = conversation.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");

    // A later call of the tool runs without asking; the gate sees the standing approval.
    let later = conversation.run("delete c").await;
    assert_eq!(later.status, TurnStatus::Completed, "{later:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "gate(c1 approved for the session)",
            "delete(a)",
            "gate(c2 approved for the session)",
            "delete(b)",
            "gate(c3 approved for the session)",
            "delete(c)",
        ])
    );

    assert_eq!(conversation.revoke_approval("delete").await, Ok(true));
    assert_eq!(conversation.revoke_approval("delete").await, Ok(false));
    let asks = conversation.run("delete d").await;
    assert_eq!(asks.status, TurnStatus::Suspended, "{asks:?}");
    assert_eq!(asks.pending[0].id, "c4");
    assert_eq!(trace.take(), lines(&["gate(c4 none)"]));
}

#[tokio::test]
async fn a_call_suspended_after_a_handoff_resumes_on_the_agent_that_made_it() {
    let trace = Trace::new();
    let triage_model = ScriptedModel::with_id(
        "triage-model",
        [ScriptedStep::new().tool_call("h1", "transfer_to_billing", "{}")],
    );
    let billing_model = ScriptedModel::with_id(
        "billing-model",
        [
            ScriptedStep::new().tool_call("c1", "delete", r#"{"path":"invoice.pdf"}"#),
            ScriptedStep::new().text("Billing is done."),
        ],
    );
    let billing = AgentBuilder::new("billing")
        .model(billing_model.clone())
        .dyn_tool(delete_tool(&trace))
        .build()
        .expect("billing builds");
    let triage = AgentBuilder::new("triage")
        .model(triage_model)
        .handoff(&billing)
        .build()
        .expect("triage builds");
    let conversation = triage.conversation();

    let suspended = conversation.run("Delete my invoice").await;

    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    assert_eq!(&*suspended.agent.name, "billing");
    let waiting = conversation.waiting_calls().await.expect("waiting");
    assert_eq!(waiting[0].agent, "billing");
    conversation.approve("c1").await.expect("approved");
    let resumed = conversation.resume().await.expect("resumes");

    // Billing's tool runs and billing's model goes on, as before the suspension.
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(&*resumed.agent.name, "billing");
    assert_eq!(resumed.text, "Billing is done.");
    assert_eq!(trace.take(), lines(&["delete(invoice.pdf)"]));
    assert_eq!(billing_model.requests().len(), 2);
    assert_whole(&conversation.rows().await.expect("rows"));
}

#[tokio::test]
async fn a_resumed_turn_streams_the_waiting_call_s_result_then_the_model_s_answer() {
    let trace = Trace::new();
    let agent = mixed_agent(
        &mixed_script(),
        &trace,
        Arc::new(agent_core::MemoryStore::new()),
    );
    let conversation = agent.conversation();
    assert_eq!(
        conversation.run("Add, then delete a.txt").await.status,
        TurnStatus::Suspended
    );
    conversation.approve("c2").await.expect("approved");

    let mut events = conversation
        .resume_stream(TurnRequest::default())
        .await
        .expect("resumes");
    let mut seen = Vec::new();
    while let Some(event) = within("the resumed stream", events.next()).await {
        seen.push(match event {
            TurnEvent::Chunk { chunk, .. } => describe_chunk(&chunk),
            TurnEvent::StepFinished(record) => format!("step_finished({})", record.step),
            TurnEvent::Finished(result) => format!("finished({})", result.status),
            other => format!("{other:?}"),
        });
    }

    assert_eq!(
        seen,
        lines(&[
            "tool_result:c2 delete ok",
            "text:Done.",
            "step_finished(0)",
            "finished(completed)",
        ])
    );
}

#[tokio::test]
async fn a_waiting_call_sharing_its_id_with_a_call_that_ran_is_still_answered_on_resume() {
    let trace = Trace::new();
    // The model repeats `c1` in one step: `add` runs, `delete` waits for approval.
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
            .tool_call("c1", "delete", r#"{"path":"a.txt"}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = mixed_agent(&model, &trace, Arc::new(agent_core::MemoryStore::new()));
    let conversation = agent.conversation();
    let suspended = conversation.run("Add, then delete a.txt").await;
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    let ids: Vec<(&str, &str)> = suspended
        .pending
        .iter()
        .map(|p| (p.id.as_str(), p.tool.as_str()))
        .collect();
    assert_eq!(ids, [("c1", "delete")]);
    trace.take();

    assert_eq!(conversation.approve("c1").await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");

    // The result `add` stored under `c1` answers `add`, not the waiting `delete`: it runs.
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run()",
            "before_turn",
            "before_tool_call(delete c1)",
            "delete(a.txt)",
            "after_tool_call(delete c1 executed)",
            "on_chunk(tool_result:c1 delete ok)",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:Done.)",
            "on_llm_end(0)",
            "on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(
        described(&rows),
        [
            "user:Add, then delete a.txt",
            "assistant:calls c1,c1",
            "tool:c1:5",
            "tool:c1:deleted a.txt",
            "assistant:Done.",
        ]
    );
    assert!(conversation.waiting_calls().await.expect("none").is_empty());
}

#[tokio::test]
async fn a_step_that_suspends_and_hands_off_hands_off_once_its_calls_are_answered() {
    let trace = Trace::new();
    let triage_model = ScriptedModel::with_id(
        "triage-model",
        [ScriptedStep::new()
            .tool_call("c1", "delete", r#"{"path":"a.txt"}"#)
            .tool_call("h1", "transfer_to_billing", "{}")],
    );
    let billing_model = ScriptedModel::with_id(
        "billing-model",
        [ScriptedStep::new().text("Billing is done.")],
    );
    let (t1, t2) = (trace.clone(), trace.clone());
    let billing = AgentBuilder::new("billing")
        .model(billing_model.clone())
        .hook(Hook::<event::BeforeStep>::sync("trace", move |ctx| {
            t1.push(format!("billing:before_step({})", ctx.step));
        }))
        .hook(Hook::<event::OnStepFinish>::sync("trace", move |ctx| {
            t2.push(format!("billing:on_step_finish({})", ctx.step));
        }))
        .build()
        .expect("billing builds");
    let t = trace.clone();
    let triage = AgentBuilder::new("triage")
        .model(triage_model)
        .dyn_tool(delete_tool(&trace))
        .handoff(&billing)
        .hook(Hook::<event::BeforeHandoff>::sync("trace", move |ctx| {
            t.push(format!("before_handoff({}->{})", ctx.from, ctx.to));
            agent_core::HandoffDecision::Allow
        }))
        .record_all(&trace)
        .build()
        .expect("triage builds");
    let conversation = triage.conversation();

    let suspended = conversation.run("Delete a.txt, then bill me").await;

    // The handoff was allowed but not taken: the step's call waits on triage.
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    assert_eq!(&*suspended.agent.name, "triage");
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(Delete a.txt, then bill me)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c1 delete)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 delete)",
            "on_chunk(tool_start:h1 transfer_to_billing)",
            "on_chunk(tool_input:h1)",
            "on_chunk(tool_call:h1 transfer_to_billing)",
            "on_llm_end(0)",
            "before_tool_call(delete c1)",
            "before_handoff(triage->billing)",
            "on_chunk(tool_result:h1 transfer_to_billing ok)",
            "on_step_finish(0)",
            "on_chat_response(suspended)",
        ])
    );
    let waiting = conversation.waiting_calls().await.expect("waiting");
    assert_eq!(waiting[0].handoff.as_deref(), Some("billing"));
    assert!(billing_model.requests().is_empty());

    conversation.approve("c1").await.expect("approved");
    let resumed = conversation.resume().await.expect("resumes");

    // The call runs on triage, then the kept handoff is taken: billing's model answers.
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(&*resumed.agent.name, "billing");
    assert_eq!(resumed.text, "Billing is done.");
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run()",
            "before_turn",
            "before_tool_call(delete c1)",
            "delete(a.txt)",
            "after_tool_call(delete c1 executed)",
            "on_chunk(tool_result:c1 delete ok)",
            "billing:before_step(0)",
            "billing:on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(
        described(&rows),
        [
            "user:Delete a.txt, then bill me",
            "assistant:calls c1,h1",
            "tool:h1:Transferred to agent `billing`.",
            "tool:c1:deleted a.txt",
            "assistant:Billing is done.",
        ]
    );
    assert_whole(&rows);
    // Billing's model read the whole step, each call with its result.
    assert_paired(&billing_model.requests()[0].messages);
}

/// `worker` on `store`: asks to delete the file (which needs approval) with `model`; its hooks
/// are traced with the prefix `worker:`.
pub(crate) fn worker(model: &ScriptedModel, trace: &Trace, store: Arc<dyn SessionStore>) -> Agent {
    let tagged = |event: &'static str| {
        let t = trace.clone();
        move |detail: String| t.push(format!("worker:{event}({detail})"))
    };
    let (run, step, finish) = (
        tagged("before_run"),
        tagged("before_step"),
        tagged("on_step_finish"),
    );
    let (before, after, end) = (
        tagged("before_tool_call"),
        tagged("after_tool_call"),
        tagged("after_run"),
    );
    let response = tagged("on_chat_response");
    AgentBuilder::new("worker")
        .model(model.clone())
        .dyn_tool(delete_tool(trace))
        .store(store)
        .hook(Hook::<event::BeforeRun>::sync("trace", move |ctx| {
            run(ctx.input.clone())
        }))
        .hook(Hook::<event::BeforeStep>::sync("trace", move |ctx| {
            step(ctx.step.to_string())
        }))
        .hook(Hook::<event::OnStepFinish>::sync("trace", move |ctx| {
            finish(ctx.step.to_string())
        }))
        .hook(Hook::<event::AfterRun>::sync("trace", move |ctx| {
            end(ctx.status.to_string())
        }))
        .hook(Hook::<event::OnChatResponse>::sync("trace", move |ctx| {
            response(ctx.status.to_string())
        }))
        .before_tool_call(
            Matcher::all().dynamic(),
            Hook::<event::BeforeToolCall<Value>>::sync("trace", move |ctx| {
                let approval = ctx
                    .approval
                    .as_ref()
                    .map(|a| format!(" {a}"))
                    .unwrap_or_default();
                before(format!("{} {}{approval}", ctx.tool_name, ctx.call_id));
            }),
        )
        .after_tool_call(
            Matcher::all().dynamic(),
            Hook::<event::AfterToolCall<Value>>::sync("trace", move |ctx| {
                after(format!(
                    "{} {} {}",
                    ctx.tool_name,
                    ctx.call_id,
                    ctx.outcome.kind()
                ));
            }),
        )
        .build()
        .expect("the worker builds")
}

/// `boss` on `store`, asking `worker` as a subagent with `model`; traced (`record_all`, and
/// on_subagent_start / on_subagent_stop).
pub(crate) fn boss(
    model: &ScriptedModel,
    worker: &Agent,
    trace: &Trace,
    store: Arc<dyn SessionStore>,
) -> Agent {
    let (t1, t2) = (trace.clone(), trace.clone());
    AgentBuilder::new("boss")
        .model(model.clone())
        .subagent(worker)
        .store(store)
        .hook(Hook::<event::OnSubagentStart>::sync("trace", move |ctx| {
            t1.push(format!(
                "on_subagent_start({} {})",
                ctx.subagent, ctx.call_id
            ));
        }))
        .hook(Hook::<event::OnSubagentStop>::sync("trace", move |ctx| {
            t2.push(format!(
                "on_subagent_stop({} {})",
                ctx.subagent, ctx.call_id
            ));
        }))
        .record_all(trace)
        .build()
        .expect("the boss builds")
}

#[tokio::test]
async fn a_subagent_s_call_waiting_for_approval_suspends_its_caller_and_resumes_inside_it() {
    let dir = TempDir::new("subagent");
    let path = dir.0.join("approval.db");
    let trace = Trace::new();
    let worker_session = {
        let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).expect("open"));
        let worker_model =
            ScriptedModel::new([ScriptedStep::new().tool_call("w1", "delete", r#"{"path":"x"}"#)]);
        let boss_model = ScriptedModel::new([ScriptedStep::new().tool_call(
            "s1",
            "worker",
            r#"{"input":"delete x"}"#,
        )]);
        let worker = worker(&worker_model, &trace, store.clone());
        let boss = boss(&boss_model, &worker, &trace, store);
        let conversation = boss.session("s1");

        let suspended = conversation.run("Have x deleted").await;

        // The worker's turn suspends inside the call to it, and so does the boss's.
        assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
        let mut expected = delete_pending();
        expected.id = "w1".to_owned();
        expected.arguments = json!({"path": "x"});
        // SHA-256 of `delete`, a zero byte and `{"path":"x"}`.
        expected.fingerprint =
            "e54c3e4193860dbf3acd944f71f97423e9fe674ca113d3aeda42d60da49cf253".to_owned();
        expected.path = vec!["worker".to_owned()];
        assert_eq!(suspended.pending, [expected.clone()]);
        assert_eq!(
            trace.take(),
            lines(&[
                "before_run(Have x deleted)",
                "before_turn",
                "before_step(0)",
                "on_llm_start(0)",
                "on_chunk(tool_start:s1 worker)",
                "on_chunk(tool_input:s1)",
                "on_chunk(tool_call:s1 worker)",
                "on_llm_end(0)",
                "before_tool_call(worker s1)",
                "on_subagent_start(worker s1)",
                "worker:before_run(delete x)",
                "worker:before_step(0)",
                "worker:before_tool_call(delete w1)",
                "worker:on_step_finish(0)",
                "worker:on_chat_response(suspended)",
                "on_step_finish(0)",
                "on_chat_response(suspended)",
            ])
        );
        let waiting = conversation.waiting_calls().await.expect("waiting");
        assert_eq!(waiting.len(), 1);
        let via = waiting[0].via.as_ref().expect("waits in the worker's turn");
        assert_eq!((via.call_id.as_str(), via.tool.as_str()), ("s1", "worker"));
        assert_suspended(&conversation.rows().await.expect("rows"), &["s1"]);
        via.session.clone()
    };

    // Another process: the same file, new agents whose models go on from there.
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).expect("reopen"));
    let worker_model = ScriptedModel::new([ScriptedStep::new().text("Deleted x.")]);
    let boss_model = ScriptedModel::new([ScriptedStep::new().text("The worker deleted x.")]);
    let worker = worker(&worker_model, &trace, store.clone());
    let boss = boss(&boss_model, &worker, &trace, store.clone());
    let conversation = boss.session("s1");
    assert_eq!(conversation.approve("w1").await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");

    // The worker's turn resumes inside the boss's call to it: its call runs once, its model
    // answers, and that answer is the call's result the boss's model reads.
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.text, "The worker deleted x.");
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run()",
            "before_turn",
            "before_tool_call(worker s1)",
            "on_subagent_start(worker s1)",
            "worker:before_run()",
            "worker:before_tool_call(delete w1 approved)",
            "delete(x)",
            "worker:after_tool_call(delete w1 executed)",
            "worker:before_step(0)",
            "worker:on_step_finish(0)",
            "worker:after_run(completed)",
            "worker:on_chat_response(completed)",
            "on_subagent_stop(worker s1)",
            "after_tool_call(worker s1 executed)",
            "on_chunk(tool_result:s1 worker ok)",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:The worker deleted x.)",
            "on_llm_end(0)",
            "on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    let outcomes: Vec<(&str, &str, &str)> = resumed
        .resumed
        .iter()
        .map(|r| (r.call_id.as_str(), r.outcome.as_str(), r.content.as_str()))
        .collect();
    assert_eq!(outcomes, [("s1", "executed", "Deleted x.")]);
    let rows = conversation.rows().await.expect("rows");
    assert_eq!(
        described(&rows),
        [
            "user:Have x deleted",
            "assistant:calls s1",
            "tool:s1:Deleted x.",
            "assistant:The worker deleted x.",
        ]
    );
    assert_whole(&rows);
    assert!(conversation.waiting_calls().await.expect("none").is_empty());
    // The worker's session, in its store, holds its whole turn, no longer suspended.
    let rows = store
        .load(&worker_session)
        .await
        .expect("the worker's rows");
    assert_eq!(
        described(&rows),
        [
            "user:delete x",
            "assistant:calls w1",
            "tool:w1:deleted x",
            "assistant:Deleted x.",
        ]
    );
    assert!(
        store
            .suspended(&worker_session)
            .await
            .expect("none")
            .is_empty()
    );
}

/// `boss` with a `delete` tool of its own beside the subagent `worker`, whose `delete` is
/// another tool of the same name: one step calls the boss's `delete` (c1) and the worker (c2),
/// whose step calls its own `delete` (w1). Each waits for approval.
async fn two_deletes_waiting(trace: &Trace) -> Conversation {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let worker_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("w1", "delete", r#"{"path":"/prod/db"}"#),
        ScriptedStep::new().text("Worker done."),
    ]);
    let worker = AgentBuilder::new("worker")
        .model(worker_model)
        .dyn_tool(delete_tool(trace))
        .store(store.clone())
        .build()
        .expect("the worker builds");
    let boss_model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "delete", r#"{"path":"tmp.txt"}"#)
            .tool_call("c2", "worker", r#"{"input":"clean up"}"#),
        ScriptedStep::new().text("Boss done."),
    ]);
    let boss = AgentBuilder::new("boss")
        .model(boss_model)
        .dyn_tool(delete_tool(trace))
        .subagent(&worker)
        .store(store)
        .build()
        .expect("the boss builds");
    let conversation = boss.conversation();
    let suspended = conversation.run("Tidy up").await;
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    let waiting: Vec<(&str, &[String])> = suspended
        .pending
        .iter()
        .map(|call| (call.id.as_str(), call.path.as_slice()))
        .collect();
    assert_eq!(
        waiting,
        [("c1", &[][..]), ("w1", &["worker".to_owned()][..])]
    );
    conversation
}

/// Each waiting call's id and answer.
async fn answers(conversation: &Conversation) -> Vec<(String, Option<CallAnswer>)> {
    let waiting = conversation.waiting_calls().await.expect("waiting");
    waiting.into_iter().map(|w| (w.call.id, w.answer)).collect()
}

/// Approving a tool for good approves that agent's tool: not a subagent's tool of the same
/// name (whose call the person never saw approved), and a subagent's call approved for good
/// leaves the caller's own tool of that name asking.
#[tokio::test]
async fn approving_a_tool_for_good_approves_the_calling_agent_s_tool_only() {
    let trace = Trace::new();
    let conversation = two_deletes_waiting(&trace).await;
    assert_eq!(conversation.approve_always("c1").await, Ok(1));
    assert_eq!(
        answers(&conversation).await,
        [
            ("c1".to_owned(), Some(CallAnswer::ApproveAlways)),
            ("w1".to_owned(), None),
        ]
    );
    assert_eq!(conversation.approved_tools().await.unwrap(), ["delete"]);
    conversation.deny("w1", "not the database").await.unwrap();
    let resumed = conversation.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(trace.take(), lines(&["delete(tmp.txt)"]));

    let trace = Trace::new();
    let conversation = two_deletes_waiting(&trace).await;
    assert_eq!(conversation.approve_always("w1").await, Ok(1));
    assert_eq!(
        answers(&conversation).await,
        [
            ("c1".to_owned(), None),
            ("w1".to_owned(), Some(CallAnswer::ApproveAlways)),
        ]
    );
    assert_eq!(
        conversation.approved_tools().await.unwrap(),
        Vec::<String>::new()
    );
    conversation.deny("c1", "keep it").await.unwrap();
    let resumed = conversation.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(trace.take(), lines(&["delete(/prod/db)"]));
}

/// A handoff target's tool approved for good is kept as `billing/delete`: it runs without
/// asking whenever billing calls it again in the session, while the agent asked's own
/// `delete`, another tool of the same name, still asks.
#[tokio::test]
async fn a_handoff_target_s_tool_approved_for_good_is_that_agent_s_only() {
    let trace = Trace::new();
    let billing_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("b1", "delete", r#"{"path":"old-invoice.pdf"}"#),
        ScriptedStep::new().text("Billing: deleted."),
        ScriptedStep::new().tool_call("b2", "delete", r#"{"path":"older-invoice.pdf"}"#),
        ScriptedStep::new().text("Billing: deleted again."),
    ]);
    let billing = AgentBuilder::new("billing")
        .model(billing_model)
        .dyn_tool(delete_tool(&trace))
        .build()
        .expect("billing builds");
    let triage_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("h1", "transfer_to_billing", "{}"),
        ScriptedStep::new().tool_call("t1", "delete", r#"{"path":"/home/user"}"#),
        ScriptedStep::new().text("Triage: kept it."),
        ScriptedStep::new().tool_call("h2", "transfer_to_billing", "{}"),
    ]);
    let triage = AgentBuilder::new("triage")
        .model(triage_model)
        .dyn_tool(delete_tool(&trace))
        .handoff(&billing)
        .build()
        .expect("triage builds");
    let conversation = triage.conversation();

    let suspended = conversation.run("Remove my old invoice").await;
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    assert_eq!(conversation.approve_always("b1").await, Ok(0));
    assert_eq!(
        conversation.approved_tools().await.unwrap(),
        ["billing/delete"]
    );
    let resumed = conversation.resume().await.expect("resumes");
    assert_eq!(resumed.text, "Billing: deleted.");

    // Triage's own `delete` still asks.
    let asked = conversation.run("And my home folder").await;
    assert_eq!(asked.status, TurnStatus::Suspended, "{asked:?}");
    let waiting: Vec<&str> = asked.pending.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(waiting, ["t1"]);
    conversation.deny("t1", "no").await.unwrap();
    let kept = conversation.resume().await.expect("resumes");
    assert_eq!(kept.text, "Triage: kept it.");

    // Billing's runs without asking.
    let again = conversation.run("One more invoice").await;
    assert_eq!(again.text, "Billing: deleted again.", "{again:?}");
    assert_eq!(
        trace.take(),
        lines(&["delete(old-invoice.pdf)", "delete(older-invoice.pdf)"])
    );
}

#[tokio::test]
async fn answering_the_last_waiting_call_continues_the_turn_at_once() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "get_location", "{}")
            .tool_call("c2", "get_time", "{}"),
        ScriptedStep::new().text("It is noon in Oslo."),
    ]);
    let client = |name: &str| {
        ClientTool::new(
            name,
            "Read on the user's device.",
            json!({"type": "object", "properties": {}}),
        )
    };
    let agent = AgentBuilder::new("guide")
        .model(model.clone())
        .dyn_tool(client("get_location"))
        .dyn_tool(client("get_time"))
        .record_tool_calls(&trace)
        .build()
        .expect("builds");
    let conversation = agent.conversation();
    let suspended = conversation.run("Where and when am I?").await;
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    let result = |output| CallAnswer::Result {
        output,
        is_error: false,
    };

    // The first answer is kept and the turn waits for the second.
    let first = conversation
        .answer_and_continue("c1", result(json!({"city": "Oslo"})), None)
        .await
        .expect("kept");
    assert!(matches!(first, Continued::Waiting(1)), "{first:?}");
    assert_eq!(model.requests().len(), 1, "the model is not asked yet");

    // The last answer resumes the turn: both results reach the model, in call order.
    let last = conversation
        .answer_and_continue("c2", result(json!("12:00")), None)
        .await
        .expect("resumed");
    let Continued::Resumed(resumed) = last else {
        panic!("the last answer resumes the turn: {last:?}");
    };
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.text, "It is noon in Oslo.");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let read: Vec<String> = requests[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id, content, ..
            } => Some(format!("{call_id}:{content}")),
            _ => None,
        })
        .collect();
    assert_eq!(read, [r#"c1:{"city":"Oslo"}"#, "c2:12:00"]);
    assert_eq!(
        trace.take(),
        lines(&[
            "before_tool_call(get_location c1)",
            "before_tool_call(get_time c2)"
        ]),
        "the gates ran before the calls waited; no tool-call hook runs for a submitted result"
    );
    assert_whole(&conversation.rows().await.expect("rows"));
    // Nothing waits any more: another answer is refused.
    assert!(matches!(
        conversation
            .answer_and_continue("c1", result(json!(null)), None)
            .await,
        Err(AnswerError::UnknownCall { .. })
    ));
}

/// A turn that ends while its step's other results are stored (a cancel inside an async
/// result hook, or a result hook failing closed) leaves its waiting call waiting, with no
/// error result of the turn's: approved, it runs on resume and its result is the one stored.
#[tokio::test(start_paused = true)]
async fn a_turn_ended_while_storing_results_keeps_its_waiting_call_whole() {
    for cancelled in [true, false] {
        let model = ScriptedModel::new([
            ScriptedStep::new()
                .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
                .tool_call("c2", "delete", r#"{"path":"a.txt"}"#),
            ScriptedStep::new().text("Done."),
        ]);
        let trace = Trace::new();
        let delete = delete_tool(&trace);
        let hook = if cancelled {
            Hook::<event::BeforeStoreToolResult>::from_async("slow", |_| {
                Box::pin(tokio::time::sleep(std::time::Duration::from_secs(60)))
            })
        } else {
            // Fails on the first turn's result (`add`'s) only.
            let failed = AtomicUsize::new(0);
            Hook::<event::BeforeStoreToolResult>::sync("broken", move |_| {
                match failed.fetch_add(1, Ordering::SeqCst) {
                    0 => Err("no store today"),
                    _ => Ok(()),
                }
            })
            .on_error(agent_core::FailurePolicy::FailClosed)
        };
        let agent = AgentBuilder::new("files")
            .model(model)
            .tool(Add::default())
            .dyn_tool(delete)
            .hook(hook)
            .build()
            .unwrap();
        let conversation = agent.conversation();
        let token = agent_core::CancelToken::new();
        let stop = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            stop.cancel();
        });
        let request = TurnRequest::new("Add, then delete a.txt").cancel(token);
        let result = conversation.run(request).await;
        let expected = if cancelled {
            TurnStatus::Aborted
        } else {
            TurnStatus::Error
        };
        assert_eq!(result.status, expected, "{result:?}");
        let rows = conversation.rows().await.unwrap();
        let c2_results = rows
            .iter()
            .filter(|row| matches!(&row.message, Message::Tool { call_id, .. } if call_id == "c2"))
            .count();
        assert_eq!(c2_results, 0, "the waiting call has no result yet");
        assert_eq!(conversation.waiting_calls().await.unwrap().len(), 1);
        assert_eq!(conversation.approve("c2").await, Ok(0));
        let resumed = conversation.resume().await.unwrap();
        assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
        let resumed: Vec<&str> = resumed
            .resumed
            .iter()
            .map(|record| record.content.as_str())
            .collect();
        assert_eq!(resumed, ["deleted a.txt"], "cancelled: {cancelled}");
        assert_eq!(trace.take(), ["delete(a.txt)"], "it ran once");
        assert_whole(&conversation.rows().await.unwrap());
    }
}

/// Two waiting calls of one step may share an id (providers number calls per reply, a model
/// may repeat one): an answer goes to the first not answered yet, or to the one its fingerprint
/// names; a repeated answer stays idempotent, and both results are stored in the step's order.
#[tokio::test]
async fn waiting_calls_sharing_an_id_are_answered_one_by_one() {
    for by_print in [false, true] {
        let model = ScriptedModel::new([
            ScriptedStep::new()
                .tool_call("call_0", "pick", r#"{"q":"a"}"#)
                .tool_call("call_0", "pick", r#"{"q":"b"}"#),
            ScriptedStep::new().text("Done."),
        ]);
        let pick = ClientTool::new("pick", "Ask the user to pick.", json!({"type": "object"}));
        let agent = AgentBuilder::new("ui")
            .model(model.clone())
            .dyn_tool(pick)
            .build()
            .unwrap();
        let conversation = agent.conversation();
        let suspended = conversation.run("pick twice").await;
        assert_eq!(suspended.pending.len(), 2);
        let answer = |text: &str| CallAnswer::Result {
            output: json!(text),
            is_error: false,
        };
        if by_print {
            // The second call first, by its fingerprint; then the first.
            let second = Some(suspended.pending[1].fingerprint.as_str());
            let first = Some(suspended.pending[0].fingerprint.as_str());
            assert_eq!(
                conversation.answer("call_0", answer("B"), second).await,
                Ok(1)
            );
            assert_eq!(
                conversation.answer("call_0", answer("A"), first).await,
                Ok(0)
            );
        } else {
            assert_eq!(
                conversation.submit_result("call_0", json!("A")).await,
                Ok(1)
            );
            assert_eq!(
                conversation.submit_result("call_0", json!("B")).await,
                Ok(0)
            );
        }
        // Answered again alike: idempotent; otherwise refused.
        assert_eq!(
            conversation.submit_result("call_0", json!("B")).await,
            Ok(0)
        );
        assert!(matches!(
            conversation.submit_result("call_0", json!("C")).await,
            Err(AnswerError::AlreadyAnswered { .. })
        ));
        let resumed = conversation.resume().await.unwrap();
        assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
        let read: Vec<String> = model.requests()[1]
            .messages
            .iter()
            .filter_map(|message| match message {
                Message::Tool { content, .. } => Some(content.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(read, ["A", "B"], "by fingerprint: {by_print}");
    }
}

/// After a crash between storing a step's waiting calls and another call's result, the repair
/// answers the call that did not finish, not the waiting call that shares its id: the model
/// reads which tool was interrupted.
#[tokio::test]
async fn a_repair_beside_a_waiting_call_with_the_same_id_names_the_right_tool() {
    let store: Arc<dyn SessionStore> = Arc::new(agent_core::MemoryStore::new());
    // The rows and the suspension a crashed turn leaves: `quick` has no result, `wait` waits.
    let calls = vec![
        agent_core::ToolCall::new("call_1", "quick", "{}"),
        agent_core::ToolCall::new("call_1", "wait", "{}"),
    ];
    store
        .insert("s", agent_core::NewMessage::completed(Message::user("go")))
        .await
        .unwrap();
    let mut reply = Message::assistant("");
    if let Message::Assistant { tool_calls, .. } = &mut reply {
        *tool_calls = calls.into();
    }
    let row = store
        .insert("s", agent_core::NewMessage::completed(reply))
        .await
        .unwrap()
        .id;
    let waiting = agent_core::SuspendedCall {
        call: agent_core::PendingCall {
            id: "call_1".into(),
            tool: "wait".into(),
            arguments: json!({}),
            modified_arguments: None,
            reason: "needs approval".into(),
            kind: agent_core::PendingKind::Approval,
            fingerprint: String::new(),
            token: None,
            path: Vec::new(),
        },
        row,
        step: 0,
        agent: "doomed".into(),
        handoff: None,
        answer: None,
        started_at: None,
        via: None,
        stop: None,
    };
    store.set_suspended("s", vec![waiting]).await.unwrap();
    let wait = FnTool::new("wait", "Wait.", json!({"type": "object"}), |_, _| async {
        Ok::<Value, ToolError>(json!("waited"))
    })
    .needs_approval(|_| true);
    let quick = FnTool::new("quick", "Quick.", json!({"type": "object"}), |_, _| async {
        Ok::<Value, ToolError>(json!("quick"))
    });
    let agent = AgentBuilder::new("doomed")
        .model(ScriptedModel::new([ScriptedStep::new().text("All done.")]))
        .store(store.clone())
        .dyn_tool(quick)
        .dyn_tool(wait)
        .build()
        .unwrap();
    let conversation = agent.session("s");
    assert_eq!(conversation.approve("call_1").await, Ok(0));
    let resumed = conversation.resume().await.unwrap();
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    let results: Vec<(String, String)> = store
        .load("s")
        .await
        .unwrap()
        .iter()
        .filter_map(|row| match &row.message {
            Message::Tool { name, content, .. } => Some((name.to_string(), content.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            (
                "quick".to_owned(),
                "tool `quick` did not finish: its turn was interrupted".to_owned()
            ),
            ("wait".to_owned(), "waited".to_owned()),
        ]
    );
}

/// Two resumes at once (a double click, a client's retry): the resume is checked under the
/// session's turn lock and hands it to its turn, so the second waits for the first, then finds
/// nothing suspended and is refused, running no turn and firing no hook. The tool runs once.
#[tokio::test]
async fn a_second_resume_at_once_is_refused_as_not_suspended() {
    // Unlike `delete_tool`, it takes a while: the second resume comes while the first turn
    // runs it, the call still waiting in the session.
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = ran.clone();
    let delete = FnTool::new(
        "delete",
        "Delete a file.",
        json!({"type": "object"}),
        move |_, _| {
            counted.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                Ok::<Value, ToolError>(json!("deleted"))
            }
        },
    )
    .needs_approval(|_| true);
    let responses = Seen::<ChatResponse>::new();
    let agent = AgentBuilder::new("files")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("c1", "delete", "{}"),
            ScriptedStep::new().text("Done."),
        ]))
        .dyn_tool(delete)
        .hook(responses.hook::<event::OnChatResponse>("responses"))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    assert_eq!(conversation.run("go").await.status, TurnStatus::Suspended);
    conversation.approve("c1").await.unwrap();
    let (first, second) = tokio::join!(conversation.resume(), conversation.resume());
    assert_eq!(first.unwrap().status, TurnStatus::Completed);
    assert_eq!(
        second.map(|result| result.status),
        Err(AnswerError::NotSuspended)
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let statuses: Vec<TurnStatus> = responses.take().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [TurnStatus::Suspended, TurnStatus::Completed]);
}
