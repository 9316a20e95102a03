//! The examples as a user runs them: the offline ones complete with exit code 0, and every
//! example answers `--help` (and `-h`) with its usage on stdout and exit code 0, and an unknown
//! option with its usage on stderr and exit code 2. `cargo test` builds the examples first.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The built example `name` (beside this test binary's `deps` folder).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let debug = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    debug.join("examples").join(name)
}

fn run(name: &str, args: &[&str]) -> Output {
    Command::new(example(name))
        .args(args)
        // Keys in the environment must not send an example online.
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap_or_else(|error| panic!("cannot run example {name}: {error}"))
}

const EXAMPLES: &[&str] = &[
    "quickstart",
    "file_guard",
    "chat",
    "chat_cli",
    "triage",
    "mcp_files",
    "approval",
];

#[test]
fn every_example_answers_help_with_its_usage() {
    for name in EXAMPLES {
        for flag in ["--help", "-h"] {
            let output = run(name, &[flag]);
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(output.status.success(), "{name} {flag}: {output:?}");
            assert!(
                stdout.starts_with(&format!("usage: {name}")),
                "{name} {flag}: {stdout}"
            );
        }
    }
}

#[test]
fn an_unknown_option_is_an_error_with_the_usage() {
    for name in EXAMPLES {
        let output = run(name, &["--frobnicate"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {output:?}");
        assert!(stderr.contains("--frobnicate"), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("usage: {name}")),
            "{name}: {stderr}"
        );
    }
}

#[test]
fn the_offline_examples_complete_and_print_outcomes_in_snake_case() {
    let quickstart = run("quickstart", &[]);
    let stdout = String::from_utf8_lossy(&quickstart.stdout);
    assert!(quickstart.status.success(), "{quickstart:?}");
    assert!(stdout.contains("on_step_finish(0) tool_calls"), "{stdout}");
    assert!(stdout.contains("on_chat_response  completed"), "{stdout}");
    assert!(stdout.contains("\nstatus: completed, 2 steps"), "{stdout}");
    assert!(!stdout.contains("Some("), "{stdout}");

    let guard = run("file_guard", &[]);
    assert!(guard.status.success(), "{guard:?}");

    let triage = run("triage", &[]);
    let stdout = String::from_utf8_lossy(&triage.stdout);
    assert!(triage.status.success(), "{triage:?}");
    assert!(stdout.contains("handoff triage -> billing"), "{stdout}");
    assert!(stdout.contains("┌ triage > billing > ledger"), "{stdout}");
    assert!(
        stdout.contains("status: completed, answered by billing, 4 steps,"),
        "{stdout}"
    );
}

#[test]
fn approval_suspends_in_one_process_and_resumes_in_another() {
    let db = std::env::temp_dir().join(format!("approval-example-{}.db", std::process::id()));
    let db = db.to_str().expect("a UTF-8 temp path").to_owned();
    let stdout = |output: &Output| String::from_utf8_lossy(&output.stdout).into_owned();

    let asked = run("approval", &["--db", &db, "Delete old.log"]);
    assert!(asked.status.success(), "{asked:?}");
    assert_eq!(
        stdout(&asked),
        "pending call_1_delete delete_file {\"path\":\"old.log\"}\n"
    );
    let refused = run("approval", &["--db", &db, "Something else"]);
    assert!(!refused.status.success(), "{refused:?}");
    let approved = run("approval", &["--db", &db, "--approve", "call_1_delete"]);
    assert!(approved.status.success(), "{approved:?}");
    assert_eq!(
        stdout(&approved),
        "Done: deleted old.log; the disk is 93% full.\n"
    );

    let asked = run("approval", &["--db", &db, "Delete new.log"]);
    assert!(
        stdout(&asked).starts_with("pending call_2_delete "),
        "{asked:?}"
    );
    let denied = run(
        "approval",
        &[
            "--db",
            &db,
            "--deny",
            "call_2_delete",
            "--reason",
            "keep it",
        ],
    );
    assert!(denied.status.success(), "{denied:?}");
    assert_eq!(
        stdout(&denied),
        "Done: tool `delete_file` was denied: keep it; the disk is 93% full.\n"
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{db}{suffix}"));
    }
}

/// A one-shot OpenAI-compatible server on loopback: each connection gets the next body as a
/// close-delimited event stream.
fn serve(bodies: Vec<String>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for body in bodies {
            let Ok((mut socket, _)) = listener.accept() else {
                return;
            };
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            // Read the head, then as much body as content-length says.
            while let Ok(n) = socket.read(&mut buffer) {
                request.extend_from_slice(&buffer[..n]);
                let text = String::from_utf8_lossy(&request).to_lowercase();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let _ = socket.write_all(head.as_bytes());
            let _ = socket.write_all(body.as_bytes());
        }
    });
    url
}

fn text_chunk(text: &str) -> String {
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    )
}

#[test]
fn chat_cli_names_each_tool_it_calls_as_the_call_starts() {
    let call = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",",
        "\"function\":{\"name\":\"current_time\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,",
        "\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let answer = text_chunk("It is late.")
        + "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let url = serve(vec![call.to_owned(), answer]);
    let answer = chat_cli_answer(&url, "Time?");
    assert_eq!(answer, "[calling current_time…]\nIt is late.\n");
}

/// What `chat_cli` printed before its hook timeline, asked `prompt` of the OpenAI server at
/// `url` (it must succeed).
fn chat_cli_answer(url: &str, prompt: &str) -> String {
    let output = Command::new(example("chat_cli"))
        .args(["--provider", "openai", "--model", "gpt-test", prompt])
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", url)
        .output()
        .expect("run chat_cli");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let answer = stdout.split("\nhook timeline:").next().unwrap_or_default();
    answer.to_owned()
}

#[test]
fn chat_cli_shows_each_attempt_of_a_retried_stream_once_and_marks_the_discarded_one() {
    let cut = text_chunk("Reading it.");
    let whole = text_chunk("Reading it.")
        + &text_chunk(" Done.")
        + "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let url = serve(vec![cut, whole]);
    let answer = chat_cli_answer(&url, "Read it");
    assert!(
        answer.starts_with("Reading it.\n[discarded: the stream broke ("),
        "{answer}"
    );
    assert!(
        answer.contains("); retrying]\nReading it. Done.\n"),
        "{answer}"
    );
    assert_eq!(answer.matches("Reading it.").count(), 2, "{answer}");
}
