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

const EXAMPLES: &[&str] = &["quickstart", "file_guard", "chat", "chat_cli"];

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
}
