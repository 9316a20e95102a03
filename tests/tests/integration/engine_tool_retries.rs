//! Tool retry limits (`AgentBuilder::tool_retries`, a tool's own): a tool that fails more
//! steps in a row than its limit ends the turn through on_stop, with every call answered in the
//! stored history; a step whose calls succeed resets the count; a tool's own limit beats the
//! agent's; arguments that do not parse and unknown tools count; without a limit nothing
//! changes.

use agent_core::{
    AgentBuilder, ChatErrorContext, FnTool, Hook, Matcher, Message, ScriptedModel, ScriptedStep,
    StopDecision, StopReason, StoredMessage, ToolCallDecision, ToolError, TurnErrorKind,
    TurnStatus, event,
};
use serde_json::{Value, json};
use tests::{Add, Recorded, Seen, Trace, lines};

/// `lookup`: finds the word `ok` and fails on any other (`no entry for WORD`); records
/// `lookup(WORD)` when it runs.
fn lookup(trace: &Trace) -> FnTool {
    let trace = trace.clone();
    let schema = json!({
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    });
    FnTool::sync("lookup", "Looks a word up.", schema, move |args, _| {
        let word = args["word"].as_str().unwrap_or_default().to_owned();
        trace.push(format!("lookup({word})"));
        match word.as_str() {
            "ok" => Ok(Value::from("found")),
            _ => Err(ToolError::new(format!("no entry for {word}"))),
        }
    })
}

/// A model whose step `n` calls `tool` (call id `cN`) with each of `arguments`, then answers
/// `done`.
fn calling(tool: &str, arguments: &[&str]) -> ScriptedModel {
    let calls = arguments.iter().enumerate().map(|(step, arguments)| {
        ScriptedStep::new().tool_call(format!("c{step}"), tool, *arguments)
    });
    ScriptedModel::new(calls.chain([ScriptedStep::new().text("done")]))
}

/// The trace of step `step` calling `lookup(word)` once, with the call's outcome.
fn lookup_step(step: usize, word: &str) -> Vec<String> {
    let (outcome, result) = match word {
        "ok" => ("executed", "ok"),
        _ => ("failed", "error"),
    };
    vec![
        format!("before_step({step})"),
        format!("on_llm_start({step})"),
        format!("on_chunk(tool_start:c{step} lookup)"),
        format!("on_chunk(tool_input:c{step})"),
        format!("on_chunk(tool_call:c{step} lookup)"),
        format!("on_llm_end({step})"),
        format!("before_tool_call(lookup c{step})"),
        format!("lookup({word})"),
        format!("after_tool_call(lookup c{step} {outcome})"),
        format!("on_chunk(tool_result:c{step} lookup {result})"),
        format!("on_step_finish({step})"),
    ]
}

/// The trace of a turn `find` whose steps call `lookup` with `words`, then `end`.
fn lookup_turn(words: &[&str], end: &[&str]) -> Vec<String> {
    let mut trace = lines(&["before_run(find)", "before_turn"]);
    for (step, word) in words.iter().enumerate() {
        trace.extend(lookup_step(step, word));
    }
    trace.extend(lines(end));
    trace
}

/// The end of a turn that a tool past its retries fails.
const FAILED_ON_RETRIES: &[&str] = &[
    "on_stop(tool_retries)",
    "classify_chat_error(turn)",
    "on_chat_error(turn)",
    "on_chat_response(error)",
];

/// The lookup arguments for `word`.
fn word(word: &str) -> String {
    json!({ "word": word }).to_string()
}

/// A stored row as `role(status): text [calls]` or `tool(status) id name ok|error: text`.
fn describe(row: &StoredMessage) -> String {
    let status = format!("{:?}", row.status).to_lowercase();
    match &row.message {
        Message::Tool {
            call_id,
            name,
            content,
            is_error,
        } => {
            let result = if *is_error { "error" } else { "ok" };
            format!("tool({status}) {call_id} {name} {result}: {content}")
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let calls: Vec<String> = tool_calls
                .iter()
                .map(|call| format!("{} {}", call.id, call.name))
                .collect();
            format!("assistant({status}): {content} [{}]", calls.join(", "))
        }
        other => format!("user({status}): {}", other.text()),
    }
}

#[tokio::test]
async fn a_tool_failing_past_its_limit_fails_the_turn_with_every_call_answered() {
    let trace = Trace::new();
    let errors = Seen::<ChatErrorContext>::new();
    let model = calling("lookup", &[&word("x"), &word("y"), &word("z")]);
    let agent = AgentBuilder::new("finder")
        .model(model.clone())
        .dyn_tool(lookup(&trace))
        .tool_retries(1)
        .record_all(&trace)
        .hook(errors.hook::<event::OnChatError>("errors"))
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let result = conversation.run("find").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    let error = result.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::ToolRetries));
    assert_eq!(
        error.message,
        "tool `lookup` failed 2 times in a row, past its limit of 1 retry; last error: no \
         entry for y"
    );
    assert_eq!(trace.take(), lookup_turn(&["x", "y"], FAILED_ON_RETRIES));
    assert_eq!(errors.take()[0].error, error, "on_chat_error reads it");
    assert_eq!(model.remaining(), 2, "no model call after the limit");
    let rows = conversation.rows().await.unwrap();
    assert_eq!(
        rows.iter().map(describe).collect::<Vec<_>>(),
        [
            "user(completed): find",
            "assistant(completed):  [c0 lookup]",
            "tool(completed) c0 lookup error: no entry for x",
            "assistant(completed):  [c1 lookup]",
            "tool(completed) c1 lookup error: no entry for y",
        ],
        "every call answered: the next turn sends a well-formed history"
    );
}

#[tokio::test]
async fn a_step_whose_calls_succeed_resets_the_count() {
    let trace = Trace::new();
    let words = ["x", "ok", "y", "z"].map(word);
    let agent = AgentBuilder::new("finder")
        .model(calling("lookup", &words.each_ref().map(String::as_str)))
        .dyn_tool(lookup(&trace))
        .tool_retries(1)
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("find").await;

    // x fails (1), ok resets (0), y fails (1): the turn goes on; z fails (2) and ends it.
    assert_eq!(
        result.error.unwrap().message,
        "tool `lookup` failed 2 times in a row, past its limit of 1 retry; last error: no \
         entry for z"
    );
    assert_eq!(
        trace.take(),
        lookup_turn(&["x", "ok", "y", "z"], FAILED_ON_RETRIES)
    );
}

#[tokio::test]
async fn a_tools_own_limit_beats_the_agents() {
    // More lenient than the agent's: two retries where the agent allows none.
    let trace = Trace::new();
    let agent = AgentBuilder::new("finder")
        .model(calling(
            "lookup",
            &[&word("x"), &word("y"), &word("z"), &word("w")],
        ))
        .dyn_tool(lookup(&trace).with_retries(2))
        .tool_retries(0)
        .record_all(&trace)
        .build()
        .unwrap();
    let error = agent.run("find").await.error.unwrap();
    assert_eq!(
        error.message,
        "tool `lookup` failed 3 times in a row, past its limit of 2 retries; last error: no \
         entry for z"
    );
    assert_eq!(
        trace.take(),
        lookup_turn(&["x", "y", "z"], FAILED_ON_RETRIES)
    );

    // Stricter: none where the agent allows five.
    let agent = AgentBuilder::new("finder")
        .model(calling("lookup", &[&word("x"), &word("y")]))
        .dyn_tool(lookup(&trace).with_retries(0))
        .tool_retries(5)
        .record_all(&trace)
        .build()
        .unwrap();
    let error = agent.run("find").await.error.unwrap();
    assert_eq!(
        error.message,
        "tool `lookup` failed 1 time in a row, past its limit of 0 retries; last error: no \
         entry for x"
    );
    assert_eq!(trace.take(), lookup_turn(&["x"], FAILED_ON_RETRIES));
}

#[tokio::test]
async fn a_tools_own_limit_applies_when_the_agent_sets_none() {
    let trace = Trace::new();
    let agent = AgentBuilder::new("finder")
        .model(calling("lookup", &[&word("x"), &word("y")]))
        .dyn_tool(lookup(&trace).with_retries(0))
        .record_all(&trace)
        .build()
        .unwrap();
    let result = agent.run("find").await;
    assert_eq!(
        result.error.unwrap().kind,
        TurnErrorKind::Limit(StopReason::ToolRetries)
    );
    assert_eq!(trace.take(), lookup_turn(&["x"], FAILED_ON_RETRIES));
}

#[tokio::test]
async fn arguments_that_do_not_parse_count_and_no_hook_sees_them() {
    let trace = Trace::new();
    let agent = AgentBuilder::new("adder")
        .model(calling("add", &[r#"{"a":"one","b":1}"#, "not json", "{}"]))
        .tool(Add::traced(&trace))
        .tool_retries(1)
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("sum").await;

    let error = result.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::ToolRetries));
    assert_eq!(
        error.message,
        format!(
            "tool `add` failed 2 times in a row, past its limit of 1 retry; last error: {}",
            rejected(&result.steps[1])
        )
    );
    let mut expected = lines(&["before_run(sum)", "before_turn"]);
    for step in 0..2 {
        expected.extend([
            format!("before_step({step})"),
            format!("on_llm_start({step})"),
            format!("on_chunk(tool_start:c{step} add)"),
            format!("on_chunk(tool_input:c{step})"),
            format!("on_chunk(tool_call:c{step} add)"),
            format!("on_llm_end({step})"),
            format!("on_chunk(tool_result:c{step} add error)"),
            format!("on_step_finish({step})"),
        ]);
    }
    expected.extend(lines(FAILED_ON_RETRIES));
    assert_eq!(trace.take(), expected);
}

/// The error result of a step's one call, which the engine rejected before any hook.
fn rejected(step: &agent_core::StepRecord) -> String {
    let [result] = &step.tool_results[..] else {
        panic!("one result: {step:?}");
    };
    assert_eq!(result.outcome, agent_core::ToolOutcomeKind::Rejected);
    result.content.to_string()
}

#[tokio::test]
async fn calls_to_an_unknown_tool_count_against_the_agents_limit() {
    let trace = Trace::new();
    let agent = AgentBuilder::new("finder")
        .model(calling("define", &["{}", "{}"]))
        .dyn_tool(lookup(&trace).with_retries(5))
        .tool_retries(0)
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("find").await;

    let error = result.error.unwrap();
    assert_eq!(
        error.message,
        format!(
            "tool `define` failed 1 time in a row, past its limit of 0 retries; last error: {}",
            rejected(&result.steps[0])
        )
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(find)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c0 define)",
            "on_chunk(tool_input:c0)",
            "on_chunk(tool_call:c0 define)",
            "on_llm_end(0)",
            "on_chunk(tool_result:c0 define error)",
            "on_step_finish(0)",
            "on_stop(tool_retries)",
            "classify_chat_error(turn)",
            "on_chat_error(turn)",
            "on_chat_response(error)",
        ])
    );
}

#[tokio::test]
async fn on_stop_may_answer_for_a_tool_out_of_retries() {
    let trace = Trace::new();
    let agent = AgentBuilder::new("finder")
        .model(calling("lookup", &[&word("x"), &word("y")]))
        .dyn_tool(lookup(&trace))
        .tool_retries(0)
        .record_all(&trace)
        .hook(Hook::<event::OnStop>::sync("apologize", |ctx| {
            StopDecision::Output(format!("No luck ({}).", ctx.reason))
        }))
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let result = conversation.run("find").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::ToolRetries));
    assert_eq!(result.text, "No luck (tool_retries).");
    let end = [
        "on_stop(tool_retries)",
        "after_run(completed)",
        "on_chat_response(completed)",
    ];
    assert_eq!(trace.take(), lookup_turn(&["x"], &end));
    let rows = conversation.rows().await.unwrap();
    assert_eq!(
        rows.iter().map(describe).collect::<Vec<_>>(),
        [
            "user(completed): find",
            "assistant(completed):  [c0 lookup]",
            "tool(completed) c0 lookup error: no entry for x",
            "assistant(completed): No luck (tool_retries). []",
        ]
    );
}

#[tokio::test]
async fn without_a_limit_a_failing_tool_runs_until_max_steps() {
    let trace = Trace::new();
    let agent = AgentBuilder::new("finder")
        .model(calling("lookup", &[&word("x"), &word("y"), &word("z")]))
        .dyn_tool(lookup(&trace))
        .max_steps(3)
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("find").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::MaxSteps));
    let end = [
        "on_stop(max_steps)",
        "after_run(completed)",
        "on_chat_response(completed)",
    ];
    assert_eq!(trace.take(), lookup_turn(&["x", "y", "z"], &end));
}

#[tokio::test]
async fn a_blocked_call_is_no_failure_and_a_panicking_tool_is_one() {
    let trace = Trace::new();
    let panicking = FnTool::sync("explode", "Explodes.", json!({"type": "object"}), |_, _| {
        panic!("boom")
    });
    let agent = AgentBuilder::new("finder")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("c0", "lookup", word("x")),
            ScriptedStep::new().tool_call("c1", "explode", "{}"),
            ScriptedStep::new().text("done"),
        ]))
        .dyn_tool(lookup(&trace))
        .dyn_tool(panicking)
        .tool_retries(0)
        .before_tool_call(
            Matcher::tool("lookup"),
            Hook::<event::BeforeToolCall<Value>>::sync("deny", |_| {
                ToolCallDecision::block("lookups are off")
            }),
        )
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("find").await;

    let error = result.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::ToolRetries));
    assert_eq!(
        error.message,
        format!(
            "tool `explode` failed 1 time in a row, past its limit of 0 retries; last error: {}",
            result.steps[1].tool_results[0].content
        )
    );
    assert!(error.message.contains("boom"), "{}", error.message);
    let mut expected = lines(&["before_run(find)", "before_turn"]);
    expected.extend(lines(&[
        "before_step(0)",
        "on_llm_start(0)",
        "on_chunk(tool_start:c0 lookup)",
        "on_chunk(tool_input:c0)",
        "on_chunk(tool_call:c0 lookup)",
        "on_llm_end(0)",
        // The block stops the chain before the recording gate, added after it.
        "after_tool_call(lookup c0 blocked)",
        "on_chunk(tool_result:c0 lookup ok)",
        "on_step_finish(0)",
        "before_step(1)",
        "on_llm_start(1)",
        "on_chunk(tool_start:c1 explode)",
        "on_chunk(tool_input:c1)",
        "on_chunk(tool_call:c1 explode)",
        "on_llm_end(1)",
        "before_tool_call(explode c1)",
        "after_tool_call(explode c1 failed)",
        "on_chunk(tool_result:c1 explode error)",
        "on_step_finish(1)",
    ]));
    expected.extend(lines(FAILED_ON_RETRIES));
    assert_eq!(trace.take(), expected);
}

#[tokio::test]
async fn final_answer_calls_count_against_the_output_retries_alone() {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Verdict {
        approved: bool,
    }
    let agent = AgentBuilder::new("judge")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("c0", "final_result", r#"{"approved":"yes"}"#),
            ScriptedStep::new().tool_call("c1", "final_result", r#"{"approved":true}"#),
        ]))
        .output::<Verdict>()
        .tool_retries(0)
        .build()
        .unwrap();

    let result = agent.run("judge").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        result.output::<Verdict>().unwrap(),
        &Verdict { approved: true }
    );
}
