//! Command hooks (issue 10 item 4): a program per tool-call event, the snapshot on its stdin,
//! its answer on stdout; small shell scripts that allow, block, modify, substitute, ask, defer,
//! crash and hang (killed with the processes they started), an audit hook with a minimal
//! environment, and hooks read from a JSON file.

use std::path::Path;
use std::time::Duration;

use agent_core::{
    AgentBuilder, CommandEvent, CommandHook, FnTool, PendingKind, ScriptedModel, ScriptedStep,
    ToolError, TurnResult, TurnStatus,
};
use serde_json::{Value, json};
use tests::{Scratch, Trace};

/// A fresh folder for one test's scripts and files, removed when the test ends.
fn folder(name: &str) -> Scratch {
    Scratch::new(&format!("command-hooks-{name}"))
}

/// Writes an executable `sh` script.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .unwrap();
    path.display().to_string()
}

/// A before_tool_call hook running a script named `name` with `body`, written into `dir`.
fn gate(dir: &Path, name: &str, body: &str) -> CommandHook {
    CommandHook::new(
        name,
        CommandEvent::BeforeToolCall,
        [script(dir, name, body)],
    )
}

/// What the model read of a turn whose gate kept its tool from running (the turn completed).
async fn blocked(hook: CommandHook) -> String {
    let trace = Trace::new();
    let (result, read) = turn(hook, &trace).await;
    assert!(result.is_completed(), "{result:?}");
    assert_eq!(trace.take(), Vec::<String>::new(), "the tool did not run");
    read
}

/// One turn in which the model calls `write_note` with `{"path":"notes.txt"}`; the tool records
/// the path it got. Returns the result and what the model read.
async fn turn(hook: CommandHook, trace: &Trace) -> (TurnResult, String) {
    let t = trace.clone();
    let write = FnTool::new(
        "write_note",
        "Writes a note.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        move |args: Value, _| {
            t.push(format!("tool ran with {}", args["path"]));
            async { Ok::<Value, ToolError>(json!("written")) }
        },
    );
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "write_note", r#"{"path":"notes.txt"}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = AgentBuilder::new("notes")
        .model(model.clone())
        .dyn_tool(write)
        .command_hook(hook)
        .build()
        .unwrap();
    let result = agent.run("write it").await;
    let read = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .text()
        .to_owned();
    (result, read)
}

#[tokio::test]
async fn a_gate_program_allows_blocks_modifies_or_substitutes() {
    let dir = folder("gate");
    let cases = [
        (
            "allow",
            "cat > /dev/null",
            "tool ran with \"notes.txt\"",
            "written",
        ),
        (
            "block",
            r#"cat > /dev/null; echo '{"decision":"block","reason":"no writes today"}'"#,
            "",
            "no writes today",
        ),
        (
            "modify",
            r#"cat > /dev/null; echo '{"decision":"modify","input":{"path":"safe.txt"}}'"#,
            "tool ran with \"safe.txt\"",
            "written",
        ),
        (
            "substitute",
            r#"cat > /dev/null; echo '{"decision":"substitute","output":"from cache"}'"#,
            "",
            "from cache",
        ),
    ];
    for (name, body, ran, read) in cases {
        let trace = Trace::new();
        let program = script(&dir, name, body);
        let hook = CommandHook::new(name, CommandEvent::BeforeToolCall, [program]);
        let (result, model_read) = turn(hook, &trace).await;
        assert!(result.is_completed(), "{name}: {result:?}");
        let expected: Vec<String> = if ran.is_empty() {
            vec![]
        } else {
            vec![ran.to_owned()]
        };
        assert_eq!(trace.take(), expected, "{name}");
        assert_eq!(model_read, read, "{name}");
    }
}

#[tokio::test]
async fn a_gate_program_may_ask_for_approval_or_defer_the_call() {
    let dir = folder("waits");
    for (name, kind, reason) in [
        ("ask", PendingKind::Approval, "a person checks notes"),
        (
            "defer",
            PendingKind::Deferred,
            "tool `write_note` was deferred by a hook",
        ),
    ] {
        let body = match name {
            "ask" => {
                r#"cat > /dev/null; echo '{"decision":"ask","reason":"a person checks notes"}'"#
            }
            _ => r#"cat > /dev/null; echo '{"decision":"defer"}'"#,
        };
        let hook = CommandHook::new(
            name,
            CommandEvent::BeforeToolCall,
            [script(&dir, name, body)],
        );
        let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "write_note", "{}")]);
        let write = FnTool::new(
            "write_note",
            "Writes a note.",
            json!({"type": "object"}),
            |_, _| async { Ok::<Value, ToolError>(json!("written")) },
        );
        let agent = AgentBuilder::new("notes")
            .model(model)
            .dyn_tool(write)
            .command_hook(hook)
            .build()
            .unwrap();

        let result = agent.run("note it").await;

        assert_eq!(result.status, TurnStatus::Suspended, "{name}: {result:?}");
        assert_eq!(result.pending[0].kind, kind, "{name}");
        assert_eq!(result.pending[0].reason, reason, "{name}");
    }
}

#[tokio::test]
async fn a_crashing_or_hanging_gate_fails_closed_and_a_hung_one_is_killed_with_its_children() {
    let dir = folder("failing");
    let hook = gate(&dir, "crash", "echo boom >&2; exit 3");
    let read = blocked(hook).await;
    assert_eq!(
        read,
        "tool `write_note` did not run: before_tool_call hook `crash` returned an error: command hook `crash` exited with 3: boom"
    );

    let pid_file = dir.join("child.pid");
    let hook = gate(
        &dir,
        "hang",
        &format!("sleep 300 & echo $! > {}; wait", pid_file.display()),
    )
    .timeout(Duration::from_millis(300));
    let read = blocked(hook).await;
    assert_eq!(
        read,
        "tool `write_note` did not run: before_tool_call hook `hang` returned an error: command hook `hang` ran past its 300 ms and was killed"
    );
    assert!(
        !sleeping(&pid_file),
        "the program's own child was killed too"
    );
}

/// Whether the `sleep` whose pid a hook wrote to `pid_file` still runs, after giving a kill a
/// moment to land (on a loaded machine). Killed means gone, or a zombie nobody reaped yet
/// (PID 1 of a container may not reap); a reused pid is not `sleep`.
fn sleeping(pid_file: &Path) -> bool {
    let child = std::fs::read_to_string(pid_file).unwrap();
    let sleeping = || {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", child.trim())).unwrap_or_default();
        let state = stat
            .rsplit(") ")
            .next()
            .and_then(|rest| rest.chars().next());
        stat.contains("(sleep)") && !matches!(state, None | Some('Z' | 'X'))
    };
    for _ in 0..100 {
        if !sleeping() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    sleeping()
}

/// A program that answers and exits, leaving a background process that still holds its
/// stdout: its answer counts at once (before, the hook waited for the pipe to close until its
/// timeout, and failed), and the background process is killed.
#[tokio::test]
async fn a_background_process_holding_the_output_does_not_hold_up_the_answer() {
    let dir = folder("background-output");
    let pid_file = dir.join("child.pid");
    let hook = gate(
        &dir,
        "lingering",
        &format!(
            r#"sleep 300 & echo $! > {}; echo '{{"decision":"block","reason":"no notes today"}}'"#,
            pid_file.display()
        ),
    );
    let read = blocked(hook).await;
    assert_eq!(read, "no notes today");
    assert!(!sleeping(&pid_file), "the background process was killed");
}

/// A program's background process that let go of its pipes does not outlive the program's
/// run either: the hook leaves nothing running once it has answered.
#[tokio::test]
async fn a_background_process_ends_with_the_program() {
    let dir = folder("background");
    let pid_file = dir.join("child.pid");
    let hook = gate(
        &dir,
        "detached",
        &format!(
            "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {}",
            pid_file.display()
        ),
    );
    let trace = Trace::new();
    let (result, read) = turn(hook, &trace).await;
    assert!(result.is_completed(), "{result:?}");
    assert_eq!(trace.take(), ["tool ran with \"notes.txt\""]);
    assert_eq!(read, "written");
    assert!(!sleeping(&pid_file), "the background process was killed");
}

#[tokio::test]
async fn an_audit_program_sees_the_result_snapshot_in_a_minimal_environment() {
    let dir = folder("audit");
    let log = dir.join("audit.log");
    let audit = script(
        &dir,
        "audit",
        &format!(
            "cat >> {log}; echo \" home=${{HOME:-none}} extra=$EXTRA\" >> {log}",
            log = log.display()
        ),
    );
    let hook = CommandHook::new("audit", CommandEvent::AfterToolCall, [audit]).env("EXTRA", "yes");
    let (result, _) = turn(hook, &Trace::new()).await;
    assert!(result.is_completed());
    let line = std::fs::read_to_string(&log).unwrap();
    let (snapshot, env) = line.split_once(" home=").unwrap();
    let snapshot: Value = serde_json::from_str(snapshot).unwrap();
    assert_eq!(snapshot["toolName"], json!("write_note"));
    assert_eq!(snapshot["input"], json!({"path": "notes.txt"}));
    assert_eq!(snapshot["success"], json!(true));
    assert_eq!(snapshot["output"], json!("written"));
    assert_eq!(
        env.trim(),
        "none extra=yes",
        "no inherited HOME; only what the hook adds"
    );
}

#[tokio::test]
async fn hooks_read_from_a_json_file() {
    let dir = folder("file");
    script(
        &dir,
        "policy.sh",
        r#"cat > /dev/null; echo '{"decision":"block","reason":"read-only day"}'"#,
    );
    let config = dir.join("hooks.json");
    std::fs::write(
        &config,
        json!({"hooks": [{
            "name": "policy",
            "event": "before_tool_call",
            "command": ["./policy.sh"],
            "match": "^write_",
            "timeout_ms": 2000,
            "on_error": "fail_closed",
            "cwd": "."
        }]})
        .to_string(),
    )
    .unwrap();
    let hooks = CommandHook::from_json_file(&config).unwrap();
    assert_eq!(hooks.len(), 1);
    let trace = Trace::new();
    let (_, read) = turn(hooks.into_iter().next().unwrap(), &trace).await;
    assert_eq!(read, "read-only day");
    assert!(trace.take().is_empty());

    std::fs::write(
        &config,
        r#"{"hooks": [{"name": "x", "event": "before_tool_call", "command": ["a"], "on_error": "sometimes"}]}"#,
    )
    .unwrap();
    let error = CommandHook::from_json_file(&config)
        .unwrap_err()
        .to_string();
    assert!(
        error.ends_with("hook `x`: `on_error` is `fail_open` or `fail_closed`, not `sometimes`"),
        "{error}"
    );
}

/// Programs on the turn's events: before_turn may set the system prompt, on_step_finish
/// audits each step; a failing before_turn program fails the turn (that event's default).
#[tokio::test]
async fn programs_on_before_turn_and_on_step_finish() {
    let dir = folder("turn");
    let log = dir.join("steps.log");
    let system = script(
        &dir,
        "system",
        r#"cat > /dev/null; echo '{"system": "Answer in French."}'"#,
    );
    let steps = script(
        &dir,
        "steps",
        &format!("cat >> {log}; echo >> {log}", log = log.display()),
    );
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "write_note", r#"{"path":"a"}"#),
        ScriptedStep::new().text("Fait."),
    ]);
    let write = FnTool::new(
        "write_note",
        "Writes a note.",
        json!({"type": "object"}),
        |_, _| async { Ok::<Value, ToolError>(json!("written")) },
    );
    let result = AgentBuilder::new("turn")
        .model(model.clone())
        .dyn_tool(write)
        .command_hook(CommandHook::new(
            "system",
            CommandEvent::BeforeTurn,
            [system],
        ))
        .command_hook(CommandHook::new(
            "steps",
            CommandEvent::OnStepFinish,
            [steps],
        ))
        .build()
        .unwrap()
        .run("write it")
        .await;
    assert!(result.is_completed(), "{result:?}");
    assert_eq!(
        model.requests()[0].system.as_deref(),
        Some("Answer in French.")
    );
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let numbers: Vec<&Value> = lines.iter().map(|l| &l["stepNumber"]).collect();
    assert_eq!(numbers, [&json!(0), &json!(1)]);

    let failing = script(&dir, "failing", "echo 'no config service' >&2; exit 1");
    let result = AgentBuilder::new("turn")
        .model(ScriptedModel::new([ScriptedStep::new().text("never")]))
        .command_hook(CommandHook::new(
            "config",
            CommandEvent::BeforeTurn,
            [failing],
        ))
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(
        result.error.unwrap().message,
        "before_turn hook `config` returned an error: command hook `config` exited with 1: no config service"
    );
}

#[tokio::test]
async fn hooks_read_from_a_toml_file() {
    let dir = folder("toml");
    script(
        &dir,
        "policy.sh",
        r#"cat > /dev/null; echo '{"decision":"block","reason":"from toml"}'"#,
    );
    let config = dir.join("hooks.toml");
    std::fs::write(
        &config,
        r#"
[[hooks]]
name = "policy"
event = "before_tool_call"
command = ["./policy.sh"]
match = "^write_"
timeout_ms = 2000
cwd = "."
env = [["MODE", "strict"]]
"#,
    )
    .unwrap();
    let hooks = CommandHook::from_file(&config).unwrap();
    let trace = Trace::new();
    let (_, read) = turn(hooks.into_iter().next().unwrap(), &trace).await;
    assert_eq!(read, "from toml");
    assert!(trace.take().is_empty(), "the tool did not run");
}

/// A hook made in code with no program to run is a build error naming it, as a config file's
/// is when read (it panicked at its first run: the gate then failed every call closed with an
/// index out of bounds).
#[test]
fn a_hook_without_a_program_is_a_build_error() {
    let hook = CommandHook::new("gate", CommandEvent::BeforeToolCall, Vec::<String>::new());
    let error = AgentBuilder::new("notes")
        .model(ScriptedModel::new([]))
        .command_hook(hook)
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        ["command hook `gate`: its command is empty: give the program to run, then its arguments"]
    );
}

/// The variables given to a program are often its credentials (the parent's API keys are not
/// passed on): the hook's `Debug` names them without their values.
#[test]
fn debug_output_names_the_variables_without_their_values() {
    let hook = CommandHook::new("audit", CommandEvent::AfterToolCall, ["audit.sh"])
        .env("AUDIT_TOKEN", "tok-SECRET-123");
    let shown = format!("{hook:?}");
    assert!(shown.contains("AUDIT_TOKEN"), "{shown}");
    assert!(!shown.contains("tok-SECRET-123"), "{shown}");
}

#[tokio::test]
async fn a_gate_answer_that_is_not_utf8_is_read_not_taken_for_an_empty_allow() {
    let dir = folder("latin1");
    // `caf\351` is "café" in Latin-1: one byte that is not UTF-8.
    let hook = gate(
        &dir,
        "block",
        r#"cat > /dev/null; printf '{"decision":"block","reason":"no caf\351 notes"}'"#,
    );
    let read = blocked(hook).await;
    assert_eq!(read, "no caf\u{fffd} notes");
}

#[tokio::test]
async fn a_program_that_logs_much_to_stderr_before_answering_is_not_taken_for_a_hung_one() {
    let dir = folder("chatty");
    // 256 KiB of log lines on stderr (more than a pipe holds), then the answer.
    let hook = gate(
        &dir,
        "chatty",
        r#"cat > /dev/null
i=0
while [ $i -lt 4096 ]; do
  echo "checking the policy service, attempt $i of many ....................." >&2
  i=$((i + 1))
done
echo '{"decision":"block","reason":"checked"}'"#,
    );
    let read = blocked(hook).await;
    assert_eq!(read, "checked");
}

#[tokio::test]
async fn a_program_that_answers_before_reading_a_large_snapshot_is_not_taken_for_a_hung_one() {
    let dir = folder("early");
    let trace = Trace::new();
    // Prints more than a pipe holds before it reads its input, then reads it all and answers.
    let early = script(
        &dir,
        "early",
        r#"head -c 200000 /dev/zero | tr '\0' ' '
cat > /dev/null
echo '{"decision":"block","reason":"read it all"}'"#,
    );
    let t = trace.clone();
    let write = FnTool::new(
        "write_note",
        "Writes a note.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        move |_: Value, _| {
            t.push("tool ran".to_owned());
            async { Ok::<Value, ToolError>(json!("written")) }
        },
    );
    let long = "x".repeat(200_000);
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "write_note", json!({"text": long}).to_string()),
        ScriptedStep::new().text("Done."),
    ]);
    let result = AgentBuilder::new("notes")
        .model(model.clone())
        .dyn_tool(write)
        .command_hook(CommandHook::new(
            "early",
            CommandEvent::BeforeToolCall,
            [early],
        ))
        .build()
        .unwrap()
        .run("write it")
        .await;
    assert!(result.is_completed(), "{result:?}");
    assert_eq!(trace.take(), Vec::<String>::new(), "the tool did not run");
    assert_eq!(
        model.requests()[1].messages.last().unwrap().text(),
        "read it all"
    );
}

/// A zero timeout kills every run at once (as a hook's, an extension's or a tool's zero
/// timeout would, which are build errors): an audit hook would never run, with only a log
/// line to say so.
#[test]
fn a_hook_with_a_zero_timeout_is_a_build_error() {
    let hook = CommandHook::new("audit", CommandEvent::AfterToolCall, ["audit.sh"])
        .timeout(Duration::ZERO);
    let error = AgentBuilder::new("notes")
        .model(ScriptedModel::new([]))
        .command_hook(hook)
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        [
            "command hook `audit`: its timeout is zero, so every run would time out at once; give a positive limit"
        ]
    );
}

#[tokio::test]
async fn a_working_directory_that_is_not_there_is_named_not_the_program() {
    let dir = folder("cwd");
    let gate = script(&dir, "gate", "cat > /dev/null");
    let missing = dir.join("hooks");
    let hook = CommandHook::new("gate", CommandEvent::BeforeToolCall, [gate.clone()]).cwd(&missing);
    let read = blocked(hook).await;
    assert_eq!(
        read,
        format!(
            "tool `write_note` did not run: before_tool_call hook `gate` returned an error: command hook `gate` could not start `{gate}`: its working directory {} is not a directory",
            missing.display()
        )
    );
}

/// A before_turn program's answer is an object of `TurnConfig` fields: JSON of another shape
/// (a bare string, a list) fails the hook as an answer that is not JSON does, rather than
/// being dropped without a word.
#[tokio::test]
async fn a_before_turn_answer_that_is_not_an_object_fails_the_hook() {
    let dir = folder("turn-shape");
    for (name, answer) in [
        ("string", r#""Answer in French.""#),
        ("list", r#"[{"system": "Answer in French."}]"#),
    ] {
        let program = script(&dir, name, &format!("cat > /dev/null; echo '{answer}'"));
        let model = ScriptedModel::new([ScriptedStep::new().text("never")]);
        let result = AgentBuilder::new("turn")
            .model(model.clone())
            .command_hook(CommandHook::new(name, CommandEvent::BeforeTurn, [program]))
            .build()
            .unwrap()
            .run("go")
            .await;
        assert_eq!(
            result.error.map(|e| e.message),
            Some(format!(
                "before_turn hook `{name}` returned an error: its answer is not a JSON object of TurnConfig fields: {answer}"
            )),
            "{name}"
        );
        assert!(model.requests().is_empty(), "{name}: no model call");
    }
}

/// A matcher selects tool calls: on before_turn or on_step_finish it would select nothing, and
/// the program would run on every turn or step, whatever `match` says.
#[test]
fn a_matcher_on_an_event_without_a_tool_call_is_a_build_error() {
    let dir = folder("turn-match");
    let config = dir.join("hooks.json");
    std::fs::write(
        &config,
        json!({"hooks": [{
            "name": "audit",
            "event": "on_step_finish",
            "command": ["./audit.sh"],
            "match": "^write_"
        }]})
        .to_string(),
    )
    .unwrap();
    let from_file = CommandHook::from_json_file(&config).unwrap().remove(0);
    let in_code = CommandHook::new("config", CommandEvent::BeforeTurn, ["./config.sh"])
        .matcher(agent_core::Matcher::tool("write_note"));
    let error = AgentBuilder::new("notes")
        .model(ScriptedModel::new([]))
        .command_hook(from_file)
        .command_hook(in_code)
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        [
            "command hook `audit`: it runs on `on_step_finish`, which has no tool call for its \
             matcher to select; remove the matcher, or run it on before_tool_call or after_tool_call",
            "command hook `config`: it runs on `before_turn`, which has no tool call for its \
             matcher to select; remove the matcher, or run it on before_tool_call or after_tool_call",
        ]
    );
}
