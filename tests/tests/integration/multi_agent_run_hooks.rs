//! Run hooks (issue 9 item 4): observers of one turn across every agent it reaches (a
//! handoff's target, a subagent's own turn), each event naming the agent's path, in the
//! Stratus order, given per turn and per session; the `#[run_hooks]` form sees the same.

use std::sync::{Arc, Mutex};

use agent_core::{
    AgentBuilder, Handoff, RunAgent, RunHooks, ScriptedModel, ScriptedStep, Subagent,
    ToolResultRecord, TurnRequest, TurnStatus, run_hooks,
};
use agent_core::{ModelRequest, ToolCall};
use tests::{Trace, lines};

/// Each event's run id and request id, in order.
type Ids = Arc<Mutex<Vec<(Arc<str>, Arc<str>)>>>;

/// Pushes every run event to a trace (`tag` first), and keeps each event's run and request ids.
struct Recorder {
    tag: &'static str,
    trace: Trace,
    ids: Ids,
}

impl Recorder {
    fn new(tag: &'static str, trace: &Trace) -> Recorder {
        Recorder {
            tag,
            trace: trace.clone(),
            ids: Arc::default(),
        }
    }

    fn push(&self, agent: &RunAgent, line: String) {
        self.ids
            .lock()
            .unwrap()
            .push((agent.run_id.clone(), agent.request_id.clone()));
        self.trace.push(format!("{}{line}", self.tag));
    }
}

impl RunHooks for Recorder {
    fn on_agent_start(&self, agent: &RunAgent) {
        self.push(agent, format!("start:{}", agent.path));
    }

    fn on_agent_end(&self, agent: &RunAgent, output: &str) {
        self.push(agent, format!("end:{}({output})", agent.path));
    }

    fn on_handoff(&self, from: &RunAgent, to: &str) {
        self.push(from, format!("handoff:{}->{to}", from.name));
    }

    fn on_tool_start(&self, agent: &RunAgent, call: &ToolCall) {
        self.push(agent, format!("tool_start:{}:{}", agent.path, call.name));
    }

    fn on_tool_end(&self, agent: &RunAgent, result: &ToolResultRecord) {
        self.push(
            agent,
            format!(
                "tool_end:{}:{}({})",
                agent.path, result.name, result.content
            ),
        );
    }

    fn on_llm_start(&self, agent: &RunAgent, request: &ModelRequest) {
        self.push(
            agent,
            format!(
                "llm_start:{}({} messages)",
                agent.path,
                request.messages.len()
            ),
        );
    }

    fn on_llm_end(&self, agent: &RunAgent, text: &str, tool_calls: usize) {
        self.push(
            agent,
            format!("llm_end:{}({text},{tool_calls})", agent.path),
        );
    }
}

/// triage hands off to billing, which asks its subagent `ledger`, then answers.
fn agents() -> agent_core::Agent {
    let ledger = AgentBuilder::new("ledger")
        .model(ScriptedModel::new([ScriptedStep::new().text("Balance 0.")]))
        .build()
        .unwrap();
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("l1", "ledger", r#"{"input":"balance?"}"#),
            ScriptedStep::new().text("Refund issued."),
        ]))
        .subagent(Subagent::of(&ledger))
        .build()
        .unwrap();
    AgentBuilder::new("triage")
        .model(ScriptedModel::new([ScriptedStep::new()
            .text("Let me pass you on.")
            .tool_call("h1", "transfer_to_billing", "{}")]))
        .handoff(Handoff::to(&billing))
        .build()
        .unwrap()
}

const RUN: &[&str] = &[
    "start:triage",
    "llm_start:triage(1 messages)",
    "llm_end:triage(Let me pass you on.,1)",
    "end:triage(Let me pass you on.)",
    "handoff:triage->billing",
    "start:triage > billing",
    "llm_start:triage > billing(3 messages)",
    "llm_end:triage > billing(,1)",
    "tool_start:triage > billing:ledger",
    "start:triage > billing > ledger",
    "llm_start:triage > billing > ledger(1 messages)",
    "llm_end:triage > billing > ledger(Balance 0.,0)",
    "end:triage > billing > ledger(Balance 0.)",
    "tool_end:triage > billing:ledger(Balance 0.)",
    "llm_start:triage > billing(5 messages)",
    "llm_end:triage > billing(Refund issued.,0)",
    "end:triage > billing(Refund issued.)",
];

#[tokio::test]
async fn run_hooks_follow_a_turn_through_a_handoff_and_into_a_subagent() {
    let trace = Trace::new();
    let recorder = Recorder::new("", &trace);
    let ids = recorder.ids.clone();
    let result = agents()
        .run(TurnRequest::new("refund").run_hooks(recorder))
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(trace.take(), lines(RUN));
    let ids = ids.lock().unwrap();
    let run_id = &ids[0].0;
    assert!(
        ids.iter().all(|(run, _)| run == run_id),
        "one run id for every agent of the run"
    );
    assert_eq!(run_id, &result.request_id, "the run id is the outer turn's");
    let ledger_turn = &ids[9].1;
    assert_ne!(
        ledger_turn, run_id,
        "the subagent's turn has its own request id"
    );
}

/// The [`Recorder`]'s lines, written with `#[run_hooks]`.
struct Timeline(Trace);

#[run_hooks]
impl Timeline {
    fn on_agent_start(&self, agent: &RunAgent) {
        self.0.push(format!("start:{}", agent.path));
    }

    fn on_agent_end(&self, agent: &RunAgent, output: &str) {
        self.0.push(format!("end:{}({output})", agent.path));
    }

    fn on_handoff(&self, from: &RunAgent, to: &str) {
        self.0.push(format!("handoff:{}->{to}", from.name));
    }

    fn on_tool_start(&self, agent: &RunAgent, call: &ToolCall) {
        self.0
            .push(format!("tool_start:{}:{}", agent.path, call.name));
    }

    fn on_tool_end(&self, agent: &RunAgent, result: &ToolResultRecord) {
        let (path, name) = (&agent.path, &result.name);
        self.0
            .push(format!("tool_end:{path}:{name}({})", result.content));
    }

    fn on_llm_start(&self, agent: &RunAgent, request: &ModelRequest) {
        let messages = request.messages.len();
        self.0
            .push(format!("llm_start:{}({messages} messages)", agent.path));
    }

    fn on_llm_end(&self, agent: &RunAgent, text: &str, tool_calls: usize) {
        self.0
            .push(format!("llm_end:{}({text},{tool_calls})", agent.path));
    }
}

#[tokio::test]
async fn a_run_hooks_impl_sees_the_same_run_as_a_hand_written_one() {
    let trace = Trace::new();
    let result = agents()
        .run(TurnRequest::new("refund").run_hooks(Timeline(trace.clone())))
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(trace.take(), lines(RUN));
}

/// A run hook that panics on every event.
struct Panicky;

impl RunHooks for Panicky {
    fn on_agent_start(&self, _: &RunAgent) {
        panic!("observer bug");
    }

    fn on_llm_end(&self, _: &RunAgent, _: &str, _: usize) {
        panic!("observer bug");
    }
}

#[tokio::test]
async fn session_run_hooks_fire_beside_the_turns_and_a_panicking_one_is_ignored() {
    let trace = Trace::new();
    let session_trace = trace.clone();
    let agent = AgentBuilder::new("solo")
        .model(ScriptedModel::new([ScriptedStep::new().text("Hi.")]))
        .configure_session(move |session| {
            session
                .run_hooks(Recorder::new("session ", &session_trace))
                .run_hooks(Panicky)
        })
        .build()
        .unwrap();
    let result = agent
        .run(TurnRequest::new("hello").run_hooks(Recorder::new("turn ", &trace)))
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(
        trace.take(),
        lines(&[
            "turn start:solo",
            "session start:solo",
            "turn llm_start:solo(1 messages)",
            "session llm_start:solo(1 messages)",
            "turn llm_end:solo(Hi.,0)",
            "session llm_end:solo(Hi.,0)",
            "turn end:solo(Hi.)",
            "session end:solo(Hi.)",
        ])
    );
}

/// A turn that fails before its agent starts (an input guardrail trips, a before_run hook
/// fails closed) is not an agent's run: its observers see neither a start nor an end. A turn
/// that fails later still ends what it started.
#[tokio::test]
async fn a_turn_failing_before_its_agent_starts_shows_no_end() {
    let guarded = AgentBuilder::new("guarded")
        .model(ScriptedModel::new([]))
        .input_guardrail(agent_core::Guardrail::new("nothing passes", |_| {
            agent_core::GuardrailVerdict::trip("no")
        }));
    let gated = AgentBuilder::new("gated")
        .model(ScriptedModel::new([]))
        .hook(
            agent_core::Hook::<agent_core::event::BeforeRun>::sync("closed", |_| {
                Err::<(), _>("closed")
            })
            .on_error(agent_core::FailurePolicy::FailClosed),
        );
    for builder in [guarded, gated] {
        let trace = Trace::new();
        let agent = builder.build().unwrap();
        let request = TurnRequest::new("hello").run_hooks(Recorder::new("", &trace));
        let result = agent.run(request).await;
        assert_eq!(result.status, TurnStatus::Error);
        assert_eq!(trace.take(), Vec::<String>::new(), "{}", agent.name());
    }
    // Failing once started (its model has no step left), the agent ends as it started.
    let trace = Trace::new();
    let agent = AgentBuilder::new("mute")
        .model(ScriptedModel::new([]))
        .build()
        .unwrap();
    let request = TurnRequest::new("hello").run_hooks(Recorder::new("", &trace));
    assert_eq!(agent.run(request).await.status, TurnStatus::Error);
    let seen = trace.take();
    assert_eq!(seen.first().map(String::as_str), Some("start:mute"));
    assert_eq!(seen.last().map(String::as_str), Some("end:mute()"));
}

/// A tool call cut off by a cancel still ends for the run hooks: its `on_tool_start` has its
/// `on_tool_end`, an error saying why, before its agent's end, so an observer counting the
/// calls in flight (a spinner per call) is not left with one that never ends.
#[tokio::test]
async fn a_call_cut_off_by_a_cancel_ends_for_the_run_hooks() {
    let (started, mut running) = tokio::sync::mpsc::unbounded_channel();
    let agent = AgentBuilder::new("slow")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("c1", "hang", "{}")
        ]))
        .dyn_tool(tests::hanging_tool(started))
        .build()
        .unwrap();
    let trace = Trace::new();
    let cancel = agent_core::CancelToken::new();
    let request = TurnRequest::new("go")
        .cancel(cancel.clone())
        .run_hooks(Recorder::new("", &trace));
    let turn = tokio::spawn(async move { agent.run(request).await });
    running.recv().await.unwrap();
    cancel.cancel();
    let result = tests::within("the cancelled turn", turn).await.unwrap();
    assert_eq!(result.status, TurnStatus::Aborted);
    assert_eq!(
        trace.take(),
        lines(&[
            "start:slow",
            "llm_start:slow(1 messages)",
            "llm_end:slow(,1)",
            "tool_start:slow:hang",
            "tool_end:slow:hang(tool `hang` was stopped before it ended: the turn was cancelled)",
            "end:slow()",
        ])
    );
}
