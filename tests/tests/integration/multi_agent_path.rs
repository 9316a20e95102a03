//! The agent path in every hook context (issue 9 item 5): each hook reads `ctx.agent`, the
//! agent it fires for, with its path from the agent asked and the run id, so one observer
//! follows a turn through every agent. The turn's frame hooks fire for the entry agent, the
//! step hooks for the agent running the step; a subagent's turn has its own frame, one level
//! deeper, its own request id and the run's id. Full ordered traces.

use std::sync::{Arc, Mutex};

use agent_core::{
    Agent, AgentBuilder, FnTool, Handoff, Hook, Matcher, RunAgent, ScriptedModel, ScriptedStep,
    StopDecision, Subagent, ToolError, TurnStatus, current_agent, event,
};
use serde_json::{Value, json};
use tests::{Trace, describe_chunk, lines};

/// One recorded hook: its trace entry, the run id and the request id it read.
type Seen = (String, Arc<str>, Arc<str>);

/// Records `event:PATH` for every hook event (a detail in parentheses where it helps), and the
/// run id and request id each hook read.
#[derive(Clone, Default)]
struct Follower {
    trace: Trace,
    ids: Arc<Mutex<Vec<Seen>>>,
}

impl Follower {
    fn push(&self, event: String, agent: &RunAgent) {
        let entry = format!("{event}:{}", agent.path);
        let (run, request) = (agent.run_id.clone(), agent.request_id.clone());
        self.ids.lock().unwrap().push((entry.clone(), run, request));
        self.trace.push(entry);
    }

    /// A message hook's agent: `None` only outside a turn, and these rows are all a turn's.
    fn push_row(&self, event: String, agent: &Option<Arc<RunAgent>>) {
        let agent = agent.as_deref().expect("a turn's row names its agent");
        self.push(event, agent);
    }
}

/// Registers on `$builder` one sync hook per `$event`, pushing its label for `ctx.agent`
/// (with `push_row` for the message hooks, whose agent is an `Option`).
macro_rules! follow {
    ($builder:ident, $f:ident, $($event:ident => |$ctx:ident| $label:expr;)*) => {
        follow!($builder, $f, push; $($event => |$ctx| $label;)*)
    };
    ($builder:ident, $f:ident, $push:ident; $($event:ident => |$ctx:ident| $label:expr;)*) => {{
        let mut builder = $builder;
        $(
            let f = $f.clone();
            builder = builder.hook(Hook::<event::$event>::sync("follow", move |$ctx| {
                f.$push($label, &$ctx.agent);
            }));
        )*
        builder
    }};
}

/// Every hook event on `builder`, tool hooks included, each recording the agent it fires for.
fn followed(builder: AgentBuilder, f: &Follower) -> AgentBuilder {
    let builder = follow!(builder, f,
        OnSessionStart => |c| "on_session_start".into();
        BeforeRun => |c| format!("before_run({})", c.input);
        FilterMessages => |c| "filter_messages".into();
        BeforeTurn => |c| "before_turn".into();
        BeforeStep => |c| format!("before_step({})", c.step);
        PrefilterLlmHistory => |c| "prefilter".into();
        OnLlmStart => |c| "on_llm_start".into();
        OnChunk => |c| format!("on_chunk({})", describe_chunk(&c.chunk));
        OnLlmEnd => |c| "on_llm_end".into();
        PostProcessMessage => |c| "post_process".into();
        AfterToolCallSuccess => |c| format!("after_success({})", c.call.name);
        AfterToolCallFailure => |c| format!("after_failure({})", c.call.name);
        BeforeStoreToolResult => |c| "before_store_tool_result".into();
        OnStepFinish => |c| format!("on_step_finish({})", c.step);
        OnStop => |c| format!("on_stop({})", c.reason);
        BeforeHandoff => |c| format!("before_handoff(->{})", c.to);
        OnSubagentStart => |c| format!("on_subagent_start({})", c.subagent);
        OnSubagentStop => |c| format!("on_subagent_stop({})", c.subagent);
        // after_run's result names the agent that answered, not the hook's (README, Run hooks).
        AfterRun => |c| "after_run".into();
        ClassifyChatError => |c| "classify_chat_error".into();
        OnChatError => |c| "on_chat_error".into();
        // `current_agent()` is the agent working: after a handoff, not the frame hook's agent.
        OnChatResponse => |c| format!(
            "on_chat_response(working {})",
            current_agent().expect("inside the turn").path
        );
        OnSessionEnd => |c| "on_session_end".into();
    );
    let builder = follow!(builder, f, push_row;
        BeforeCreateMessage => |c| format!("before_create({})", c.row.message.role());
        AfterCreateMessage => |c| format!("after_create({})", c.row.message.role());
        BeforeUpdateMessage => |c| "before_update".into();
        AfterUpdateMessage => |c| "after_update".into();
    );
    let f2 = f.clone();
    let builder = builder.before_tool_call(
        Matcher::all().dynamic(),
        Hook::<event::BeforeToolCall<Value>>::sync("follow", move |c| {
            f2.push(format!("before_tool_call({})", c.tool_name), &c.agent);
        }),
    );
    let f2 = f.clone();
    builder.after_tool_call(
        Matcher::all().dynamic(),
        Hook::<event::AfterToolCall<Value>>::sync("follow", move |c| {
            f2.push(format!("after_tool_call({})", c.tool_name), &c.agent);
        }),
    )
}

/// `refund`: records the agent its `ToolContext` names, then succeeds (or fails).
fn refund(f: &Follower, fails: bool) -> FnTool {
    let f = f.clone();
    FnTool::new(
        "refund",
        "Issues a refund.",
        json!({"type": "object"}),
        move |_, ctx| {
            f.push("tool refund".into(), &ctx.agent);
            async move {
                if fails {
                    Err(ToolError::new("the card expired"))
                } else {
                    Ok::<Value, ToolError>(json!("refunded"))
                }
            }
        },
    )
}

/// triage hands off to billing, which asks its subagent `ledger`, runs `refund`, then answers;
/// every agent has every hook.
fn agents(f: &Follower) -> Agent {
    let ledger = AgentBuilder::new("ledger")
        .model(ScriptedModel::new([ScriptedStep::new().text("Balance 0.")]));
    let ledger = followed(ledger, f).build().unwrap();
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("l1", "ledger", r#"{"input":"balance?"}"#),
            ScriptedStep::new().tool_call("r1", "refund", "{}"),
            ScriptedStep::new().text("Refunded."),
        ]))
        .subagent(Subagent::of(&ledger))
        .dyn_tool(refund(f, false));
    let billing = followed(billing, f).build().unwrap();
    let triage = AgentBuilder::new("triage")
        .model(ScriptedModel::new([ScriptedStep::new()
            .text("Passing you on.")
            .tool_call("h1", "transfer_to_billing", "{}")]))
        .handoff(Handoff::to(&billing));
    followed(triage, f).build().unwrap()
}

const RUN: &[&str] = &[
    "on_session_start:triage",
    "before_run(refund please):triage",
    "filter_messages:triage",
    "before_create(user):triage",
    "after_create(user):triage",
    "before_turn:triage",
    "before_step(0):triage",
    "prefilter:triage",
    "on_llm_start:triage",
    "before_create(assistant):triage",
    "after_create(assistant):triage",
    "on_chunk(text:Passing you on.):triage",
    "on_chunk(tool_start:h1 transfer_to_billing):triage",
    "on_chunk(tool_input:h1):triage",
    "on_chunk(tool_call:h1 transfer_to_billing):triage",
    "on_llm_end:triage",
    "post_process:triage",
    "before_update:triage",
    "after_update:triage",
    "before_handoff(->billing):triage",
    // A transfer call fires no tool-call hook, after_tool_call_success included.
    "before_store_tool_result:triage",
    "before_create(tool):triage",
    "after_create(tool):triage",
    "on_chunk(tool_result:h1 transfer_to_billing ok):triage",
    "on_step_finish(0):triage",
    // billing runs the steps; the rows it writes go through triage's message hooks.
    "before_step(1):triage > billing",
    "prefilter:triage > billing",
    "on_llm_start:triage > billing",
    "before_create(assistant):triage",
    "after_create(assistant):triage",
    "on_chunk(tool_start:l1 ledger):triage > billing",
    "on_chunk(tool_input:l1):triage > billing",
    "on_chunk(tool_call:l1 ledger):triage > billing",
    "on_llm_end:triage > billing",
    "post_process:triage > billing",
    "before_update:triage",
    "after_update:triage",
    "before_tool_call(ledger):triage > billing",
    "on_subagent_start(ledger):triage > billing",
    // ledger's own turn: its frame is its own, one level deeper.
    "on_session_start:triage > billing > ledger",
    "before_run(balance?):triage > billing > ledger",
    "filter_messages:triage > billing > ledger",
    "before_create(user):triage > billing > ledger",
    "after_create(user):triage > billing > ledger",
    "before_turn:triage > billing > ledger",
    "before_step(0):triage > billing > ledger",
    "prefilter:triage > billing > ledger",
    "on_llm_start:triage > billing > ledger",
    "before_create(assistant):triage > billing > ledger",
    "after_create(assistant):triage > billing > ledger",
    "on_chunk(text:Balance 0.):triage > billing > ledger",
    "on_llm_end:triage > billing > ledger",
    "post_process:triage > billing > ledger",
    "before_update:triage > billing > ledger",
    "after_update:triage > billing > ledger",
    "on_step_finish(0):triage > billing > ledger",
    "after_run:triage > billing > ledger",
    "on_chat_response(working triage > billing > ledger):triage > billing > ledger",
    "on_session_end:triage > billing > ledger",
    "on_subagent_stop(ledger):triage > billing",
    "after_success(ledger):triage > billing",
    "after_tool_call(ledger):triage > billing",
    "before_store_tool_result:triage > billing",
    "before_create(tool):triage",
    "after_create(tool):triage",
    "on_chunk(tool_result:l1 ledger ok):triage > billing",
    "on_step_finish(1):triage > billing",
    "before_step(2):triage > billing",
    "prefilter:triage > billing",
    "on_llm_start:triage > billing",
    "before_create(assistant):triage",
    "after_create(assistant):triage",
    "on_chunk(tool_start:r1 refund):triage > billing",
    "on_chunk(tool_input:r1):triage > billing",
    "on_chunk(tool_call:r1 refund):triage > billing",
    "on_llm_end:triage > billing",
    "post_process:triage > billing",
    "before_update:triage",
    "after_update:triage",
    "before_tool_call(refund):triage > billing",
    "tool refund:triage > billing",
    "after_success(refund):triage > billing",
    "after_tool_call(refund):triage > billing",
    "before_store_tool_result:triage > billing",
    "before_create(tool):triage",
    "after_create(tool):triage",
    "on_chunk(tool_result:r1 refund ok):triage > billing",
    "on_step_finish(2):triage > billing",
    "before_step(3):triage > billing",
    "prefilter:triage > billing",
    "on_llm_start:triage > billing",
    "before_create(assistant):triage",
    "after_create(assistant):triage",
    "on_chunk(text:Refunded.):triage > billing",
    "on_llm_end:triage > billing",
    "post_process:triage > billing",
    "before_update:triage",
    "after_update:triage",
    "on_step_finish(3):triage > billing",
    // The frame is triage's; the result names billing, which answered.
    "after_run:triage > billing",
    "on_chat_response(working triage > billing):triage",
    "on_session_end:triage",
];

#[tokio::test]
async fn every_hook_names_its_agent_through_a_handoff_and_into_a_subagent() {
    let f = Follower::default();
    let result = agents(&f).run("refund please").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(f.trace.take(), lines(RUN));

    let run_id = &result.request_id;
    let ids = f.ids.lock().unwrap();
    assert!(
        ids.iter().all(|(_, run, _)| run == run_id),
        "one run id, the outer turn's, for every agent: {ids:?}"
    );
    let (ledger, outer): (Vec<_>, Vec<_>) = ids
        .iter()
        .partition(|(entry, ..)| entry.ends_with("> ledger"));
    assert!(
        outer.iter().all(|(_, _, request)| request == run_id),
        "triage and billing work in the outer turn"
    );
    let ledger_turn = &ledger[0].2;
    assert_ne!(ledger_turn, run_id, "the subagent's turn has its own id");
    assert!(ledger.iter().all(|(_, _, request)| request == ledger_turn));

    assert_eq!(&*result.agent.name, "billing");
    assert_eq!(&*result.agent.path, "triage > billing");
    let steps: Vec<_> = result.steps.iter().map(|s| &*s.agent.path).collect();
    assert_eq!(
        steps,
        [
            "triage",
            "triage > billing",
            "triage > billing",
            "triage > billing"
        ]
    );
}

const FAILED: &[&str] = &[
    "on_session_start:triage",
    "before_run(refund please):triage",
    "filter_messages:triage",
    "before_create(user):triage",
    "after_create(user):triage",
    "before_turn:triage",
    "before_step(0):triage",
    "prefilter:triage",
    "on_llm_start:triage",
    "before_create(assistant):triage",
    "after_create(assistant):triage",
    "on_chunk(tool_start:h1 transfer_to_billing):triage",
    "on_chunk(tool_input:h1):triage",
    "on_chunk(tool_call:h1 transfer_to_billing):triage",
    "on_llm_end:triage",
    "post_process:triage",
    "before_update:triage",
    "after_update:triage",
    "before_handoff(->billing):triage",
    "before_store_tool_result:triage",
    "before_create(tool):triage",
    "after_create(tool):triage",
    "on_chunk(tool_result:h1 transfer_to_billing ok):triage",
    "on_step_finish(0):triage",
    "before_step(1):triage > billing",
    "prefilter:triage > billing",
    "on_llm_start:triage > billing",
    "before_create(assistant):triage",
    "after_create(assistant):triage",
    "on_chunk(tool_start:r1 refund):triage > billing",
    "on_chunk(tool_input:r1):triage > billing",
    "on_chunk(tool_call:r1 refund):triage > billing",
    "on_llm_end:triage > billing",
    "post_process:triage > billing",
    "before_update:triage",
    "after_update:triage",
    "before_tool_call(refund):triage > billing",
    "tool refund:triage > billing",
    "after_failure(refund):triage > billing",
    "after_tool_call(refund):triage > billing",
    "before_store_tool_result:triage > billing",
    "before_create(tool):triage",
    "after_create(tool):triage",
    "on_chunk(tool_result:r1 refund error):triage > billing",
    "on_step_finish(1):triage > billing",
    "on_stop(max_steps):triage > billing",
    "classify_chat_error:triage",
    "on_chat_error:triage",
    "on_chat_response(working triage > billing):triage",
    "on_session_end:triage",
];

#[tokio::test]
async fn the_failure_hooks_name_their_agent_after_a_handoff() {
    let f = Follower::default();
    // billing's refund fails and its one step runs out; its on_stop hook fails the turn.
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("r1", "refund", "{}")
        ]))
        .max_steps(1)
        .dyn_tool(refund(&f, true))
        .hook(Hook::<event::OnStop>::sync("give up", |_| {
            StopDecision::Fail("billing ran out of steps".into())
        }));
    let billing = followed(billing, &f).build().unwrap();
    let triage = AgentBuilder::new("triage")
        .model(ScriptedModel::new([ScriptedStep::new().tool_call(
            "h1",
            "transfer_to_billing",
            "{}",
        )]))
        .handoff(Handoff::to(&billing));
    let result = followed(triage, &f)
        .build()
        .unwrap()
        .run("refund please")
        .await;
    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert_eq!(f.trace.take(), lines(FAILED));
    let ids = f.ids.lock().unwrap();
    assert!(
        ids.iter()
            .all(|(_, run, request)| run == &result.request_id && request == run),
        "{ids:?}"
    );
}
