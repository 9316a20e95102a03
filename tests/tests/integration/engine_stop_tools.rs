//! Stop tools (`AgentBuilder::stop_at_tools`): a call of one that its tool answered ends the
//! turn once its step is recorded, its result the answer, the model never reading it; a failed
//! or blocked call does not; a substituted one does; a handoff in the same step comes first; a
//! call approved on resume counts, and so does one that ran before its step suspended; bad
//! names and an output type are build errors.

use agent_core::{
    AgentBuilder, Conversation, FnTool, Handoff, Hook, Matcher, Message, ScriptedModel,
    ScriptedStep, StopReason, ToolCallDecision, ToolError, TurnStatus, event,
};
use serde_json::{Value, json};
use tests::{Add, Recorded, Trace, lines};

/// A JSON gate on `report`.
type Before = event::BeforeToolCall<Value>;

/// `report`: writes the report `Q3: <word>`, or fails for the word `fail`; records
/// `report(WORD)` when it runs.
fn report(trace: &Trace) -> FnTool {
    let trace = trace.clone();
    let schema = json!({
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    });
    FnTool::sync("report", "Writes the report.", schema, move |args, _| {
        let word = args["word"].as_str().unwrap_or_default().to_owned();
        trace.push(format!("report({word})"));
        match word.as_str() {
            "fail" => Err(ToolError::new("the printer is out of paper")),
            _ => Ok(Value::from(format!("Q3: {word}"))),
        }
    })
}

/// An agent with `add` and `report`, stopping at `report`, every hook recorded.
fn analyst(model: &ScriptedModel, trace: &Trace) -> AgentBuilder {
    AgentBuilder::new("analyst")
        .model(model.clone())
        .tool(Add::traced(trace))
        .dyn_tool(report(trace))
        .stop_at_tools(["report"])
        .record_all(trace)
}

/// The trace of a step calling `add` (c1) and `report` (c2) with `word`, through its
/// on_step_finish.
fn both_step(step: usize, word: &str) -> Vec<String> {
    let result = if word == "fail" { "error" } else { "ok" };
    let outcome = if word == "fail" { "failed" } else { "executed" };
    vec![
        format!("before_step({step})"),
        format!("on_llm_start({step})"),
        "on_chunk(tool_start:c1 add)".into(),
        "on_chunk(tool_input:c1)".into(),
        "on_chunk(tool_call:c1 add)".into(),
        "on_chunk(tool_start:c2 report)".into(),
        "on_chunk(tool_input:c2)".into(),
        "on_chunk(tool_call:c2 report)".into(),
        format!("on_llm_end({step})"),
        "before_tool_call(add c1)".into(),
        "add(2,3)".into(),
        "after_tool_call(add c1 executed)".into(),
        "before_tool_call(report c2)".into(),
        format!("report({word})"),
        format!("after_tool_call(report c2 {outcome})"),
        "on_chunk(tool_result:c1 add ok)".into(),
        format!("on_chunk(tool_result:c2 report {result})"),
        format!("on_step_finish({step})"),
    ]
}

fn both(word: &str) -> ScriptedStep {
    ScriptedStep::new()
        .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
        .tool_call("c2", "report", format!(r#"{{"word":"{word}"}}"#))
}

#[tokio::test]
async fn a_stop_tools_result_ends_the_turn_as_its_answer() {
    let trace = Trace::new();
    let model = ScriptedModel::new([both("up"), ScriptedStep::new().text("never asked")]);
    let agent = analyst(&model, &trace).build().unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("Write the Q3 report.").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::Tool));
    assert_eq!(result.text, "Q3: up");
    let mut expected = lines(&["before_run(Write the Q3 report.)", "before_turn"]);
    expected.extend(both_step(0, "up"));
    expected.extend(lines(&[
        "after_run(completed)",
        "on_chat_response(completed)",
    ]));
    assert_eq!(trace.take(), expected);
    // The model never read the result; the history keeps every call answered, and the next
    // turn sends it whole.
    assert_eq!(model.requests().len(), 1);
    let history = conversation.history().await.unwrap();
    let roles: Vec<&str> = history.iter().map(Message::role).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool"]);
    assert_eq!(history[3].text(), "Q3: up");
    assert_eq!(result.messages, history[1..]);
    let next = conversation.run("Thanks.").await;
    assert_eq!(next.status, TurnStatus::Completed, "{next:?}");
    assert_eq!(next.text, "never asked");
    assert_eq!(model.requests()[1].messages[..4], history[..]);
}

/// The stop tool's result is the turn's answer, so the output guardrails check it as they
/// check a final reply: a trip fails the turn instead of handing the answer back, here and
/// when a resumed turn ends with it.
#[tokio::test]
async fn the_output_guardrails_check_a_stop_tools_answer() {
    let guarded = |model: &ScriptedModel, trace: &Trace| {
        analyst(model, trace).output_guardrail(agent_core::Guardrail::new("no leak", |answer| {
            match answer.contains("secret") {
                true => agent_core::GuardrailVerdict::trip("it names a secret"),
                false => agent_core::GuardrailVerdict::Pass,
            }
        }))
    };
    let trace = Trace::new();
    let model = ScriptedModel::new([both("secret"), both("up")]);
    let agent = guarded(&model, &trace).build().unwrap();
    let tripped = agent.run("Write the Q3 report.").await;
    assert_eq!(tripped.status, TurnStatus::Error, "{tripped:?}");
    assert_eq!(
        tripped.error.unwrap().message,
        "output guardrail `no leak` tripped: it names a secret"
    );
    assert_eq!(tripped.text, "");
    let passed = agent.run("Write the Q3 report.").await;
    assert_eq!(passed.stop_reason, Some(StopReason::Tool), "{passed:?}");
    assert_eq!(passed.text, "Q3: up");

    // Ended by a resume: its answer is checked too.
    let model = ScriptedModel::new([both("secret")]);
    let ask = Hook::<Before>::sync("ask", |_| ToolCallDecision::ask("sign off"));
    let agent = guarded(&model, &trace)
        .before_tool_call(Matcher::tool("report"), ask)
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let first = conversation.run("Write the Q3 report.").await;
    assert_eq!(first.status, TurnStatus::Suspended, "{first:?}");
    conversation.approve("c2").await.unwrap();
    let resumed = conversation.resume().await.unwrap();
    assert_eq!(resumed.status, TurnStatus::Error, "{resumed:?}");
    assert_eq!(resumed.text, "");
}

#[tokio::test]
async fn a_failed_stop_tool_call_goes_back_to_the_model() {
    let trace = Trace::new();
    let model = ScriptedModel::new([both("fail"), both("up")]);
    let agent = analyst(&model, &trace).build().unwrap();
    let result = agent.run("Write the Q3 report.").await;

    assert_eq!(result.stop_reason, Some(StopReason::Tool), "{result:?}");
    assert_eq!(result.text, "Q3: up");
    let mut expected = lines(&["before_run(Write the Q3 report.)", "before_turn"]);
    expected.extend(both_step(0, "fail"));
    expected.extend(both_step(1, "up"));
    expected.extend(lines(&[
        "after_run(completed)",
        "on_chat_response(completed)",
    ]));
    assert_eq!(trace.take(), expected);
    let read = &model.requests()[1].messages;
    let last = read.last().unwrap();
    assert!(last.text().contains("out of paper"), "{last:?}");
}

#[tokio::test]
async fn a_blocked_call_does_not_stop_and_a_substituted_one_does() {
    for stops in [false, true] {
        let trace = Trace::new();
        let model = ScriptedModel::new([both("up"), ScriptedStep::new().text("Done.")]);
        let gate = Hook::<Before>::sync("gate", move |_| match stops {
            false => ToolCallDecision::block("not now"),
            true => ToolCallDecision::Substitute(json!("Q3: cached")),
        });
        let agent = analyst(&model, &trace)
            .before_tool_call(Matcher::tool("report"), gate)
            .build()
            .unwrap();
        let result = agent.run("Write the Q3 report.").await;
        assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
        if stops {
            assert_eq!(result.stop_reason, Some(StopReason::Tool));
            assert_eq!(result.text, "Q3: cached");
            assert_eq!(model.requests().len(), 1);
        } else {
            assert_eq!(result.stop_reason, Some(StopReason::Finished));
            assert_eq!(result.text, "Done.");
            assert_eq!(model.requests().len(), 2);
        }
    }
}

#[tokio::test]
async fn a_handoff_in_the_same_step_comes_first() {
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([
            ScriptedStep::new().text("Billing here.")
        ]))
        .build()
        .unwrap();
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new()
        .tool_call("c1", "report", r#"{"word":"up"}"#)
        .tool_call("h1", "transfer_to_billing", "{}")]);
    let agent = AgentBuilder::new("analyst")
        .model(model)
        .dyn_tool(report(&trace))
        .stop_at_tools(["report"])
        .handoff(Handoff::to(&billing))
        .build()
        .unwrap();
    let result = agent.run("Bill me.").await;
    assert_eq!(result.stop_reason, Some(StopReason::Finished), "{result:?}");
    assert_eq!(&*result.agent.name, "billing");
    assert_eq!(result.text, "Billing here.");
}

/// The analyst's turn with `model`, suspended on a call of `asked`, which needs approval; the
/// trace of the turn taken.
async fn suspended_on(asked: &str, model: &ScriptedModel, trace: &Trace) -> Conversation {
    let ask = Hook::<Before>::sync("ask", |_| ToolCallDecision::ask("sign off"));
    let agent = analyst(model, trace)
        .before_tool_call(Matcher::tool(asked), ask)
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let first = conversation.run("Write the Q3 report.").await;
    assert_eq!(first.status, TurnStatus::Suspended, "{first:?}");
    trace.take();
    conversation
}

/// Approves call `id` of the suspended turn and resumes it: it ends with the report as its
/// answer, the model never asked again.
async fn approved_ends_with_the_report(
    conversation: &Conversation,
    id: &str,
    model: &ScriptedModel,
) {
    conversation.approve(id).await.unwrap();
    let resumed = conversation.resume().await.unwrap();
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.stop_reason, Some(StopReason::Tool));
    assert_eq!(resumed.text, "Q3: up");
    assert_eq!(
        model.requests().len(),
        1,
        "the model never reads the report"
    );
}

#[tokio::test]
async fn a_stop_tool_approved_on_resume_ends_the_resumed_turn() {
    let trace = Trace::new();
    let model = ScriptedModel::new([both("up"), ScriptedStep::new().text("never asked")]);
    let conversation = suspended_on("report", &model, &trace).await;

    approved_ends_with_the_report(&conversation, "c2", &model).await;
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run()",
            "before_turn",
            "before_tool_call(report c2)",
            "report(up)",
            "after_tool_call(report c2 executed)",
            "on_chunk(tool_result:c2 report ok)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
}

#[tokio::test]
async fn a_stop_tool_that_ran_before_its_step_suspended_ends_the_resumed_turn() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "report", r#"{"word":"up"}"#)
            .tool_call("c2", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("never asked"),
    ]);
    let conversation = suspended_on("add", &model, &trace).await;
    let waiting = conversation.waiting_calls().await.unwrap();
    assert_eq!(
        waiting[0].stop.as_deref(),
        Some("Q3: up"),
        "kept with the call"
    );

    approved_ends_with_the_report(&conversation, "c2", &model).await;
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run()",
            "before_turn",
            "before_tool_call(add c2)",
            "add(2,3)",
            "after_tool_call(add c2 executed)",
            "on_chunk(tool_result:c2 add ok)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    assert!(conversation.waiting_calls().await.unwrap().is_empty());
}

#[test]
fn stop_tools_must_be_tools_of_an_agent_without_an_output_type() {
    let unknown = AgentBuilder::new("analyst")
        .model(ScriptedModel::new([]))
        .tool(Add::traced(&Trace::new()))
        .stop_at_tools(["reprot"])
        .build()
        .unwrap_err();
    assert_eq!(
        unknown.problems,
        ["`stop_at_tools`: no tool named `reprot` (tools: add)"]
    );
    let typed = AgentBuilder::new("analyst")
        .model(ScriptedModel::new([]))
        .tool(Add::traced(&Trace::new()))
        .output::<String>()
        .stop_at_tools(["add"])
        .build()
        .unwrap_err();
    assert_eq!(
        typed.problems,
        [
            "`stop_at_tools` makes a tool's result the answer, but the agent answers with its \
          output type `alloc::string::String`: drop one of them"
        ]
    );
}
