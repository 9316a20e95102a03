//! Command hooks: a program run per event, as Claude Code's hooks are ([`CommandHook`]). The
//! event's snapshot (its extension snapshot) goes to its stdin; for before_tool_call its
//! stdout may hold a decision, for before_turn `TurnConfig` scalars. Built on the public hook API: a command
//! hook is an untyped before/after_tool_call hook whose body runs the program.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::AgentBuilder;
use crate::hooks::event::{AfterToolCall, BeforeToolCall, BeforeTurn, OnStepFinish};
use crate::hooks::extension::{
    call_snapshot, merge_turn_answer, result_snapshot, step_snapshot, turn_snapshot,
};
use crate::hooks::{Event, FailurePolicy, Hook, Matcher, ToolCallDecision, TurnConfig};
use crate::util::clip;

/// The event a command hook runs on. `on_chunk` has no command form: a process per streamed
/// chunk would cost milliseconds per token; an [`Extension`](crate::Extension) subscribed to
/// `onChunk` observes chunks in process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CommandEvent {
    /// Before the first step: the program reads the `beforeTurn` snapshot and may print an
    /// object of `TurnConfig` scalars to merge (as an extension's answer: `system`,
    /// `maxSteps`, `temperature`, ...); an answer that is not such an object fails the hook.
    /// Fails the turn by default when it fails.
    BeforeTurn,
    /// After each step: the program reads the `onStepFinish` snapshot (fails open).
    OnStepFinish,
    /// Before a tool runs: the program may allow, modify, block or substitute the call
    /// (fails closed by default: a failing program means the tool does not run).
    BeforeToolCall,
    /// After every tool outcome: the program observes (fails open by default).
    AfterToolCall,
}

/// A program run on an event (a tool call's, before a turn, after a step), configured in code
/// or from a JSON file
/// ([`CommandHook::from_json_file`]), so an operator can add an audit or a policy hook without
/// recompiling.
///
/// The program gets the event's snapshot on stdin (the fields of the
/// [extension snapshots](crate::Extension): `toolName`, `toolCallId`, `input`, `stepNumber`,
/// `dynamic`, and after the call `durationMs`, `success`, `output` or `error`), a minimal
/// environment (`PATH` only, plus what [`env`](Self::env) adds: never the parent's API keys),
/// and the working directory given (default: the process's). On before_tool_call its stdout
/// may be empty or `{"decision": "allow"}`, `{"decision": "block", "reason": "..."}`,
/// `{"decision": "modify", "input": {...}}` (validated against the tool's arguments as any
/// hook's modification), `{"decision": "substitute", "output": ...}`, or `{"decision": "ask"}` /
/// `{"decision": "defer"}` (with an optional `reason`: the call waits, see
/// [`ToolCallDecision::Ask`] and [`ToolCallDecision::Defer`]). A non-zero exit, an
/// answer that is not one of these, or running past the timeout (the program and every
/// process it started are killed) is the hook's failure, handled by its policy. A program's
/// background processes (`cmd &`) are killed when it exits, so none outlives its run nor
/// holds its output open; one that must live on leaves the group (`setsid cmd &`) and closes
/// the program's stdout and stderr. Its output is
/// read as UTF-8 (a byte that is not becomes U+FFFD). Its `Debug` names the variables
/// [`env`](Self::env) adds, not their values.
#[derive(Clone)]
pub struct CommandHook {
    name: String,
    event: CommandEvent,
    command: Vec<String>,
    /// The tools it runs on (tool-call events); `None` for every tool.
    matcher: Option<Matcher>,
    timeout: Duration,
    policy: Option<FailurePolicy>,
    cwd: Option<PathBuf>,
    env: Vec<(String, String)>,
}

impl fmt::Debug for CommandHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(key, _)| key.as_str()).collect();
        f.debug_struct("CommandHook")
            .field("name", &self.name)
            .field("event", &self.event)
            .field("command", &self.command)
            .field("matcher", &self.matcher)
            .field("timeout", &self.timeout)
            .field("policy", &self.policy)
            .field("cwd", &self.cwd)
            .field("env", &env)
            .finish()
    }
}

/// The JSON form of one command hook (see [`CommandHook::from_json_file`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    name: String,
    event: CommandEvent,
    command: Vec<String>,
    #[serde(rename = "match")]
    matcher: Option<String>,
    timeout_ms: Option<u64>,
    on_error: Option<String>,
    cwd: Option<PathBuf>,
    #[serde(default)]
    env: Vec<(String, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    hooks: Vec<Config>,
}

/// Why command hooks could not be read from a file.
#[derive(Debug)]
pub struct CommandHookError(String);

impl fmt::Display for CommandHookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CommandHookError {}

impl CommandHook {
    /// Runs `command` (the program, then its arguments) on `event` for every tool; 10 s
    /// timeout; the event's default failure policy.
    pub fn new(
        name: impl Into<String>,
        event: CommandEvent,
        command: impl IntoIterator<Item = impl Into<String>>,
    ) -> CommandHook {
        CommandHook {
            name: name.into(),
            event,
            command: command.into_iter().map(Into::into).collect(),
            matcher: None,
            timeout: Duration::from_secs(10),
            policy: None,
            cwd: None,
            env: Vec::new(),
        }
    }

    /// Runs only on the tools `matcher` selects (always dynamic: it may select tools added at
    /// run time, such as MCP tools). Tool-call events only: on another event it is a build
    /// error.
    pub fn matcher(mut self, matcher: Matcher) -> CommandHook {
        self.matcher = Some(matcher.dynamic());
        self
    }

    /// How long the program may run before it (and everything it started) is killed; zero is
    /// a build error.
    pub fn timeout(mut self, limit: Duration) -> CommandHook {
        self.timeout = limit;
        self
    }

    /// What a failing program does, instead of the event's default.
    pub fn on_error(mut self, policy: FailurePolicy) -> CommandHook {
        self.policy = Some(policy);
        self
    }

    /// The program's working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> CommandHook {
        self.cwd = Some(dir.into());
        self
    }

    /// Adds a variable to the program's (otherwise minimal) environment.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> CommandHook {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Reads command hooks from a JSON file (see [`from_json_file`](Self::from_json_file)) or a
    /// TOML file (by its `.toml` extension: `[[hooks]]` tables with the same keys).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Vec<CommandHook>, CommandHookError> {
        let path = path.as_ref();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CommandHookError(format!("{}: {e}", path.display())))?;
            let file: ConfigFile = toml::from_str(&text)
                .map_err(|e| CommandHookError(format!("{}: {e}", path.display())))?;
            CommandHook::from_config(path, file)
        } else {
            CommandHook::from_json_file(path)
        }
    }

    /// Reads command hooks from a JSON file:
    /// `{"hooks": [{"name": "audit", "event": "after_tool_call", "command": ["./audit.sh"],
    /// "match": "^write_", "timeout_ms": 2000, "on_error": "fail_closed", "cwd": "hooks",
    /// "env": [["LOG", "/tmp/audit.log"]]}]}` (`match` is a regex; without it every tool; on
    /// an event other than a tool call's it is a build error). A relative `cwd` is relative to
    /// the file's folder.
    pub fn from_json_file(path: impl AsRef<Path>) -> Result<Vec<CommandHook>, CommandHookError> {
        let path = path.as_ref();
        let fail = |what: String| CommandHookError(format!("{}: {what}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        let file: ConfigFile = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
        CommandHook::from_config(path, file)
    }

    /// The hooks a config file (at `path`) lists.
    fn from_config(path: &Path, file: ConfigFile) -> Result<Vec<CommandHook>, CommandHookError> {
        let fail = |what: String| CommandHookError(format!("{}: {what}", path.display()));
        let folder = path.parent().unwrap_or(Path::new("."));
        file.hooks
            .into_iter()
            .map(|config| {
                if config.command.is_empty() {
                    return Err(fail(format!("hook `{}`: `command` is empty", config.name)));
                }
                let mut hook = CommandHook::new(config.name, config.event, config.command);
                if let Some(pattern) = config.matcher {
                    hook = hook.matcher(Matcher::regex(pattern));
                }
                if let Some(ms) = config.timeout_ms {
                    hook = hook.timeout(Duration::from_millis(ms));
                }
                if let Some(policy) = config.on_error {
                    let policy = match policy.as_str() {
                        "fail_open" => FailurePolicy::FailOpen,
                        "fail_closed" => FailurePolicy::FailClosed,
                        other => {
                            return Err(fail(format!(
                                "hook `{}`: `on_error` is `fail_open` or `fail_closed`, not `{other}`",
                                hook.name
                            )));
                        }
                    };
                    hook = hook.on_error(policy);
                }
                if let Some(cwd) = config.cwd {
                    hook = hook.cwd(folder.join(cwd));
                }
                for (key, value) in config.env {
                    hook = hook.env(key, value);
                }
                Ok(hook)
            })
            .collect()
    }

    /// Why the hook cannot run, if it cannot: it has no program, a zero timeout (every run
    /// would be killed at once), or a matcher on an event without a tool call (it would run
    /// on every turn or step, whatever the matcher says).
    pub(crate) fn problem(&self) -> Option<String> {
        let name = &self.name;
        if self.command.is_empty() {
            return Some(format!(
                "command hook `{name}`: its command is empty: give the program to run, then its \
                 arguments"
            ));
        }
        if self.timeout.is_zero() {
            return Some(format!(
                "command hook `{name}`: its timeout is zero, so every run would time out at \
                 once; give a positive limit"
            ));
        }
        let event = match self.event {
            CommandEvent::BeforeTurn => "before_turn",
            CommandEvent::OnStepFinish => "on_step_finish",
            CommandEvent::BeforeToolCall | CommandEvent::AfterToolCall => return None,
        };
        self.matcher.as_ref().map(|_| {
            format!(
                "command hook `{name}`: it runs on `{event}`, which has no tool call for its \
                 matcher to select; remove the matcher, or run it on before_tool_call or \
                 after_tool_call"
            )
        })
    }

    /// Registers the hook on `builder`.
    pub(crate) fn register(self, builder: AgentBuilder) -> AgentBuilder {
        let matcher = self.matcher.unwrap_or_else(|| Matcher::all().dynamic());
        let run = Arc::new(Runner {
            name: self.name.clone(),
            command: self.command,
            cwd: self.cwd,
            env: self.env,
            timeout: self.timeout,
        });
        let policy = self.policy;
        match self.event {
            CommandEvent::BeforeTurn => builder.hook(with_policy(
                Hook::<BeforeTurn>::new_async_with(
                    self.name,
                    run,
                    async |run: &Arc<Runner>, ctx: &crate::hooks::TurnContext| {
                        let out = run.run(turn_snapshot(ctx)).await?;
                        let mut config = TurnConfig::new();
                        if !out.trim().is_empty() {
                            let answer: Value = serde_json::from_str(&out).map_err(|e| {
                                format!("its answer is not JSON ({e}): {}", clip(&out))
                            })?;
                            if !answer.is_object() {
                                return Err(format!(
                                    "its answer is not a JSON object of TurnConfig fields: {}",
                                    clip(out.trim())
                                ));
                            }
                            merge_turn_answer(&mut config, &answer);
                        }
                        Ok::<_, String>(config)
                    },
                ),
                policy,
            )),
            CommandEvent::OnStepFinish => builder.hook(with_policy(
                Hook::<OnStepFinish>::new_async_with(
                    self.name,
                    run,
                    async |run: &Arc<Runner>, record: &crate::hooks::StepRecord| {
                        run.run(step_snapshot(record)).await.map(|_| ())
                    },
                ),
                policy,
            )),
            CommandEvent::BeforeToolCall => {
                let hook = Hook::<BeforeToolCall<Value>>::new_async_with(
                    self.name,
                    run,
                    async |run: &Arc<Runner>, ctx: &crate::hooks::ToolCallContext<Value>| {
                        let snapshot = call_snapshot(
                            &ctx.tool_name,
                            &ctx.call_id,
                            ctx.input.clone(),
                            ctx.step,
                            ctx.dynamic,
                        );
                        decision(&run.run(snapshot).await?)
                    },
                );
                builder.before_tool_call(matcher, with_policy(hook, policy))
            }
            CommandEvent::AfterToolCall => {
                let hook = Hook::<AfterToolCall<Value>>::new_async_with(
                    self.name,
                    run,
                    async |run: &Arc<Runner>, ctx: &crate::hooks::ToolCallResultContext<Value>| {
                        let call = call_snapshot(
                            &ctx.tool_name,
                            &ctx.call_id,
                            ctx.effective_input.clone(),
                            ctx.step,
                            ctx.dynamic,
                        );
                        let snapshot =
                            result_snapshot(call, ctx.duration, &ctx.outcome, &ctx.model_result);
                        run.run(snapshot).await.map(|_| ())
                    },
                );
                builder.after_tool_call(matcher, with_policy(hook, policy))
            }
        }
    }
}

/// `hook` with the command hook's policy, when it has one.
fn with_policy<E: Event>(hook: Hook<E>, policy: Option<FailurePolicy>) -> Hook<E> {
    match policy {
        Some(policy) => hook.on_error(policy),
        None => hook,
    }
}

/// What a command hook runs: the program, its folder and environment, and its time limit.
struct Runner {
    name: String,
    command: Vec<String>,
    cwd: Option<PathBuf>,
    env: Vec<(String, String)>,
    timeout: Duration,
}

/// Kills a process group when dropped (a timeout, a cancelled turn), unless disarmed.
struct KillGroup(Option<u32>);

impl Drop for KillGroup {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

/// Sends SIGKILL to the process group the program leads: the program and every process it
/// started that stayed in its group. A system call, not the `kill` program (which an image
/// without a shell's tools lacks).
fn kill_group(group: Option<u32>) {
    let Some(pid) = group.and_then(|id| Pid::from_raw(i32::try_from(id).ok()?)) else {
        return;
    };
    // ESRCH (the group is gone) is the usual answer once the program exited alone.
    let _ = kill_process_group(pid, Signal::KILL);
}

/// The most of a program's stdout read (an answer is small).
const STDOUT_LIMIT: u64 = 1 << 20;

impl Runner {
    /// Runs the program with `snapshot` on stdin; its stdout, or why it failed.
    async fn run(&self, snapshot: Value) -> Result<String, String> {
        let name = &self.name;
        let mut command = tokio::process::Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(|e| {
            let program = &self.command[0];
            match &self.cwd {
                // The folder is entered before the program starts: its absence reads as the
                // program's (`No such file or directory`).
                Some(cwd) if !cwd.is_dir() => format!(
                    "command hook `{name}` could not start `{program}`: its working directory \
                     {} is not a directory",
                    cwd.display()
                ),
                _ => format!("command hook `{name}` could not start `{program}`: {e}"),
            }
        })?;
        let group = child.id();
        let mut guard = KillGroup(group);
        let io = async {
            let stdin = child.stdin.take();
            let feed = async {
                if let Some(mut stdin) = stdin {
                    // A program that does not read its input is not an error.
                    let _ = stdin.write_all(snapshot.to_string().as_bytes()).await;
                }
            };
            let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
            let exit = async {
                let status = child.wait().await;
                // What the program left running in its group (`cmd &`) ends with it: it would
                // outlive the turn, and one that holds stdout or stderr would keep the drains
                // below waiting until the timeout.
                kill_group(group);
                status
            };
            // All three pipes at once: a program may print more than a pipe holds (on
            // stderr, say) before it reads its input or writes its answer.
            let (_, out, err, status) = tokio::join!(feed, drain(stdout), drain(stderr), exit);
            (status, out, err)
        };
        let (status, out, err) = tokio::time::timeout(self.timeout, io).await.map_err(|_| {
            format!(
                "command hook `{name}` ran past its {} ms and was killed",
                self.timeout.as_millis()
            )
        })?;
        guard.0 = None;
        let status = status.map_err(|e| format!("command hook `{name}`: {e}"))?;
        if !status.success() {
            let code = status
                .code()
                .map_or_else(|| "a signal".to_owned(), |code| code.to_string());
            return Err(format!(
                "command hook `{name}` exited with {code}: {}",
                clip(err.trim())
            ));
        }
        Ok(out)
    }
}

/// What a program printed on one of its pipes, up to [`STDOUT_LIMIT`] bytes; bytes that are not
/// UTF-8 read as U+FFFD (an answer is never lost to one stray byte).
async fn drain(pipe: Option<impl AsyncRead + Unpin>) -> String {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.take(STDOUT_LIMIT).read_to_end(&mut bytes).await;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A before_tool_call program's answer as a decision.
fn decision(out: &str) -> Result<ToolCallDecision<Value>, String> {
    if out.trim().is_empty() {
        return Ok(ToolCallDecision::Allow);
    }
    let answer: Value = serde_json::from_str(out)
        .map_err(|e| format!("its answer is not JSON ({e}): {}", clip(out)))?;
    let field = |key: &str| answer.get(key).cloned();
    let reason = || field("reason").and_then(|r| r.as_str().map(str::to_owned));
    match answer.get("decision").and_then(Value::as_str) {
        Some("allow") => Ok(ToolCallDecision::Allow),
        Some("block") => Ok(ToolCallDecision::Block(reason())),
        Some("modify") => field("input")
            .map(ToolCallDecision::Modify)
            .ok_or_else(|| "a `modify` answer needs `input`".to_owned()),
        Some("substitute") => field("output")
            .map(ToolCallDecision::Substitute)
            .ok_or_else(|| "a `substitute` answer needs `output`".to_owned()),
        Some("ask") => Ok(ToolCallDecision::Ask(reason())),
        Some("defer") => Ok(ToolCallDecision::Defer(reason())),
        _ => Err(format!(
            "its answer has no `decision` of allow, block, modify, substitute, ask or defer: {}",
            clip(out)
        )),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// What the runner reads from a pipe that carried `bytes`.
    fn read(bytes: &[u8]) -> String {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(drain(Some(bytes)))
    }

    /// Any JSON value, a few levels deep.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "\\PC{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(("[a-z]{0,4}", inner), 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// What a program may print: any bytes, or JSON answers with a stray byte or a cut.
    fn any_output() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..256),
            (any_json(), any::<u8>(), any::<prop::sample::Index>()).prop_map(
                |(value, byte, at)| {
                    let answer = json!({"decision": value.clone(), "input": value});
                    let mut bytes = answer.to_string().into_bytes();
                    bytes.insert(at.index(bytes.len() + 1), byte);
                    bytes
                }
            ),
            (
                prop::sample::select(vec!["allow", "block", "modify", "ask"]),
                any::<prop::sample::Index>()
            )
                .prop_map(|(decision, at)| {
                    let mut bytes = json!({"decision": decision}).to_string().into_bytes();
                    bytes.truncate(at.index(bytes.len() + 1));
                    bytes
                }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Whatever a before_tool_call program prints, its answer reads without a panic, and
        /// it allows the call only when it printed nothing or said `allow`.
        #[test]
        fn any_output_reads_and_allows_only_when_it_says_so(output in any_output()) {
            let text = read(&output);
            if let Ok(ToolCallDecision::Allow) = decision(&text) {
                let said = serde_json::from_str::<Value>(&text)
                    .is_ok_and(|answer| answer["decision"] == "allow");
                prop_assert!(text.trim().is_empty() || said, "{text:?}");
            }
        }

        /// Every decision a program may print reads as itself, whatever its reason and
        /// payload, even with a byte in its reason that is not UTF-8 (a Latin-1 `§`).
        #[test]
        fn every_decision_reads_as_itself(
            kind in 0..6usize,
            before in "[^§]{0,12}",
            after in "[^§]{0,12}",
            latin1 in any::<bool>(),
            payload in any_json(),
        ) {
            let names = ["allow", "block", "modify", "substitute", "ask", "defer"];
            let reason = format!("{before}§{after}");
            let answer = json!({
                "decision": names[kind],
                "reason": reason,
                "input": payload,
                "output": payload,
            });
            let mut bytes = answer.to_string().into_bytes();
            let mut expected = reason.clone();
            if latin1 {
                let text = answer.to_string();
                // The reason's `§`, not one the payload may hold: only the reason's key reads
                // `"reason":"` (a string's quotes are escaped, and payload keys are shorter).
                let key = text.find("\"reason\":\"").unwrap();
                let at = key + text[key..].find('§').unwrap();
                bytes.splice(at..at + '§'.len_utf8(), [0xa7]);
                expected = format!("{before}\u{fffd}{after}");
            }
            let read = decision(&read(&bytes));
            let expected = Some(expected);
            match (kind, read) {
                (0, Ok(ToolCallDecision::Allow)) => {}
                (1, Ok(ToolCallDecision::Block(reason))) => prop_assert_eq!(reason, expected),
                (2, Ok(ToolCallDecision::Modify(input))) => prop_assert_eq!(input, payload),
                (3, Ok(ToolCallDecision::Substitute(output))) => {
                    prop_assert_eq!(output, payload)
                }
                (4, Ok(ToolCallDecision::Ask(reason))) => prop_assert_eq!(reason, expected),
                (5, Ok(ToolCallDecision::Defer(reason))) => prop_assert_eq!(reason, expected),
                (kind, read) => prop_assert!(false, "{}: {read:?}", names[kind]),
            }
        }
    }
}
